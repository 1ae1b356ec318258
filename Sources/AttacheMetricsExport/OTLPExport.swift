package import CoreMetrics
import Attache
import AttacheCore
import FoundationEssentials
import Logging
import OTel
import ServiceLifecycle

/// The OTLP/HTTP exporters of one run: Attache's own tracer for spans (``OTLPTracer``, its
/// ``BatchSpanProcessor`` and protobuf encoder, sent through Attache's transport) and swift-otel's metrics
/// factory, neither bootstrapped yet, with the background work that batches and sends what they record.
///
/// The metrics backend is made before anything is bootstrapped, so that its HTTP client (AsyncHTTPClient,
/// which traces its requests with the tracer bootstrapped when it is made) never records spans of the
/// exports themselves. Span exports go through the plain transport, which makes no spans at all.
package final class OTLPExport: Sendable {
    /// The tracer to bootstrap, or nil when `OTEL_TRACES_EXPORTER=none`.
    package let tracer: OTLPTracer?
    /// The metrics factory to bootstrap (alone, or beside Prometheus's), or nil when
    /// `OTEL_METRICS_EXPORTER=none`.
    package let metricsFactory: (any MetricsFactory)?
    private let group: ServiceGroup
    private let running: Task<Void, Never>

    /// Makes the exporters from the environment (after `options` has put its endpoint there) and starts
    /// their background work.
    package convenience init(options: OTLPOptions, serviceName: String) throws {
        try self.init(endpoint: options.otlpEndpoint, serviceName: serviceName)
    }

    /// Makes the exporters for `endpoint` (nil: the one the environment names) and starts their
    /// background work.
    init(endpoint: String?, serviceName: String) throws {
        OTLPOptions.applyToEnvironment(endpoint: endpoint)
        let environment = ProcessInfo.processInfo.environment
        let traces = OTLPTraceConfiguration(environment: environment, serviceName: serviceName)
        if environment["OTEL_TRACES_EXPORTER"]?.lowercased() == "none" {
            tracer = nil
        } else {
            // A transport of its own (its own curl loop thread and connection): an export of thousands of
            // spans, or a collector that is slow to read one, never holds up the loop that moves the
            // files and requests themselves.
            let exporter = OTLPHTTPSpanExporter(
                settings: traces.exporter,
                encoder: OTLPTraceEncoder(resource: traces.resource, scopeName: "attache", scopeVersion: AttacheLibrary.version),
                transport: CurlTransport())
            let processor = BatchSpanProcessor(settings: traces.batching, exporter: exporter, warn: writeWarningLine)
            tracer = OTLPTracer(sampler: traces.sampler, processor: processor, propagates: traces.propagates)
        }

        var configuration = OTel.Configuration.default
        // The spans' service.name (OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES', else ours), so that
        // both signals name the same service.
        configuration.serviceName = traces.resource[0].1
        configuration.metrics.otlpExporter.protocol = .httpProtobuf
        configuration.metrics.defaultDurationHistogramBuckets = PrometheusExportFactory.durationBuckets
        configuration.logs.enabled = false
        // Its info lines would add noise to every command's stderr; failures to export are warnings.
        configuration.diagnosticLogLevel = .warning
        var services: [any Service] = []
        if environment["OTEL_METRICS_EXPORTER"]?.lowercased() == "none" {
            metricsFactory = nil
        } else {
            let backend = try OTel.makeMetricsBackend(configuration: configuration)
            metricsFactory = backend.factory
            services.append(NamedService(name: "otlp-metrics-export", base: backend.service))
        }
        var logger = Logger(label: "attache.otlp") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .warning
        let group = ServiceGroup(services: services, logger: logger)
        self.group = group
        running = Task {
            do { try await group.run() } catch { logger.warning("OTLP export stopped: \(type(of: error))") }
        }
    }

    /// How the flush at the end of a run went.
    package struct FlushOutcome: Sendable, Equatable {
        /// The span processor's shutdown; nil when spans are not exported.
        package var spans: BatchSpanProcessor.Outcome?
        /// Whether the metrics exporter sent its last reading within the limit (true when metrics are
        /// not exported).
        package var metricsInTime: Bool

        /// Creates an outcome.
        package init(spans: BatchSpanProcessor.Outcome?, metricsInTime: Bool) {
            self.spans = spans
            self.metricsInTime = metricsInTime
        }

        /// The one warning line to print, or nil when the collector took everything: what it did not
        /// take within `seconds` (`--otlp-flush-timeout`), and how many spans of the run never reached it.
        package func warning(seconds: String) -> String? {
            var late: [String] = []
            if let spans, !spans.finishedInTime || spans.tally.lastExportFailed { late.append("spans") }
            if !metricsInTime { late.append("metrics") }
            var line = ""
            if !late.isEmpty {
                line = "attache: the OTLP collector did not take the last \(late.joined(separator: " and ")) within "
                    + "\(seconds) s; what it had not taken is dropped (--otlp-flush-timeout, OTEL_BSP_EXPORT_TIMEOUT)"
            }
            if let tally = spans?.tally, tally.lost > 0 {
                var parts: [String] = []
                if tally.dropped > 0 { parts.append("\(tally.dropped) dropped with the queue full") }
                if tally.failed > 0 { parts.append("\(tally.failed) in exports that failed") }
                if tally.abandoned > 0 { parts.append("\(tally.abandoned) still held at the end") }
                let count = "\(tally.lost) span\(tally.lost == 1 ? "" : "s") of this run never reached the collector ("
                    + parts.joined(separator: ", ") + "; \(tally.exported) exported)"
                line += line.isEmpty ? "attache: " + count : "; " + count
            }
            return line.isEmpty ? nil : line
        }
    }

    /// Sends what is still batched (spans ended so far, a last reading of every metric) and stops, for at
    /// most `limit`. What the collector has not taken then is dropped: the caller returns and the process
    /// exits with an export perhaps still under way. swift-otel retries a metrics export to a collector
    /// that is down for longer than any command should wait at its end; a span export is never retried.
    package func shutdown(within limit: Duration) async -> FlushOutcome {
        await group.triggerGracefulShutdown()
        let processor = tracer?.processor
        let spans = Task { await processor?.shutdown(within: limit) }
        let metricsInTime = await waitForTask(running, within: limit)
        return FlushOutcome(spans: await spans.value, metricsInTime: metricsInTime)
    }

    /// ``shutdown(within:)``, then the outcome's warning line (nil when the collector took everything).
    func shutdownWarning(within limit: Duration) async -> String? {
        let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
        let text = seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
        return await shutdown(within: limit).warning(seconds: text)
    }
}

/// A service under a name of its own. ServiceLifecycle names each service it runs by interpolating it
/// (`"\(service)"`); swift-otel's metrics service is a struct with no description, which the standard
/// library prints by reflection, a walk of its fields that cost about 5 M instructions of run-time
/// protocol-conformance lookups at every start (callgrind), on a process that may only upload one file.
private struct NamedService: Service, CustomStringConvertible {
    let name: String
    let base: any Service

    var description: String { name }

    func run() async throws { try await base.run() }
}
