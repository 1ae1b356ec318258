import Attache
import AttacheCore
import Foundation

/// The events of one batch run, and its controls.
///
/// Iterate it once. Cancelling the iterating task, or calling ``cancel()``, stops the whole run;
/// ``cancel(_:)`` stops one file. The run waits for its consumer: while nobody takes events, at most
/// 512 of them are buffered and no new file starts.
public struct BatchRun: AsyncSequence, Sendable {
    /// Each element is one event of the run.
    public typealias Element = BatchEvent

    private let stream: AsyncThrowingStream<BatchEvent, any Error>
    let buffer: BatchEventBuffer
    private let control: BatchControl

    init(stream: AsyncThrowingStream<BatchEvent, any Error>, buffer: BatchEventBuffer, control: BatchControl) {
        self.stream = stream
        self.buffer = buffer
        self.control = control
    }

    /// Iterates the events; each event taken frees room for the run to go on.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<BatchEvent, any Error>.AsyncIterator
        let buffer: BatchEventBuffer

        /// The next event, or `nil` after `finished`.
        /// - Throws: `CancellationError` when the iterating task is cancelled.
        public mutating func next() async throws -> BatchEvent? {
            let event = try await base.next()
            if event != nil { buffer.consumed() }
            return event
        }
    }

    /// The iterator of the run's events. Make one; a run has one consumer.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator(), buffer: buffer)
    }

    /// Stops the run: no new file starts, files in flight are cancelled (and left `pending` in the
    /// journal, keys kept), then `finished` arrives with `cancelled` set.
    public func cancel() {
        control.cancelAll()
    }

    /// Cancels one file, whether it is in flight or still waiting; it ends with a `failed` event whose
    /// code is `.cancelled` and stays `pending` in the journal, so the next run sends it.
    public func cancel(_ file: BatchFileID) {
        control.cancel(file)
    }
}
