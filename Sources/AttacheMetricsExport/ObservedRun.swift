import ArgumentParser
import AttacheCore
import CoreMetrics
import FoundationEssentials
import Glibc
import Tracing

extension MetricsOptions {
    /// Runs `body` with the exports these options ask for: `/metrics` served (`--metrics-listen`), spans
    /// and metrics sent over OTLP (`--otlp-endpoint` or `OTEL_EXPORTER_OTLP_ENDPOINT`), or both, the two
    /// metrics backends side by side under one `MultiplexMetricsHandler`.
    ///
    /// At the end, whether `body` returned or threw, the OTLP exporters send what they still hold (for at
    /// most ``OTLPOptions/flushLimit(environment:)``; what is left then is dropped with one warning, which
    /// also counts the spans of the run that never reached the collector), then
    /// `/metrics` keeps serving for `--metrics-linger`. With OTLP on, each signal of `stopSignals` (the
    /// ones the command does not handle itself) cancels `body` instead of killing the process, so that
    /// the flush happens then too; the run then ends with status 128 + the signal.
    ///
    /// - Parameters:
    ///   - serviceName: OTLP's `service.name` (`OTEL_SERVICE_NAME` wins).
    ///   - stopSignals: signals to turn into a cancellation of `body` while exporting.
    /// - Throws: `ValidationError` (exit 64) when the address cannot be listened on or the exporters cannot
    ///   be made, before `body` starts; then whatever `body` throws, or the signal's `ExitCode`.
    package func serving(
        serviceName: String = "attache", stopSignals: [Int32] = [], _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        try await ObservedRun.run(
            prometheus: try start(), otlp: otlp, serviceName: serviceName, stopSignals: stopSignals, body)
    }
}

extension OTLPOptions {
    /// ``MetricsOptions/serving(serviceName:stopSignals:_:)`` for a command with OTLP export only (`upload`).
    package func exporting(
        serviceName: String = "attache", stopSignals: [Int32] = [], _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        try await ObservedRun.run(prometheus: nil, otlp: self, serviceName: serviceName, stopSignals: stopSignals, body)
    }
}

/// Bootstraps the chosen backends once, runs the command's work, and flushes at its end.
enum ObservedRun {
    /// Whether a run of this process has bootstrapped a backend already. swift-metrics and
    /// swift-distributed-tracing take one bootstrap per process: a second command run in the same process
    /// (the command tests run many) exports nothing rather than stopping the process.
    private static let bootstrapped = LockedValue(false)

    /// True for the first caller in the process, which may bootstrap; false for every later one.
    static func claimBootstrap() -> Bool {
        bootstrapped.withLock { done in
            defer { done = true }
            return !done
        }
    }

    /// Gives the claim back when the caller bootstrapped nothing after all (its exporter could not be
    /// made), so that a later, corrected attempt may.
    static func releaseClaim() { bootstrapped.withLock { $0 = false } }

    /// Bootstraps swift-metrics with `factories` (one alone, more under one `MultiplexMetricsHandler`) and
    /// swift-distributed-tracing with `tracer`; nothing for an empty list or a nil tracer.
    static func install(_ factories: [any MetricsFactory], tracer: OTLPTracer?) {
        if factories.count == 1 {
            MetricsSystem.bootstrap(factories[0])
        } else if factories.count > 1 {
            MetricsSystem.bootstrap(MultiplexMetricsHandler(factories: factories))
        }
        if let tracer { InstrumentationSystem.bootstrap(tracer) }
    }

    static func run(
        prometheus: (factory: PrometheusExportFactory, endpoint: MetricsEndpoint)?, otlp: OTLPOptions,
        serviceName: String, stopSignals: [Int32], _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        let wantsExport = prometheus != nil || otlp.isEnabled()
        let first = wantsExport && claimBootstrap()
        let export: OTLPExport?
        if otlp.isEnabled(), let refusal = OTLPEnvironment.unsupportedSetting(in: ProcessInfo.processInfo.environment) {
            await prometheus?.endpoint.finish()
            throw ValidationError("OTLP export cannot start: \(refusal)")
        }
        do {
            export = first && otlp.isEnabled() ? try OTLPExport(options: otlp, serviceName: serviceName) : nil
        } catch {
            await prometheus?.endpoint.finish()
            throw ValidationError("OTLP export cannot start: \(error)")
        }
        install(first ? [prometheus?.factory, export?.metricsFactory].compactMap { $0 } : [], tracer: export?.tracer)

        guard let export else {
            do { try await body() } catch {
                await prometheus?.endpoint.finish()
                throw error
            }
            await prometheus?.endpoint.finish()
            return
        }
        // The signals are watched before the work starts: a signal that came between the two would have
        // had its default action and ended the process without the flush. One that comes before the work
        // is known cancels it as soon as it is.
        let stopping = LockedValue<(requested: Bool, work: Task<Void, any Error>?)>((false, nil))
        let signals = SignalWatch(
            stopSignals,
            first: { _ in
                stopping.withLock { stopping -> Task<Void, any Error>? in
                    stopping.requested = true
                    return stopping.work
                }?.cancel()
            },
            again: { _exit(128 + $0) })
        let work = Task { try await body() }
        if stopping.withLock({ stopping -> Bool in
            stopping.work = work
            return stopping.requested
        }) {
            work.cancel()
        }
        let result = await work.result
        signals.stop()
        if let warning = await export.shutdownWarning(within: otlp.flushLimit()) { writeWarningLine(warning) }
        await prometheus?.endpoint.finish()
        if let signal = signals.received { throw ExitCode(128 + signal) }
        try result.get()
    }
}

/// One line on standard error, written at once (no buffer another thread could interleave with).
func writeWarningLine(_ line: String) {
    var text = line + "\n"
    _ = text.withUTF8 { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}
