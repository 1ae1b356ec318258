import Attache
import AttacheCore
/// The events of a run on their way to the consumer, with back-pressure.
///
/// Every event takes a place in an ``AsyncLimiter`` when it is produced and gives it back when the
/// consumer takes it, so at most ``limit`` events wait in the buffer. A producer that finds no place
/// waits: the driver stops walking and starting files, and files in flight stop at their next event,
/// until the consumer reads on. Progress is lossy instead: when the buffer is full a progress event is
/// dropped, because the upload that reports it must not stall on a slow reader. A `retried` event never
/// waits either (it is produced inside the upload's progress callback); it still takes its place, so the
/// count stays exact, and the overshoot is at most one per file in flight.
///
/// Once the run is cancelled, producers no longer wait (the consumer may be gone); what they yield
/// after that is bounded by the files in flight.
final class BatchEventBuffer: Sendable {
    private let continuation: AsyncThrowingStream<BatchEvent, any Error>.Continuation
    private let places: AsyncLimiter

    init(limit: Int, continuation: AsyncThrowingStream<BatchEvent, any Error>.Continuation) {
        self.continuation = continuation
        self.places = AsyncLimiter(limit: limit)
    }

    /// The most events buffered before producers wait.
    var limit: Int { places.limit }

    /// Events produced and not yet taken by the consumer (for tests and monitoring).
    var outstanding: Int { places.inside }

    /// Producers waiting for the consumer (for tests).
    var waitingProducers: Int { places.waiting }

    /// Yields `event`, first waiting while the buffer is full, unless the task is cancelled.
    func send(_ event: BatchEvent) async {
        do {
            try await places.enter()
        } catch {
            places.forceEnter()
        }
        continuation.yield(event)
    }

    /// Yields `event` only when the buffer has room; returns whether it did.
    @discardableResult
    func offer(_ event: BatchEvent) -> Bool {
        guard places.tryEnter() else { return false }
        continuation.yield(event)
        return true
    }

    /// Yields `event` without waiting, even over the limit.
    func force(_ event: BatchEvent) {
        places.forceEnter()
        continuation.yield(event)
    }

    /// Ends the stream.
    func finish(throwing error: (any Error)? = nil) {
        continuation.finish(throwing: error)
    }

    /// The consumer took an event: its place goes to the first waiting producer, if any.
    func consumed() {
        places.leave()
    }
}
