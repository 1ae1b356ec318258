import Synchronization

/// The events of a run on their way to the consumer, with back-pressure.
///
/// Every event takes a credit when it is produced and gives it back when the consumer takes it, so at
/// most ``limit`` events wait in the buffer. A producer that finds no credit waits: the driver stops
/// walking and starting files, and files in flight stop at their next event, until the consumer reads
/// on. Progress is lossy instead: when the buffer is full a progress event is dropped, because the
/// upload that reports it must not stall on a slow reader. A `retried` event never waits either (it is
/// produced inside the upload's progress callback); it still takes its credit, so the count stays
/// exact, and the overshoot is at most one per file in flight.
///
/// Once the run is cancelled, producers no longer wait (the consumer may be gone); what they yield
/// after that is bounded by the files in flight.
final class BatchEventBuffer: Sendable {
    let limit: Int
    private let continuation: AsyncThrowingStream<BatchEvent, any Error>.Continuation
    private let state: Mutex<State>

    private struct State {
        /// Events produced and not yet taken by the consumer.
        var outstanding = 0
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
        /// Waiters whose task was cancelled before they were queued.
        var cancelled: Set<UInt64> = []
        var nextWaiter: UInt64 = 0
    }

    init(limit: Int, continuation: AsyncThrowingStream<BatchEvent, any Error>.Continuation) {
        self.limit = max(1, limit)
        self.continuation = continuation
        self.state = Mutex(State())
    }

    /// Events produced and not yet taken by the consumer (for tests and monitoring).
    var outstanding: Int { state.withLock { $0.outstanding } }

    /// Producers waiting for the consumer (for tests).
    var waitingProducers: Int { state.withLock { $0.waiters.count } }

    /// Yields `event`, first waiting while the buffer is full, unless the task is cancelled.
    func send(_ event: BatchEvent) async {
        await reserve()
        continuation.yield(event)
    }

    /// Yields `event` only when the buffer has room; returns whether it did.
    @discardableResult
    func offer(_ event: BatchEvent) -> Bool {
        let room = state.withLock { state -> Bool in
            guard state.outstanding < limit else { return false }
            state.outstanding += 1
            return true
        }
        if room { continuation.yield(event) }
        return room
    }

    /// Yields `event` without waiting, even over the limit.
    func force(_ event: BatchEvent) {
        state.withLock { $0.outstanding += 1 }
        continuation.yield(event)
    }

    /// Ends the stream.
    func finish(throwing error: (any Error)? = nil) {
        continuation.finish(throwing: error)
    }

    /// The consumer took an event: its credit goes to the first waiting producer, if any.
    func consumed() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.outstanding -= 1
            guard state.outstanding < limit, !state.waiters.isEmpty else { return nil }
            state.outstanding += 1
            return state.waiters.removeFirst().continuation
        }
        waiter?.resume()
    }

    private func reserve() async {
        let id = state.withLock { state -> UInt64? in
            if state.outstanding < limit || Task.isCancelled {
                state.outstanding += 1
                return nil
            }
            state.nextWaiter += 1
            return state.nextWaiter
        }
        guard let id else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.cancelled.remove(id) != nil {
                        state.outstanding += 1
                        return true
                    }
                    if state.outstanding < limit {
                        state.outstanding += 1
                        return true
                    }
                    state.waiters.append((id, continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                    state.cancelled.insert(id)
                    return nil
                }
                state.outstanding += 1
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume()
        }
    }
}
