import Attache
import AttacheCore
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Takes files from the shared queue and sends them, many workers at once on many machines.
///
/// The protocol (docs/SCALE.md):
/// 1. **Claim** a few rows with `SELECT … FOR UPDATE SKIP LOCKED` (pending ones, and claimed ones whose
///    lease ran out), setting `state = claimed`, this worker's id, `locked_until = now() + lease` and a
///    fresh fencing token from a sequence.
/// 2. **Heartbeat** every third of the lease: `locked_until` is pushed on for the rows that still carry
///    this worker's tokens.
/// 3. **Send** with the row's idempotency key and seal material, both made at enqueue time.
/// 4. **Commit** `done` with the receipt (or `failed`, or `pending` for a retry) in one statement whose
///    `WHERE` names the token: a worker whose lease was taken over changes nothing. Commits of files that
///    finish together are grouped into one statement.
///
/// Exactly once follows from the server's deduplication: every send of one row, by any worker, carries
/// the same key and the same bytes, so the server stores the first and answers the others with its
/// receipt.
///
/// ```swift
/// try await QueueDatabase.withDatabase(connection) { database in
///     let pipeline = try AttachmentPipeline(configuration: PipelineConfiguration(url: "https://files.example/upload"))
///     let worker = QueueWorker(database: database, sender: PipelineQueueSender(pipeline: pipeline))
///     let summary = try await worker.run()
///     print("\(summary.succeeded) sent")
/// }
/// ```
public final class QueueWorker: Sendable {
    /// The configuration in use.
    public let configuration: QueueWorkerConfiguration
    let database: QueueDatabase
    let sender: any QueueFileSender
    private let stopping = Atomic<Bool>(false)
    private let leases = LeaseBook()
    /// Where the job spans and the queue's metrics go.
    let telemetry: Telemetry

    /// Creates a worker; nothing happens before ``run(events:)``.
    public init(
        database: QueueDatabase, sender: any QueueFileSender,
        configuration: QueueWorkerConfiguration = QueueWorkerConfiguration()
    ) {
        self.database = database
        self.sender = sender
        self.configuration = configuration
        self.telemetry = (sender as? PipelineQueueSender)?.pipeline.telemetry ?? .bootstrapped
    }

