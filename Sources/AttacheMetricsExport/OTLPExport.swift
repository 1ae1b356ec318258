package import CoreMetrics
import AttacheCore
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
        // Span batching sized for a batch of small files (docs/OBSERVABILITY.md, "Span batching");
        // OTEL_BSP_* still win: swift-otel applies the environment over these.
        configuration.traces.batchSpanProcessor = Self.spanBatching(configuration.traces.batchSpanProcessor)
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

    /// Attache's defaults for the batch span processor, where swift-otel's (the specification's: 2,048 spans
    /// held, 512 sent every 5 s) drop spans of a batch of small files. A file makes six spans or more, so
    /// a batch at 300 files/s ends 1,800 spans a second or more: the processor must send more than that,
    /// and hold a batch of a thousand files whole while a slow collector answers.
    /// - `maxQueueSize` 16,384 spans: 2,700 files' spans with nothing sent yet, some 16 MiB held at most
    ///   (about 1 KiB a span in memory); above that spans are still dropped, never memory grown without
    ///   bound.
    /// - `maxExportBatchSize` 4,096 spans per request (about 0.55 MB of protobuf, well under collectors'
    ///   4 MiB limit on a request): a full queue empties in four exports.
    /// - `scheduleDelay` 1 s: 4,096 spans a second sent at least, and at most a second of spans lost to a
    ///   SIGKILL. A full queue sends at once, without waiting for the delay.
    static func spanBatching(
        _ defaults: OTel.Configuration.TracesConfiguration.BatchSpanProcessorConfiguration
    ) -> OTel.Configuration.TracesConfiguration.BatchSpanProcessorConfiguration {
        var batching = defaults
        batching.maxQueueSize = 16_384
        batching.maxExportBatchSize = 4_096
        batching.scheduleDelay = .seconds(1)
        return batching
    }

    /// Sends what is still batched (spans ended so far, a last reading of every metric) and stops, for at
    /// most `limit`: true when everything was handed over in time, false when the collector had not taken
    /// it (down, stalled, or slower than the limit). The exporters retry a collector that is down for
    /// longer than any command should wait at its end, so what is left then is dropped: the caller
    /// returns and the process exits with the export still running.
    package func shutdown(within limit: Duration) async -> Bool {
        await group.triggerGracefulShutdown()
        let running = running
        let answered = LockedValue(false)
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            @Sendable func answer(_ value: Bool) {
                let first = answered.withLock { done in
                    defer { done = true }
                    return !done
                }
                if first { continuation.resume(returning: value) }
            }
            Task {
                await running.value
                answer(true)
            }
            Task {
                try? await Task.sleep(for: limit)
                answer(false)
            }
        }
    }
}
