public import Attache
import AttacheCore
import Foundation
import Logging
import PostgresNIO

/// What the queue looks like now: `attache queue status`.
public struct QueueStatus: Sendable, Codable {
    /// Rows per state (`pending`, `claimed`, `done`, `failed`), zero for absent states.
    public var counts: [String: Int]
    /// The window the rates are measured over, in seconds.
    public var windowSeconds: Int
    /// Files committed as done within the window, per second.
    public var filesPerSecond: Double
    /// Bytes (of the source files) committed as done within the window, per second.
    public var bytesPerSecond: Double
    /// Seconds since the oldest claim still held was made, when any is held.
    public var oldestClaimSeconds: Double?
    /// Claimed rows whose lease has run out (their worker died or stalled; the next claim takes them).
    public var expiredLeases: Int
    /// Workers seen within the window or still running.
    public var workers: [Worker]
    /// The last few files parked as failed.
    public var recentFailures: [Failure]

    /// One worker's activity.
    public struct Worker: Sendable, Codable {
        /// Its id (`host-pid-random`).
        public var id: String
        /// Its host.
        public var host: String
        /// Its process id on that host.
        public var pid: Int
        /// Seconds since its last heartbeat or commit.
        public var secondsSinceHeartbeat: Double
        /// Whether it stopped cleanly.
        public var stopped: Bool
        /// Files it holds now.
        public var holding: Int
        /// Files it committed as done within the window, per second.
        public var filesPerSecond: Double
        /// Files it committed as done since it started.
        public var filesDone: Int
        /// Bytes (of the source files) it committed as done since it started.
        public var bytesDone: Int64
        /// Files it parked as failed since it started.
        public var filesFailed: Int
    }

    /// One failed file.
    public struct Failure: Sendable, Codable {
        /// The row's id.
        public var id: Int64
        /// The path it was enqueued with.
        public var path: String
        /// Claims it had.
        public var attempts: Int
        /// The last error's code (``AttacheError/Code``), `lease-expired` when its workers kept dying.
        public var code: String
        /// The last error's stage.
        public var stage: String
        /// The last error's message.
        public var message: String
    }
}

/// One done file and its receipt: `attache queue receipts`.
public struct QueueReceipt: Sendable, Codable {
    /// The row's id; pass the last one seen as `after` to continue.
    public var id: Int64
    /// The path the file was enqueued with.
    public var path: String
    /// The receipt, seal key included (``UploadReceipt/seal``): handle it like a key.
    public var receipt: UploadReceipt
}

/// Reads and repairs the queue: status, receipts, failed files.
///
/// ```swift
/// let inspector = QueueInspector(database: database)
/// let status = try await inspector.status()
/// print(status.counts["pending"] ?? 0, "pending,", status.filesPerSecond, "files/s")
/// try await inspector.receipts { print($0.path, $0.receipt.fileId ?? "-") }
/// ```
public struct QueueInspector: Sendable {
    /// The queue read.
    public let database: QueueDatabase

    /// Creates an inspector.
    public init(database: QueueDatabase) {
        self.database = database
    }

