import Attache
import AttacheCore
import GRDB

/// The journal as the content index of ``BatchConfiguration/contentReuse``: a copy committed as the reuse
/// of a stored upload, and a stored upload taken out of the index when a check doubts it.
extension UploadJournal {
    /// Commits a file as stored by reusing an upload of the same content: `done`, with `receipt` (see
    /// `UploadReceipt.reused(forPath:sha256:seconds:)`) and the stored upload's idempotency key.
    func markReused(path: String, identity: FileIdentity, contentKey: String, receipt: UploadReceipt, runID: Int64) throws {
        let key = Self.absolute(path)
        let json = Self.encode(receipt)
        try access("record a reused upload in the journal") {
            try database.write { db in
                let now = Self.now()
                try Self.execute(
                    db, sql: """
                        INSERT INTO file (path, size, mtime, sha256, state, idempotencyKey, attempts, receipt, runId,
                                          createdAt, updatedAt, startedAt, finishedAt, contentKey)
                        VALUES (?, ?, ?, ?, 'done', ?, 0, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT(path) DO UPDATE SET
                            size = excluded.size, mtime = excluded.mtime, sha256 = excluded.sha256, state = 'done',
                            idempotencyKey = excluded.idempotencyKey, sealMaterial = NULL, receipt = excluded.receipt,
                            errorCode = NULL, errorStage = NULL, errorMessage = NULL,
                            uploadProtocol = NULL, uploadURL = NULL, confirmedOffset = NULL, multipartUpload = NULL,
                            runId = excluded.runId, updatedAt = excluded.updatedAt, startedAt = excluded.startedAt,
                            finishedAt = excluded.finishedAt, contentKey = excluded.contentKey
                        """,
                    arguments: [
                        key, identity.byteCount, identity.modificationTime, identity.sha256, receipt.idempotencyKey,
                        json, runID, now, now, now, now, contentKey,
                    ])
            }
        }
    }

    /// Takes the upload with `idempotencyKey` out of the content index: its row and every row that reused
    /// it keep their receipts (the messages that carry them are what they are) but are no longer offered
    /// for reuse, after a check found the stored bytes gone or not what the receipt says.
    func forgetStored(contentKey: String, idempotencyKey: String, path: String) throws {
        try access("correct the journal's content index") {
            try database.write { db in
                try Self.execute(
                    db, sql: """
                        UPDATE file SET contentKey = NULL WHERE contentKey = ?1
                            AND (idempotencyKey = ?2 OR path = ?3
                                 OR idempotencyKey = (SELECT idempotencyKey FROM file WHERE path = ?3))
                        """,
                    arguments: [contentKey, idempotencyKey, Self.absolute(path)])
            }
        }
    }
}
