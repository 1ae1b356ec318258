import AttacheCore
import Foundation

/// What one ``QueueWorker/run(events:)`` did.
public struct QueueWorkerSummary: Sendable, Codable, Equatable {
    /// Files claimed.
    public var claimed = 0
    /// Files committed as done.
    public var succeeded = 0
    /// Files sent back to the queue after a retryable failure.
    public var retried = 0
    /// Files parked as failed.
    public var failed = 0
    /// Files whose lease another worker took over first.
    public var leaseLost = 0
    /// Files handed back unsent.
    public var released = 0
    /// Bytes of the files committed as done.
    public var bytes: Int64 = 0
    /// Wall time.
    public var seconds: Double = 0

    /// All zero.
    public init() {}
}

/// The running totals, shared by the sends.
final class SummaryBox: Sendable {
    private let value = LockedValue(QueueWorkerSummary())

    func withLock<T>(_ body: (inout QueueWorkerSummary) -> T) -> T {
        value.withLock { body(&$0) }
    }
}
