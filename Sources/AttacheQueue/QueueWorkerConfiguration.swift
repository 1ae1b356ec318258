public import Attache
import AttacheCore
import Foundation

/// How a ``QueueWorker`` takes and holds files.
public struct QueueWorkerConfiguration: Sendable {
    /// This worker's name in the queue (rows it holds, `queue status`); unique per process by default:
    /// `host-pid-random`.
    public var workerID: String
    /// How long a claim holds a file without a heartbeat. A worker renews its leases every third of
    /// this; one that dies or stalls longer loses its files to the others after at most this long.
    public var lease: Duration = .seconds(60)
    /// Files sent at the same time.
    public var concurrency = 4
    /// Files claimed per round trip (at least 1). Claimed files wait in this worker, so keep it small.
    public var claimBatch = 4
    /// Claims of one file before it is parked as failed: a retryable failure, or a lease that expired
    /// because its worker died, each count one.
    public var maximumAttempts = 3
    /// The wait before a file that failed retryably may be claimed again; doubled for each attempt.
    public var retryDelay: Duration = .seconds(5)
    /// How long an idle worker waits before looking for files again.
    public var idlePoll: Duration = .seconds(1)
    /// Stop when no file is pending or claimed (instead of waiting for more to be enqueued).
    public var exitWhenDrained = false
    /// Whether a file whose content another worker (or this one) stored before takes that upload's
    /// receipt instead of being sent (off by default). The index is the queue's `attache_content` table;
    /// workers meeting one content at once take turns under a PostgreSQL advisory lock, each holding a
    /// database connection while it waits or sends (size the pool for it). See ``Attache/ContentReuse``.
    public var contentReuse: ContentReuse = .off

    /// The defaults, with a fresh worker id.
    public init() {
        workerID = Self.makeWorkerID()
    }

    /// `host-pid-random`.
    public static func makeWorkerID() -> String {
        var name = [CChar](repeating: 0, count: 256)
        let host = gethostname(&name, name.count) == 0 ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "host"
        var generator = SystemRandomNumberGenerator()
        let suffix = String(generator.next() as UInt32, radix: 16)
        return "\(host)-\(getpid())-\(suffix)"
    }
}
