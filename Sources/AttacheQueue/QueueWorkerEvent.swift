public import Attache
import Foundation

/// What a worker did, for its caller's output.
public enum QueueWorkerEvent: Sendable {
    /// Files claimed in one round trip.
    case claimed(count: Int)
    /// A file stored, its receipt and `done` committed under the lease.
    case succeeded(QueueJob, UploadReceipt)
    /// A file failed; `willRetry` when it went back to the queue for a later attempt.
    case failed(QueueJob, AttacheError, willRetry: Bool)
    /// The lease was taken over before this worker could commit: the new holder's result stands
    /// (the server saw the same idempotency key, so nothing was stored twice).
    case leaseLost(QueueJob)
    /// Files handed back unsent (stopping).
    case released(count: Int)
}