    /// The counts, rates, leases and workers, rates over the last `window`.
    /// - Throws: ``AttacheError`` `.queue`.
    public func status(window: Duration = .seconds(300)) async throws -> QueueStatus {
        try await database.requireCurrentSchema()
        let seconds = max(1, Int(window.components.seconds))
        var counts = ["pending": 0, "claimed": 0, "done": 0, "failed": 0]
        for try await (state, count) in try await database.run(
            "SELECT state, count(*)::bigint FROM attache_file GROUP BY state", "count files"
        ).decode((String, Int).self) {
            counts[state] = count
        }
        var files = 0
        var bytes: Int64 = 0
        for try await (count, sum) in try await database.run(
            """
            SELECT count(*)::bigint, COALESCE(sum(size), 0)::bigint FROM attache_file
            WHERE state = 'done' AND finished_at > now() - make_interval(secs => \(Double(seconds)))
            """, "measure rates"
        ).decode((Int, Int64).self) {
            files = count
            bytes = sum
        }
        var oldest: Double?
        var expired = 0
        for try await (age, late) in try await database.run(
            """
            SELECT EXTRACT(EPOCH FROM now() - min(claimed_at))::float8,
                   count(*) FILTER (WHERE locked_until < now())::bigint
            FROM attache_file WHERE state = 'claimed'
            """, "read leases"
        ).decode((Double?, Int).self) {
            oldest = age
            expired = late
        }
        var recent: [String: Int] = [:]
        for try await (worker, count) in try await database.run(
            """
            SELECT worker_id, count(*)::bigint FROM attache_file
            WHERE state = 'done' AND finished_at > now() - make_interval(secs => \(Double(seconds)))
            GROUP BY worker_id
            """, "measure workers"
        ).decode((String?, Int).self) {
            if let worker { recent[worker] = count }
        }
        var holding: [String: Int] = [:]
        for try await (worker, count) in try await database.run(
            "SELECT worker_id, count(*)::bigint FROM attache_file WHERE state = 'claimed' GROUP BY worker_id",
            "count leases"
        ).decode((String?, Int).self) {
            if let worker { holding[worker] = count }
        }
        var workers: [QueueStatus.Worker] = []
        for try await (id, host, pid, idle, stopped, done, doneBytes, failed) in try await database.run(
            """
            SELECT id, host, pid, EXTRACT(EPOCH FROM now() - heartbeat_at)::float8, stopped_at IS NOT NULL,
                   files_done, bytes_done, files_failed
            FROM attache_worker
            WHERE stopped_at IS NULL OR heartbeat_at > now() - make_interval(secs => \(Double(seconds)))
            ORDER BY id
            """, "list workers"
        ).decode((String, String, Int, Double, Bool, Int, Int64, Int).self) {
            workers.append(
                QueueStatus.Worker(
                    id: id, host: host, pid: pid, secondsSinceHeartbeat: idle, stopped: stopped,
                    holding: holding[id] ?? 0, filesPerSecond: Double(recent[id] ?? 0) / Double(seconds),
                    filesDone: done, bytesDone: doneBytes, filesFailed: failed))
        }
        var failures: [QueueStatus.Failure] = []
        for try await (id, path, attempts, code, stage, message) in try await database.run(
            """
            SELECT id, path, attempts, COALESCE(error_code, ''), COALESCE(error_stage, ''), COALESCE(error_message, '')
            FROM attache_file WHERE state = 'failed' ORDER BY finished_at DESC NULLS LAST LIMIT 10
            """, "list failures"
        ).decode((Int64, String, Int, String, String, String).self) {
            failures.append(
                QueueStatus.Failure(id: id, path: path, attempts: attempts, code: code, stage: stage, message: message))
        }
        return QueueStatus(
            counts: counts, windowSeconds: seconds, filesPerSecond: Double(files) / Double(seconds),
            bytesPerSecond: Double(bytes) / Double(seconds), oldestClaimSeconds: oldest, expiredLeases: expired,
            workers: workers, recentFailures: failures)
    }

    /// Calls `each` for every done file with an id above `after`, in id order, a page at a time (so ten
    /// million receipts stream in bounded memory).
    /// - Throws: ``AttacheError`` `.queue`; `.badResponse` when a stored receipt cannot be read.
    public func receipts(after: Int64 = 0, pageSize: Int = 1000, _ each: (QueueReceipt) throws -> Void) async throws {
        try await database.requireCurrentSchema()
        let decoder = JSONDecoder()
        var last = after
        while true {
            var page: [(Int64, String, String)] = []
            for try await row in try await database.run(
                """
                SELECT id, path, receipt::text FROM attache_file
                WHERE state = 'done' AND id > \(last) ORDER BY id LIMIT \(max(1, pageSize))
                """, "read receipts"
            ).decode((Int64, String, String).self) {
                page.append(row)
            }
            if page.isEmpty { return }
            for (id, path, text) in page {
                guard let receipt = try? decoder.decode(UploadReceipt.self, from: Data(text.utf8)) else {
                    throw AttacheError(.badResponse, stage: .queue, "the stored receipt of row \(id) cannot be read", file: path)
                }
                try each(QueueReceipt(id: id, path: path, receipt: receipt))
                last = id
            }
        }
    }

    /// Puts failed files back to `pending` with their attempts reset (their keys and seal material
    /// stay, so a file the server did store after all is answered with its receipt); `code` limits it to
    /// one error code. Returns how many.
    /// - Throws: ``AttacheError`` `.queue`.
    @discardableResult
    public func retryFailed(code: String? = nil) async throws -> Int {
        try await database.requireCurrentSchema()
        let filter = code ?? ""
        let rows = try await database.run(
            """
            WITH retried AS (
                UPDATE attache_file SET state = 'pending', attempts = 0, not_before = NULL, finished_at = NULL,
                    locked_until = NULL
                WHERE state = 'failed' AND (\(filter) = '' OR error_code = \(filter))
                RETURNING 1
            )
            SELECT count(*)::bigint FROM retried
            """, "retry failed files")
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }
}
