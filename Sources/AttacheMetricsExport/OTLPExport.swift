package import CoreMetrics
import FoundationEssentials
import Logging
import OTel
import ServiceLifecycle
package import Tracing

/// The OTLP/HTTP exporters of one run (swift-otel): a tracer and a metrics factory, not yet bootstrapped,
/// and the background work that batches and sends what they record.
///
/// Both backends are made before anything is bootstrapped, so that the exporters' own HTTP client
/// (AsyncHTTPClient, which traces its requests with the tracer bootstrapped when it is made) never records
/// spans of the exports themselves.
package final class OTLPExport: Sendable {
    /// The tracer to bootstrap, or nil when `OTEL_TRACES_EXPORTER=none`.
    package let tracer: (any Tracer)?
    /// The metrics factory to bootstrap (alone, or beside Prometheus's), or nil when
    /// `OTEL_METRICS_EXPORTER=none`.
    package let metricsFactory: (any MetricsFactory)?
    private let group: ServiceGroup
    private let running: Task<Void, Never>

    /// Makes the backends from the environment (after `options` has put its endpoint there) and starts
    /// their background work.
    package init(options: OTLPOptions, serviceName: String) throws {
        options.applyToEnvironment()
        let environment = ProcessInfo.processInfo.environment
        var configuration = OTel.Configuration.default
        // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES still win.
        configuration.serviceName = serviceName
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.metrics.otlpExporter.protocol = .httpProtobuf
        configuration.metrics.defaultDurationHistogramBuckets = PrometheusExportFactory.durationBuckets
        configuration.logs.enabled = false
        // Its info lines would add noise to every command's stderr; failures to export are warnings.
        configuration.diagnosticLogLevel = .warning

        var services: [any Service] = []
        if environment["OTEL_TRACES_EXPORTER"]?.lowercased() == "none" {
            tracer = nil
        } else {
            let backend = try OTel.makeTracingBackend(configuration: configuration)
            tracer = backend.factory
            services.append(backend.service)
        }
        if environment["OTEL_METRICS_EXPORTER"]?.lowercased() == "none" {
            metricsFactory = nil
        } else {
            let backend = try OTel.makeMetricsBackend(configuration: configuration)
            metricsFactory = backend.factory
            services.append(backend.service)
        }
        var logger = Logger(label: "attache.otlp") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .warning
        let group = ServiceGroup(services: services, logger: logger)
        self.group = group
        running = Task {
            do { try await group.run() } catch { logger.warning("OTLP export stopped: \(type(of: error))") }
        }
    }

    /// Sends what is still batched (spans ended so far, a last reading of every metric) and stops.
    /// Waits for the collector's answers, up to the exporters' timeouts (`OTEL_EXPORTER_OTLP_TIMEOUT`).
    package func shutdown() async {
        await group.triggerGracefulShutdown()
        await running.value
    }
}
