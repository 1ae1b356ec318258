import FoundationEssentials
import Prometheus

/// Telemetry for a program that embeds Attache, exported as the `attache` executable exports it for
/// `--metrics-listen` and `--otlp-endpoint`: the library's metrics in a Prometheus registry served on
/// `/metrics`, and its spans and metrics sent over OTLP/HTTP (protobuf) to a collector, through Attache's
/// own tracer and batch processor.
///
/// swift-metrics and swift-distributed-tracing take one bootstrap per process, so a process makes one
/// export, before it makes its pipeline or client, and shuts it down last:
///
/// ```swift
/// import AttacheMetricsExport
///
/// let telemetry = try TelemetryExport.bootstrap(
///     serviceName: "chat-backend", otlpEndpoint: "http://127.0.0.1:4318", metricsListen: "127.0.0.1:9464")
/// // … make the AttachmentPipeline, send …
/// if let warning = await telemetry.shutdown() { print(warning) }
/// ```
///
/// The standard `OTEL_*` variables apply as they do for the executable (`docs/OBSERVABILITY.md`): the
/// sampler, the propagators, headers, compression, the batch processor's limits, `OTEL_SDK_DISABLED`.
public final class TelemetryExport: Sendable {
    private let export: OTLPExport?
    private let endpoint: MetricsEndpoint?

    /// The port `/metrics` is served on (the kernel's choice when `metricsListen` asked for port 0), or
    /// nil when nothing is served.
    public var metricsPort: Int? { endpoint?.port }

    /// Whether spans and metrics are sent to a collector.
    public var exportsOTLP: Bool { export != nil }

    private init(export: OTLPExport?, endpoint: MetricsEndpoint?) {
        self.export = export
        self.endpoint = endpoint
    }

    /// Starts the exports and bootstraps swift-metrics and swift-distributed-tracing with them.
    ///
    /// - Parameters:
    ///   - serviceName: OTLP's `service.name` (`OTEL_SERVICE_NAME` wins).
    ///   - otlpEndpoint: the collector's base URL (`/v1/traces` and `/v1/metrics` are appended); nil to
    ///     use the one `OTEL_EXPORTER_OTLP_ENDPOINT` (or its per-signal forms) names, and no OTLP export
    ///     when none does.
    ///   - metricsListen: `HOST:PORT` to serve `/metrics` on (port 0: any free port), or nil.
    /// - Returns: the running export; ``shutdown(within:)`` sends what it still holds.
    /// - Throws: ``TelemetryExportError`` when this process bootstrapped already, an argument is not
    ///   usable, an `OTEL_*` setting cannot be honoured, or the address cannot be listened on. Nothing is
    ///   bootstrapped then, and a corrected call may try again.
    public static func bootstrap(
        serviceName: String = "attache", otlpEndpoint: String? = nil, metricsListen: String? = nil
    ) throws(TelemetryExportError) -> TelemetryExport {
        if let otlpEndpoint, !OTLPOptions.isHTTPURL(otlpEndpoint) { throw .unusableEndpoint }
        var listen: (host: String, port: Int)?
        if let metricsListen {
            guard let split = MetricsEndpoint.split(metricsListen) else { throw .unusableListenAddress(metricsListen) }
            listen = split
        }
        let environment = ProcessInfo.processInfo.environment
        let otlp = OTLPOptions.isEnabled(endpoint: otlpEndpoint, environment: environment)
        if otlp, let refusal = OTLPEnvironment.unsupportedSetting(in: environment) {
            throw .cannotStart(refusal)
        }
        guard ObservedRun.claimBootstrap() else { throw .alreadyBootstrapped }

        var prometheus: PrometheusExportFactory?
        var endpoint: MetricsEndpoint?
        if let listen {
            let registry = PrometheusCollectorRegistry()
            do {
                endpoint = try MetricsEndpoint(registry: registry, host: listen.host, port: listen.port, linger: .zero)
            } catch {
                ObservedRun.releaseClaim()
                throw .cannotStart("\(error)")
            }
            prometheus = PrometheusExportFactory(registry: registry)
        }
        var export: OTLPExport?
        if otlp {
            do {
                export = try OTLPExport(endpoint: otlpEndpoint, serviceName: serviceName)
            } catch {
                if let endpoint { Task { await endpoint.finish() } }
                ObservedRun.releaseClaim()
                throw .cannotStart("\(error)")
            }
        }
        ObservedRun.install([prometheus, export?.metricsFactory].compactMap { $0 }, tracer: export?.tracer)
        return TelemetryExport(export: export, endpoint: endpoint)
    }

    /// Sends what the OTLP exporters still hold (the spans ended so far, a last reading of every metric)
    /// for at most `limit`, drops what the collector has not taken by then, and stops serving `/metrics`.
    ///
    /// The metrics and tracing systems stay bootstrapped: what is recorded afterwards goes nowhere.
    ///
    /// - Parameter limit: the longest the flush may take; a collector that is down or never answers
    ///   costs no more than this.
    /// - Returns: one warning line when something was not delivered (what, and how many spans of the
    ///   run never reached the collector), or nil.
    public func shutdown(within limit: Duration = .seconds(5)) async -> String? {
        let warning = await export?.shutdownWarning(within: limit)
        await endpoint?.finish()
        return warning
    }
}

/// Why ``TelemetryExport/bootstrap(serviceName:otlpEndpoint:metricsListen:)`` did not start.
public enum TelemetryExportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// This process made an export (or the `attache` command it runs did) already: swift-metrics and
    /// swift-distributed-tracing take one bootstrap per process.
    case alreadyBootstrapped
    /// The OTLP endpoint is not an `http://` or `https://` URL with a host (not repeated here: it may
    /// carry a token).
    case unusableEndpoint
    /// The listen address is not `HOST:PORT`.
    case unusableListenAddress(String)
    /// An `OTEL_*` setting cannot be honoured, or the exporter or listener could not be made; the reason.
    case cannotStart(String)

    /// One line that says what went wrong.
    public var description: String {
        switch self {
        case .alreadyBootstrapped: "telemetry was bootstrapped already in this process (once per process)"
        case .unusableEndpoint: "the OTLP endpoint must be an http:// or https:// URL with a host"
        case .unusableListenAddress(let text): "the metrics listen address '\(text)' is not HOST:PORT"
        case .cannotStart(let reason): "telemetry export cannot start: \(reason)"
        }
    }
}
