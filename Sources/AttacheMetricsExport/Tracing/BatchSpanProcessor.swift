import AttacheCore

/// Sends batches of ended spans somewhere: the OTLP/HTTP exporter, or a test's recorder.
package protocol SpanExporter: Sendable {
    /// Sends `spans`, once. Bounded in time by the exporter itself (its request's deadline).
    /// - Throws: ``SpanExportFailure`` (or any error) when the spans did not reach the collector.
    func export(_ spans: [FinishedSpan]) async throws
}

/// Why an export failed, said in a few words that hold no URL, header or other secret.
package struct SpanExportFailure: Error, CustomStringConvertible {
    /// `connection-failed`, `timed-out`, `HTTP 503`…
    package let description: String

    /// Creates a failure.
    package init(_ description: String) { self.description = description }
}

/// OpenTelemetry's batch span processor: ended spans wait in a bounded queue and go to the exporter in
/// batches, from one background task, every ``Settings/scheduleDelay`` or as soon as a batch is full.
///
/// Ending a span takes the lock for one append; nothing else happens on the span's thread. A span that
/// finds the queue full is dropped and counted, never waited for: memory stays bounded whatever the
/// collector does. A failed export is one warning line (the first of a run of failures) and its spans are
/// counted as lost, never sent again: a collector that is down gets one request per batch, not a storm.
///
/// ```swift
/// let processor = BatchSpanProcessor(settings: .init(), exporter: exporter, warn: { print($0) })
/// // … spans end into it …
/// let outcome = await processor.shutdown(within: .seconds(5))
/// ```
package final class BatchSpanProcessor: Sendable {
    /// The queue and batch sizes, and how often a partial batch goes.
    package struct Settings: Sendable, Equatable {
        /// Spans held at most; the ones ended beyond are dropped.
        package var maximumQueueSize: Int
        /// Spans per export at most.
        package var maximumExportBatchSize: Int
        /// The longest a span waits before an export takes it.
        package var scheduleDelay: Duration

        /// Creates settings; the export batch is at most the queue, and the delay at least 10 ms (a
        /// smaller one would only wake the task for nothing).
        package init(maximumQueueSize: Int, maximumExportBatchSize: Int, scheduleDelay: Duration) {
            self.maximumQueueSize = max(1, maximumQueueSize)
            self.maximumExportBatchSize = max(1, min(maximumExportBatchSize, self.maximumQueueSize))
            self.scheduleDelay = max(scheduleDelay, .milliseconds(10))
        }
    }

    /// What became of the spans ended so far.
    package struct Tally: Sendable, Equatable {
        /// Spans the collector took.
        package var exported = 0
        /// Spans dropped because the queue was full (or that ended after the processor stopped).
        package var dropped = 0
        /// Spans in exports that failed.
        package var failed = 0
        /// Spans still held, queued or being sent, when a shutdown's time ran out.
        package var abandoned = 0
        /// Whether the last export failed.
        package var lastExportFailed = false

        /// Spans that never reached the collector.
        package var lost: Int { dropped + failed + abandoned }

        /// Creates an empty tally.
        package init() {}
    }

    /// How a shutdown ended.
    package struct Outcome: Sendable, Equatable {
        /// True when the processor sent (or failed to send) everything it held within the limit.
        package var finishedInTime: Bool
        /// What became of the spans.
        package var tally: Tally
    }

    private struct State {
        var queue: [FinishedSpan] = []
        var inFlight = 0
        var tally = Tally()
        /// The background task, when it waits for work.
        var waiter: CheckedContinuation<Void, Never>?
        /// `forceFlush` callers, resumed once the queue has been emptied after they asked.
        var flushWaiters: [CheckedContinuation<Void, Never>] = []
        var flushRequested = false
        var closing = false
        var finished = false
        /// A failure has been reported and no export has succeeded since.
        var failing = false
        var reportedFullQueue = false
    }

    private let settings: Settings
    private let exporter: any SpanExporter
    private let warn: @Sendable (String) -> Void
    private let state = LockedValue(State())
    private let worker = LockedValue<Task<Void, Never>?>(nil)

    /// Creates a processor and starts its background task.
    ///
    /// - Parameters:
    ///   - exporter: where batches go.
    ///   - warn: writes one warning line (the first failed export of a run of them, the first full queue).
    package init(settings: Settings, exporter: any SpanExporter, warn: @escaping @Sendable (String) -> Void) {
        self.settings = settings
        self.exporter = exporter
        self.warn = warn
        let task = Task.detached { await self.run() }
        worker.withLock { $0 = task }
    }

    /// Queues an ended span, or drops it (counted) when the queue is full or the processor has stopped.
    package func add(_ span: FinishedSpan) {
        let (waiter, firstDrop): (CheckedContinuation<Void, Never>?, Bool) = state.withLock { state in
            guard !state.finished, state.queue.count < settings.maximumQueueSize else {
                state.tally.dropped += 1
                defer { state.reportedFullQueue = true }
                return (nil, !state.finished && !state.reportedFullQueue)
            }
            state.queue.append(span)
            guard state.queue.count >= settings.maximumExportBatchSize, let waiter = state.waiter else { return (nil, false) }
            state.waiter = nil
            return (waiter, false)
        }
        waiter?.resume()
        if firstDrop {
            warn(
                "attache: the OTLP span queue is full (\(settings.maximumQueueSize) spans, OTEL_BSP_MAX_QUEUE_SIZE): "
                    + "spans are dropped until the collector takes more; the warning at the end counts them")
        }
    }

    /// Asks for an export of everything queued now, without waiting for it.
    package func requestFlush() {
        state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.flushRequested = true
            defer { state.waiter = nil }
            return state.waiter
        }?.resume()
    }

    /// Exports everything queued now and returns when it has been sent (or failed).
    package func forceFlush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (finished, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
                if state.finished { return (true, nil) }
                state.flushWaiters.append(continuation)
                state.flushRequested = true
                defer { state.waiter = nil }
                return (false, state.waiter)
            }
            if finished { continuation.resume() } else { waiter?.resume() }
        }
    }

    /// Exports what is queued and stops, waiting at most `limit`: spans still held then are abandoned
    /// (counted in the outcome), and the export under way, if any, is left to finish or fail on its own.
    package func shutdown(within limit: Duration) async -> Outcome {
        state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.closing = true
            defer { state.waiter = nil }
            return state.waiter
        }?.resume()
        if let task = worker.withLock({ $0 }) { _ = await waitForTask(task, within: limit) }
        return state.withLock { state in
            var tally = state.tally
            if !state.finished { tally.abandoned = state.queue.count + state.inFlight }
            return Outcome(finishedInTime: state.finished, tally: tally)
        }
    }

    /// The tally so far.
    package var tally: Tally { state.withLock { $0.tally } }

    // MARK: The background task

    private enum Step {
        case export([FinishedSpan])
        case idle(flushed: [CheckedContinuation<Void, Never>], finished: Bool)
    }

    private func run() async {
        while true {
            await waitForWork()
            while true {
                switch nextStep() {
                case .export(let batch):
                    await send(batch)
                    continue
                case .idle(let flushed, let finished):
                    for waiter in flushed { waiter.resume() }
                    if finished { return }
                }
                break
            }
        }
    }

    /// Returns when a batch is full, a flush or the shutdown asks, or ``Settings/scheduleDelay`` has passed.
    private func waitForWork() async {
        let delay = settings.scheduleDelay
        let timer = Task {
            do { try await Task.sleep(for: delay) } catch { return }
            self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }?.resume()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.queue.count >= settings.maximumExportBatchSize || state.flushRequested || state.closing {
                    return true
                }
                state.waiter = continuation
                return false
            }
            if ready { continuation.resume() }
        }
        timer.cancel()
    }

    /// The next batch to send; or, with the queue empty, the flushes that are now done and whether the
    /// processor has finished (it was shutting down).
    private func nextStep() -> Step {
        state.withLock { state in
            state.inFlight = 0
            guard state.queue.isEmpty else {
                let count = min(state.queue.count, settings.maximumExportBatchSize)
                let batch: [FinishedSpan]
                if count == state.queue.count {
                    batch = state.queue
                    state.queue = []
                } else {
                    batch = Array(state.queue[..<count])
                    state.queue.removeFirst(count)
                }
                state.inFlight = count
                return .export(batch)
            }
            let flushed = state.flushWaiters
            state.flushWaiters = []
            state.flushRequested = false
            if state.closing { state.finished = true }
            return .idle(flushed: flushed, finished: state.finished)
        }
    }

    private func send(_ batch: [FinishedSpan]) async {
        do {
            try await exporter.export(batch)
            state.withLock { state in
                state.tally.exported += batch.count
                state.tally.lastExportFailed = false
                state.failing = false
            }
        } catch {
            let first = state.withLock { state in
                state.tally.failed += batch.count
                state.tally.lastExportFailed = true
                defer { state.failing = true }
                return !state.failing
            }
            if first {
                let reason = (error as? SpanExportFailure)?.description ?? String(describing: type(of: error))
                warn(
                    "attache: the OTLP collector did not take \(batch.count) spans (\(reason)); they are dropped, "
                        + "as are the spans of later exports that fail (the warning at the end counts them)")
            }
        }
    }
}

/// Waits for `task` to finish, for at most `limit`: true when it did.
func waitForTask(_ task: Task<Void, Never>, within limit: Duration) async -> Bool {
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
            await task.value
            answer(true)
        }
        Task {
            try? await Task.sleep(for: limit)
            answer(false)
        }
    }
}
