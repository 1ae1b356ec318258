// Telemetry export for the request driver, as the `attache` executable bootstraps it for
// `--metrics-listen` and `--otlp-endpoint` (Sources/AttacheMetricsExport, not a product the driver can
// use): a Prometheus registry (nothing scrapes it here: its cost is the recording) and swift-otel's
// OTLP/HTTP metrics under one MultiplexMetricsHandler, and swift-otel's tracer, with the span batching
// the executable uses.
import CoreMetrics
import Logging
import OTel
import Prometheus
import ServiceLifecycle
import Tracing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

final class BenchExport: Sendable {
    private let group: ServiceGroup
    private let running: Task<Void, Never>

    private init(group: ServiceGroup) {
        self.group = group
        running = Task { try? await group.run() }
    }

    /// Bootstraps the backends when ATTACHE_BENCH_EXPORT names a collector; nil (nothing bootstrapped)
    /// otherwise.
    static func start() throws -> BenchExport? {
        guard let collector = getenv("ATTACHE_BENCH_EXPORT").map({ String(cString: $0) }), !collector.isEmpty
        else { return nil }
        setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector, 1)
        var configuration = OTel.Configuration.default
        configuration.serviceName = "attache-request-bench"
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.metrics.otlpExporter.protocol = .httpProtobuf
        configuration.logs.enabled = false
        configuration.diagnosticLogLevel = .warning
        configuration.traces.batchSpanProcessor.maxQueueSize = 16_384
        configuration.traces.batchSpanProcessor.maxExportBatchSize = 4_096
        configuration.traces.batchSpanProcessor.scheduleDelay = .seconds(1)
        let tracing = try OTel.makeTracingBackend(configuration: configuration)
        let metrics = try OTel.makeMetricsBackend(configuration: configuration)
        var prometheus = PrometheusMetricsFactory(registry: PrometheusCollectorRegistry())
        prometheus.defaultDurationHistogramBuckets = [
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(75),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .milliseconds(750), .seconds(1),
            .milliseconds(2500), .seconds(5), .milliseconds(7500), .seconds(10),
        ]
        MetricsSystem.bootstrap(MultiplexMetricsHandler(factories: [prometheus, metrics.factory]))
        InstrumentationSystem.bootstrap(tracing.factory)
        var logger = Logger(label: "attache-request-bench.otlp")
        logger.logLevel = .warning
        return BenchExport(
            group: ServiceGroup(services: [tracing.service, metrics.service], logger: logger))
    }

    /// Sends what the exporters still hold and stops them.
    func shutdown() async {
        await group.triggerGracefulShutdown()
        await running.value
    }
}
