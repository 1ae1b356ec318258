import Attache
import AttacheCore
import Foundation
import Logging
import PostgresNIO

/// Commits the results of one worker's files, grouping the ones that finish while a commit is under way
/// into the next statement (group commit): one round trip and one WAL flush for many files, which is
/// what lets a few workers commit thousands of small files a second.
///
/// Every row is guarded by its fencing token: the statement changes only rows that are still `claimed`
/// with the token this worker's claim got. A row whose lease was taken over is left to its new holder
/// and reported as not committed.
actor QueueCommitter {
    /// What becomes of one claimed row.
    enum Outcome: Sendable {
        /// Stored: `done` with the receipt.
        case done(QueueJob, receipt: UploadReceipt)
        /// Failed, may succeed later: back to `pending`, claimable again after `after`.
        case retry(QueueJob, error: AttacheError, after: Duration)
        /// Failed for good (or out of attempts): `failed` with the error.
        case failed(QueueJob, error: AttacheError)
        /// Not sent (stopping): back to `pending`, the attempt not counted.
        case release(QueueJob)

        var job: QueueJob {
            switch self {
            case .done(let job, _), .retry(let job, _, _), .failed(let job, _), .release(let job): job
            }
        }
    }

    private let database: QueueDatabase
    private let workerID: String
    private var waiting: [(Outcome, CheckedContinuation<Bool, any Error>)] = []
    private var flushing = false

    init(database: QueueDatabase, workerID: String) {
        self.database = database
        self.workerID = workerID
    }

    /// Commits `outcome`; true when the row still carried this worker's token (the result is recorded),
    /// false when another worker had taken it over.
    /// - Throws: ``AttacheError`` `.queue` when the database fails.
    func commit(_ outcome: Outcome) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            waiting.append((outcome, continuation))
            if !flushing {
                flushing = true
                // Not a child of the caller: a cancelled send must still get its release committed.
                Task { await self.flush() }
            }
        }
    }

    private func flush() async {
        while !waiting.isEmpty {
            let batch = waiting
            waiting = []
            do {
                let committed = try await write(batch.map(\.0))
                for (outcome, continuation) in batch { continuation.resume(returning: committed.contains(outcome.job.id)) }
            } catch {
                for (_, continuation) in batch { continuation.resume(throwing: error) }
            }
        }
        flushing = false
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// One statement for all of `outcomes`; returns the ids it changed.
    private func write(_ outcomes: [Outcome]) async throws -> Set<Int64> {
        var kinds: [String] = []
        var ids: [Int64] = []
        var tokens: [Int64] = []
        var receipts: [String] = []
        var sent: [Int64] = []
        var codes: [String] = []
        var stages: [String] = []
        var messages: [String] = []
        var delays: [Double] = []
        for outcome in outcomes {
            let job = outcome.job
            ids.append(job.id)
            tokens.append(job.leaseToken)
            var receipt = ""
            var sentBytes: Int64 = 0
            var error: AttacheError?
            var delay = 0.0
            switch outcome {
            case .done(_, let value):
                kinds.append("done")
                receipt = String(decoding: (try? Self.encoder.encode(value)) ?? Data("{}".utf8), as: UTF8.self)
                sentBytes = value.sentByteCount
            case .retry(_, let failure, let after):
                kinds.append("retry")
                error = failure
                delay = after.seconds
            case .failed(_, let failure):
                kinds.append("failed")
                error = failure
            case .release:
                kinds.append("release")
            }
            receipts.append(receipt)
            sent.append(sentBytes)
            codes.append(error?.code.rawValue ?? "")
            stages.append(error?.stage.rawValue ?? "")
            messages.append(error?.message ?? "")
            delays.append(delay)
        }
        let worker = workerID
        let rows = try await database.run(
            """
            WITH r AS (
                SELECT * FROM unnest(\(kinds)::text[], \(ids)::bigint[], \(tokens)::bigint[], \(receipts)::text[],
                                     \(sent)::bigint[], \(codes)::text[], \(stages)::text[], \(messages)::text[],
                                     \(delays)::float8[])
                    AS r(outcome, id, token, receipt, sent, code, stage, message, delay)
            ), changed AS (
                UPDATE attache_file AS f SET
                    state = CASE r.outcome WHEN 'done' THEN 'done' WHEN 'failed' THEN 'failed' ELSE 'pending' END,
                    receipt = CASE WHEN r.outcome = 'done' THEN r.receipt::jsonb END,
                    sent_bytes = CASE WHEN r.outcome = 'done' THEN r.sent END,
                    error_code = CASE r.outcome WHEN 'done' THEN NULL WHEN 'release' THEN f.error_code ELSE r.code END,
                    error_stage = CASE r.outcome WHEN 'done' THEN NULL WHEN 'release' THEN f.error_stage ELSE r.stage END,
                    error_message = CASE r.outcome WHEN 'done' THEN NULL WHEN 'release' THEN f.error_message
                                    ELSE r.message END,
                    attempts = CASE WHEN r.outcome = 'release' THEN greatest(f.attempts - 1, 0) ELSE f.attempts END,
                    not_before = CASE WHEN r.outcome = 'retry' THEN now() + make_interval(secs => r.delay) END,
                    finished_at = CASE WHEN r.outcome IN ('done', 'failed') THEN now() END,
                    locked_until = NULL,
                    heartbeat_at = NULL
                FROM r
                WHERE f.id = r.id AND f.lease_token = r.token AND f.state = 'claimed'
                RETURNING f.id, r.outcome, f.size
            ), counted AS (
                UPDATE attache_worker SET
                    files_done = files_done + (SELECT count(*) FROM changed WHERE outcome = 'done'),
                    bytes_done = bytes_done + (SELECT COALESCE(sum(size), 0) FROM changed WHERE outcome = 'done'),
                    files_failed = files_failed + (SELECT count(*) FROM changed WHERE outcome = 'failed'),
                    heartbeat_at = now()
                WHERE id = \(worker)
            )
            SELECT id FROM changed
            """, "commit files")
        var changed: Set<Int64> = []
        do {
            for try await id in rows.decode(Int64.self) { changed.insert(id) }
        } catch {
            throw QueueDatabase.failure(error, "commit files", connection: database.connection)
        }
        return changed
    }
}
