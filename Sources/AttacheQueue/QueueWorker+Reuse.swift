import Attache
import AttacheCore
import Foundation
import Logging
import PostgresNIO

/// Content reuse for workers (``QueueWorkerConfiguration/contentReuse``): the queue's database is the index.
///
/// `attache_content` has one row per content key (the source's SHA-256 and the sender's settings
/// fingerprint), made unique by its primary key. A worker sends a file only while it holds the content's
/// advisory lock (`pg_advisory_lock`, on a connection of its own for the length of the send), so that two
/// workers meeting the same content at once take turns, whichever machine they run on; the lock is
/// released with the connection when a worker dies. Under the lock:
/// - a `done` row: its receipt stands for the file (``Attache/UploadReceipt/dedup``), nothing is sent;
/// - a `sending` row (a send that died or lost its answer): the file is sent under that send's key and
///   seal material, so a server that stored it answers it again;
/// - no row: one is made (`sending`, with this file's key and material), the file is sent, the row
///   becomes `done` with the receipt.
extension QueueWorker {
    /// The settings part of the content keys: the pipeline's fingerprint and the declared kind.
    var settingsFingerprint: String {
        guard let sender = sender as? PipelineQueueSender else { return "custom-sender" }
        return sender.pipeline.configuration.settingsFingerprint
            + (sender.declaredKind.map { "+" + $0.rawValue } ?? "")
    }

    /// `job` sent, or the receipt of a stored upload of its content.
    func sendReusing(_ job: QueueJob) async throws -> UploadReceipt {
        let start = ContinuousClock.now
        let sha256: String
        if let known = job.sha256, !known.isEmpty {
            sha256 = known
        } else {
            sha256 = try await BlockingPool.shared.run { try ContentDigest.sha256Hex(of: FileSource(path: job.path)) }
        }
        let contentKey = sha256 + "/" + settingsFingerprint
        let lock = Self.lockKey(contentKey)
        let logger = database.logger
        do {
            return try await database.client.withConnection { connection in
                try await connection.query("SELECT pg_advisory_lock(\(lock))", logger: logger)
                do {
                    let receipt = try await underLock(job, sha256: sha256, contentKey: contentKey, start: start, connection)
                    try await connection.query("SELECT pg_advisory_unlock(\(lock))", logger: logger)
                    return receipt
                } catch {
                    _ = try? await connection.query("SELECT pg_advisory_unlock(\(lock))", logger: logger)
                    throw error
                }
            }
        } catch let error as AttacheError {
            throw error
        } catch is CancellationError {
            throw AttacheError(.cancelled, stage: .queue, "cancelled", file: job.path)
        } catch {
            throw QueueDatabase.failure(error, "look up stored content", connection: database.connection)
        }
    }

    private func underLock(
        _ job: QueueJob, sha256: String, contentKey: String, start: ContinuousClock.Instant,
        _ connection: PostgresConnection
    ) async throws -> UploadReceipt {
        let logger = database.logger
        var found: (state: String, key: String, material: String, receipt: String?)?
        for try await row in try await connection.query(
            "SELECT state, idempotency_key, seal_material, receipt::text FROM attache_content WHERE content_key = \(contentKey)",
            logger: logger
        ).decode((String, String, String, String?).self) {
            found = row
        }
        if let found, found.state == "done", let text = found.receipt,
            let stored = try? JSONDecoder().decode(UploadReceipt.self, from: Data(text.utf8))
        {
            let fixedKey = (sender as? PipelineQueueSender)?.pipeline.configuration.seal.key != nil
            var doubt = stored.reuseDoubt(sha256: sha256, byteCount: job.byteCount, fixedKey: fixedKey)
            if doubt == nil, configuration.contentReuse == .verify, let sender = sender as? PipelineQueueSender {
                doubt = await sender.pipeline.storedUploadDoubt(stored)
            }
            guard let doubt else {
                return stored.reused(forPath: job.path, sha256: sha256, seconds: (ContinuousClock.now - start).seconds)
            }
            logger.warning(
                "not reusing the stored upload; sending the file",
                metadata: ["file": "\(job.path)", "reason": "\(doubt)", "upload": "\(found.key)"])
            try await connection.query("DELETE FROM attache_content WHERE content_key = \(contentKey)", logger: logger)
        } else if let found, found.state == "sending", let material = try? SealMaterial(encoded: found.material),
            found.key != job.idempotencyKey
        {
            // A send of this content that never finished: its key and material, so that what reached the
            // server is answered again.
            let adopted = QueueJob(
                id: job.id, path: job.path, byteCount: job.byteCount, modificationTime: job.modificationTime,
                sha256: job.sha256, idempotencyKey: found.key, sealMaterial: material, scheme: job.scheme,
                attempt: job.attempt, leaseToken: job.leaseToken)
            return try await sendAndIndex(adopted, contentKey: contentKey, connection)
        }
        if !(found?.state == "sending" && found?.key == job.idempotencyKey) {
            try await connection.query(
                """
                INSERT INTO attache_content (content_key, state, idempotency_key, seal_material)
                VALUES (\(contentKey), 'sending', \(job.idempotencyKey), \(job.sealMaterial.encoded))
                ON CONFLICT (content_key) DO UPDATE SET state = 'sending', idempotency_key = excluded.idempotency_key,
                    seal_material = excluded.seal_material, receipt = NULL, updated_at = now()
                """, logger: logger)
        }
        return try await sendAndIndex(job, contentKey: contentKey, connection)
    }

    /// Sends `job` and records its receipt as the content's stored upload.
    private func sendAndIndex(_ job: QueueJob, contentKey: String, _ connection: PostgresConnection) async throws -> UploadReceipt {
        let receipt = try await traced(job)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = String(decoding: try encoder.encode(receipt), as: UTF8.self)
        try await connection.query(
            """
            UPDATE attache_content SET state = 'done', receipt = \(json)::jsonb, updated_at = now()
            WHERE content_key = \(contentKey) AND idempotency_key = \(job.idempotencyKey)
            """, logger: database.logger)
        return receipt
    }

    /// The advisory lock of a content: the first 8 bytes of its key's SHA-256, with a tag of its own in
    /// the top bits kept apart from the migration lock.
    static func lockKey(_ contentKey: String) -> Int64 {
        let digest = ContentDigest.sha256Hex(of: Array(("attache-content\u{0}" + contentKey).utf8))
        return Int64(bitPattern: UInt64(digest.prefix(16), radix: 16) ?? 0)
    }
}