    /// Asks the worker to stop gracefully: it claims nothing more, hands back the files it holds but has
    /// not started, finishes and commits the ones in flight, and ``run(events:)`` returns. Cancel the task
    /// running ``run(events:)`` to stop at once instead: sends in flight are cancelled and handed back.
    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
    }

    private var isStopping: Bool { stopping.load(ordering: .sequentiallyConsistent) || Task.isCancelled }

    /// Works until stopped (or, with ``QueueWorkerConfiguration/exitWhenDrained``, until nothing is left).
    ///
    /// Failures of single files are events and rows, never thrown.
    /// - Throws: ``AttacheError`` `.queue` when the schema is missing or the database stays unreachable
    ///   through a whole lease (a worker that cannot commit must not keep sending).
    public func run(events: @escaping @Sendable (QueueWorkerEvent) -> Void = { _ in }) async throws -> QueueWorkerSummary {
        let start = ContinuousClock.now
        try await database.requireCurrentSchema()
        try await register()
        if telemetry.metrics != nil { try? await recordDepth() }
        let committer = QueueCommitter(database: database, workerID: configuration.workerID)
        let summary = SummaryBox()
        let heartbeat = Task { [self] in await heartbeatLoop() }
        defer { heartbeat.cancel() }

        let commits = PendingCommits()
        var failure: (any Error)?
        await withTaskGroup(of: Void.self) { group in
            let concurrency = max(1, configuration.concurrency)
            let batch = max(1, configuration.claimBatch)
            var buffer: [QueueJob] = []
            var running = 0
            var lastContact = ContinuousClock.now
            var lastClaimFull = false
            // After a claim that found nothing, the next one waits: 50 ms, doubling up to the idle poll.
            let firstBackoff = min(Duration.milliseconds(50), configuration.idlePoll)
            var backoff = firstBackoff
            var nextClaim = ContinuousClock.now
            while true {
                // Claim ahead: a new batch once the files waiting here are down to half a batch, so that a
                // slot that frees up finds its next file without a round trip; commits still under way
                // (their rows stay claimed) hold back new claims when the database is slow.
                let wantClaim =
                    !isStopping && buffer.count * 2 <= batch && running + buffer.count < concurrency + batch
                    && commits.count < 4 * concurrency
                if wantClaim, ContinuousClock.now >= nextClaim {
                    do {
                        let claimStart = ContinuousClock.now
                        let jobs = try await claim(batch)
                        telemetry.record(ContinuousClock.now - claimStart, .queueClaimDuration)
                        lastContact = .now
                        lastClaimFull = jobs.count >= batch
                        if jobs.isEmpty {
                            nextClaim = .now + backoff
                            backoff = min(backoff * 2, configuration.idlePoll)
                        } else {
                            backoff = firstBackoff
                            nextClaim = .now
                            summary.withLock { $0.claimed += jobs.count }
                            events(.claimed(count: jobs.count))
                        }
                        buffer += jobs
                        if jobs.isEmpty, running == 0, buffer.isEmpty, configuration.exitWhenDrained {
                            // This worker's own commits keep their rows claimed until they land.
                            await commits.waitUntilEmpty()
                            if try await openCount() == 0 { break }
                        }
                    } catch {
                        database.logger.warning("cannot claim files", metadata: ["error": "\(error)"])
                        lastClaimFull = false
                        nextClaim = .now + configuration.idlePoll
                        if ContinuousClock.now - lastContact > configuration.lease {
                            failure = error
                            stop()
                        }
                    }
                }
                while !isStopping, running < concurrency, !buffer.isEmpty {
                    let job = buffer.removeFirst()
                    // A lease that ran out while the job waited here (this process was paused) may
                    // belong to another worker already: leave the file to it.
                    guard leases.isHeld(job.id) else { continue }
                    running += 1
                    group.addTask { [self] in
                        await process(job, committer: committer, commits: commits, summary: summary, events: events)
                    }
                }
                if isStopping, !buffer.isEmpty {
                    let held = buffer
                    buffer = []
                    let count = await release(held, committer: committer)
                    summary.withLock { $0.released += count }
                    if count > 0 { events(.released(count: count)) }
                }
                if running == 0 {
                    if isStopping { break }
                    if buffer.isEmpty {
                        if commits.count >= 4 * concurrency {
                            await commits.waitUntilEmpty()
                        } else {
                            await idle(until: nextClaim)
                        }
                    }
                    continue
                }
                // Free slots and a full last claim: there is likely more to take at once.
                if !isStopping, running < concurrency, buffer.isEmpty, lastClaimFull, commits.count < 4 * concurrency {
                    continue
                }
                // Otherwise wait for a slot; it is refilled at the top of the loop.
                await group.next()
                running -= 1
            }
        }
        // Results still being committed: their rows are claimed until then.
        await commits.waitUntilEmpty()
        heartbeat.cancel()
        // The depth as this worker leaves it (0 open rows once a drained queue is done).
        if telemetry.metrics != nil { try? await recordDepth() }
        await unregister()
        if let failure { throw failure }
        var result = summary.withLock { $0 }
        result.seconds = (ContinuousClock.now - start).seconds
        return result
    }

    /// Sleeps until `deadline`, waking early when the worker is stopped.
    private func idle(until deadline: ContinuousClock.Instant) async {
        while !isStopping, ContinuousClock.now < deadline {
            try? await Task.sleep(for: min(.milliseconds(100), deadline - .now))
        }
    }

    // MARK: One file

    /// Sends one file and hands its result to the committer; the slot is free again as soon as the send
    /// ends, while the commit (and its WAL flush) goes on in the background, grouped with others.
    private func process(
        _ job: QueueJob, committer: QueueCommitter, commits: PendingCommits, summary: SummaryBox,
        events: @escaping @Sendable (QueueWorkerEvent) -> Void
    ) async {
        let outcome: QueueCommitter.Outcome
        var receipt: UploadReceipt?
        var failure: AttacheError?
        do {
            let sent = configuration.contentReuse.reusesStoredUploads ? try await sendReusing(job) : try await traced(job)
            receipt = sent
            outcome = .done(job, receipt: sent)
        } catch {
            let error = Self.attacheError(error, file: job.path)
            failure = error
            if error.code == .cancelled {
                outcome = .release(job)
            } else if error.isRetryable, job.attempt < configuration.maximumAttempts {
                let delay = configuration.retryDelay * (1 << min(job.attempt - 1, 10))
                outcome = .retry(job, error: error, after: delay)
            } else {
                outcome = .failed(job, error: error)
            }
        }
        let result = (receipt: receipt, failure: failure)
        commits.run { [self] in
            await record(job, outcome, result.receipt, result.failure, committer: committer, summary: summary, events: events)
        }
    }

    /// Commits one result and reports it.
    private func record(
        _ job: QueueJob, _ outcome: QueueCommitter.Outcome, _ receipt: UploadReceipt?, _ failure: AttacheError?,
        committer: QueueCommitter, summary: SummaryBox, events: @Sendable (QueueWorkerEvent) -> Void
    ) async {
        let committed: Bool
        do {
            committed = try await committer.commit(outcome)
        } catch {
            // The database is gone: the lease runs out and another worker sends the file again under the
            // same key, which the server answers with this send's receipt.
            database.logger.error(
                "cannot commit a file's result", metadata: ["file": "\(job.path)", "error": "\(error)"])
            leases.drop(job)
            return
        }
        leases.drop(job)
        guard committed else {
            telemetry.count(.queueFencingRefusals)
            summary.withLock { $0.leaseLost += 1 }
            events(.leaseLost(job))
            return
        }
        switch outcome {
        case .done:
            summary.withLock {
                $0.succeeded += 1
                $0.bytes += job.byteCount
            }
            if let receipt { events(.succeeded(job, receipt)) }
        case .retry:
            summary.withLock { $0.retried += 1 }
            if let failure { events(.failed(job, failure, willRetry: true)) }
        case .failed:
            summary.withLock { $0.failed += 1 }
            if let failure { events(.failed(job, failure, willRetry: false)) }
        case .release:
            summary.withLock { $0.released += 1 }
            events(.released(count: 1))
        }
    }

    private static func attacheError(_ error: any Error, file: String) -> AttacheError {
        if let error = error as? AttacheError { return error.concerning(file) }
        if error is CancellationError { return AttacheError(.cancelled, stage: .queue, "cancelled", file: file) }
        return AttacheError(.internalError, stage: .queue, "\(error)", file: file)
    }

    // MARK: Statements

    private var leaseSeconds: Double { configuration.lease.seconds }

    /// Claims up to `count` rows: pending ones whose retry time has come, and claimed ones whose lease
    /// ran out (their worker died or stalled) and that have attempts left.
    ///
    /// Never a row this worker still holds: a lease of its own that ran out in the database (a heartbeat
    /// late by more than the lease, on a loaded machine) belongs to a file it is still sending. Taking it
    /// again would send the file twice at once from one process, and fence the first send out of its own
    /// row (its multipart record would no longer be written). Another worker may take it over; this one
    /// renews it, since the token did not change.
    func claim(_ count: Int) async throws -> [QueueJob] {
        let worker = configuration.workerID
        let lease = leaseSeconds
        let maximum = configuration.maximumAttempts
        let holding = leases.held().map(\.id)
        let rows = try await database.run(
            """
            WITH picked AS (
                SELECT id, state AS was FROM attache_file
                WHERE state IN ('pending', 'claimed')
                  AND ((state = 'pending' AND (not_before IS NULL OR not_before <= now()))
                       OR (state = 'claimed' AND locked_until < now() AND attempts < \(maximum)
                           AND NOT (id = ANY(\(holding)::bigint[]))))
                ORDER BY id
                LIMIT \(count)
                FOR UPDATE SKIP LOCKED
            )
            UPDATE attache_file AS f
            SET state = 'claimed', worker_id = \(worker), lease_token = nextval('attache_lease_token'),
                locked_until = now() + make_interval(secs => \(lease)), heartbeat_at = now(), claimed_at = now(),
                attempts = f.attempts + 1
            FROM picked WHERE f.id = picked.id
            RETURNING f.id, f.path, f.size, f.mtime_ns, f.sha256, f.idempotency_key, f.seal_material, f.scheme,
                      f.attempts, f.lease_token, f.trace_context, f.multipart_upload, picked.was
            """, "claim files")
        let expiry = ContinuousClock.now + configuration.lease
        var jobs: [QueueJob] = []
        var invalid: [(QueueJob?, Int64, Int64, String)] = []
        do {
            for try await (id, path, size, mtime, sha256, key, material, scheme, attempts, token, trace, multipart, was) in rows.decode(
                (Int64, String, Int64, Int64, String, String, String, String, Int, Int64, String?, String?, String).self)
            {
                // A claimed row taken again: its holder's lease ran out.
                if was == "claimed" { telemetry.count(.queueLeaseExpiries) }
                guard let sealScheme = SealScheme(rawValue: scheme), let sealMaterial = try? SealMaterial(encoded: material)
                else {
                    invalid.append((nil, id, token, path))
                    continue
                }
                var job = QueueJob(
                    id: id, path: path, byteCount: size, modificationTime: mtime,
                    sha256: sha256.isEmpty ? nil : sha256, idempotencyKey: key, sealMaterial: sealMaterial,
                    scheme: sealScheme, attempt: attempts, leaseToken: token)
                job.traceContext = trace
                job.multipartRecord = multipart.flatMap { MultipartRecord(json: $0) }
                job.resumableState = multipart.flatMap { text in try? JSONDecoder().decode(ResumableState.self, from: Data(text.utf8)) }
                job.recordMultipart = { [database] record in
                    // Fenced by the lease: a worker that lost the row writes nothing.
                    _ = try? await database.run(
                        "UPDATE attache_file SET multipart_upload = \(record?.json) WHERE id = \(id) AND lease_token = \(token)",
                        "record a multipart upload")
                }
                job.recordResumable = { [database] state in
                    let json = state.flatMap { try? JSONEncoder().encode($0) }.map { String(decoding: $0, as: UTF8.self) }
                    _ = try? await database.run(
                        "UPDATE attache_file SET multipart_upload = \(json) WHERE id = \(id) AND lease_token = \(token)",
                        "record an upload resource")
                }
                jobs.append(job)
            }
        } catch {
            throw QueueDatabase.failure(error, "claim files", connection: database.connection)
        }
        jobs.sort { $0.id < $1.id }
        for job in jobs { leases.hold(job, until: expiry) }
        // A row whose material cannot be read can never be sent identically: park it.
        for (_, id, token, path) in invalid {
            try await database.run(
                """
                UPDATE attache_file SET state = 'failed', error_code = 'invalid-key', error_stage = 'queue',
                    error_message = 'the seal material or scheme stored with the file cannot be read',
                    finished_at = now(), locked_until = NULL
                WHERE id = \(id) AND lease_token = \(token)
                """, "park \(path)")
        }
        return jobs
    }

    /// Rows pending or claimed, for ``QueueWorkerConfiguration/exitWhenDrained``.
    private func openCount() async throws -> Int {
        let rows = try await database.run(
            "SELECT count(*)::bigint FROM attache_file WHERE state IN ('pending', 'claimed')", "count open files")
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    private func release(_ jobs: [QueueJob], committer: QueueCommitter) async -> Int {
        var released = 0
        for job in jobs {
            leases.drop(job)
            if (try? await committer.commit(.release(job))) == true { released += 1 }
        }
        return released
    }

    private func register() async throws {
        let id = configuration.workerID
        let host = ProcessInfo.processInfo.hostName
        let pid = Int(getpid())
        try await database.run(
            """
            INSERT INTO attache_worker (id, host, pid) VALUES (\(id), \(host), \(pid))
            ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), stopped_at = NULL
            """, "register the worker")
    }

    private func unregister() async {
        let id = configuration.workerID
        _ = try? await database.run(
            "UPDATE attache_worker SET stopped_at = now(), heartbeat_at = now() WHERE id = \(id)", "unregister the worker")
    }

    /// Renews this worker's leases every third of the lease, and parks files whose lease ran out on their
    /// last attempt (a file that kills or stalls every worker that takes it).
    private func heartbeatLoop() async {
        let interval = configuration.lease / 3
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { return }
            do {
                try await renewLeases()
                try await parkExpired()
                if telemetry.metrics != nil { try await recordDepth() }
            } catch {
                database.logger.warning("cannot renew leases", metadata: ["error": "\(error)"])
            }
        }
    }

    func renewLeases() async throws {
        let held = leases.held()
        let worker = configuration.workerID
        let lease = leaseSeconds
        let ids = held.map(\.id)
        let tokens = held.map(\.token)
        let expiry = ContinuousClock.now + configuration.lease
        let rows = try await database.run(
            """
            WITH renewed AS (
                UPDATE attache_file SET locked_until = now() + make_interval(secs => \(lease)), heartbeat_at = now()
                WHERE state = 'claimed' AND (id, lease_token) IN (SELECT * FROM unnest(\(ids)::bigint[], \(tokens)::bigint[]))
                RETURNING id
            ), seen AS (
                UPDATE attache_worker SET heartbeat_at = now() WHERE id = \(worker)
            )
            SELECT id FROM renewed
            """, "renew leases")
        var renewed: Set<Int64> = []
        for try await id in rows.decode(Int64.self) { renewed.insert(id) }
        leases.renew(renewed, of: held, until: expiry)
    }

    private func parkExpired() async throws {
        let maximum = configuration.maximumAttempts
        let parked = try await database.run(
            """
            UPDATE attache_file
            SET state = 'failed', error_code = 'lease-expired', error_stage = 'queue',
                error_message = 'the lease ran out on every attempt (' || attempts || '): its workers died or stalled',
                finished_at = now(), locked_until = NULL
            WHERE state = 'claimed' AND locked_until < now() AND attempts >= \(maximum)
            RETURNING id
            """, "park files whose leases ran out")
        var count: Int64 = 0
        for try await _ in parked.decode(Int64.self) { count += 1 }
        telemetry.count(.queueLeaseExpiries, by: count)
    }
}
