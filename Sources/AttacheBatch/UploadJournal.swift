package import Attache
import AttacheCore
import Foundation
import GRDB

/// The durable record of a batch: one row per file with its identity, state, idempotency key, receipt or
/// error, in an SQLite database (WAL mode) through GRDB.
///
/// The journal is what makes a batch resumable and exactly-once. Before the first byte of a file is sent,
/// its row is committed as `inFlight` with the idempotency key the upload will carry; after the server
/// answers, the row is committed as `done` (with the receipt) or `failed` (with the error). A run killed
/// at any point leaves rows that the next run reads back: `done` files are skipped, `inFlight` and
/// `pending` ones are sent again with the key already stored, so the server deduplicates an upload that
/// reached it before the crash.
///
/// A file's identity is its absolute path, size, modification time and SHA-256. When any of those
/// differ from the row, the file counts as changed and is sent again under a new key.
///
/// By default commits use `synchronous = NORMAL` in WAL mode: they survive the process being killed at
/// any point, but an operating-system crash or power loss can lose the last few commits. Open with
/// `durable: true` (`synchronous = FULL`, one fsync per commit) to survive those too.
///
/// ```swift
/// let journal = try UploadJournal(path: "attache-journal.sqlite")
/// for entry in try journal.entries(in: .failed) {
///     print(entry.path, entry.errorCode ?? "-", entry.errorMessage ?? "")
/// }
/// ```
package final class UploadJournal: Sendable {
    /// The state of one file in the journal.
    package enum State: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
        /// Known, has a key, not being sent: interrupted by a cancellation, to be sent by the next run.
        case pending
        /// Being sent, or being sent when the process died; resumed with the same key.
        case inFlight
        /// Stored by the server; the receipt is kept.
        case done
        /// Failed; the error is kept. Sent again only with `retryFailed`.
        case failed
        /// Not a file the batch sends (a symlink leaving the tree, a device, a socket); the reason is kept.
        case skipped

        package var description: String { rawValue }
    }

    /// The database file.
    package let path: String
    let database: DatabaseQueue

    /// Opens the journal at `path`, creating it and its schema when missing and migrating an older one.
    ///
    /// - Parameters:
    ///   - readOnly: open without writing (for dry runs); the file must exist.
    ///   - durable: sync every commit to disk, so that not even a power loss forgets a stored key.
    /// - Throws: ``AttacheCore/AttacheError`` `.journal` when the file cannot be opened or is not a journal.
    package init(path: String, readOnly: Bool = false, durable: Bool = false) throws {
        self.path = path
        database = try openJournalDatabase(
            at: path, name: "journal", table: "file", stage: .batch, migrations: Self.migrations,
            configuration: journalConfiguration(label: "attache.journal", readOnly: readOnly, durable: durable))
    }

    // MARK: Reading

    /// The row for `path` (made absolute), if the journal has one.
    /// - Throws: ``AttacheCore/AttacheError`` `.journal`.
    package func entry(for path: String) throws -> JournalEntry? {
        let key = Self.absolute(path)
        return try access("read the journal") {
            try database.read { db in
                try Row.fetchOne(db.cachedStatement(sql: Self.selectFile), arguments: [key])
                    .map(JournalEntry.init(row:))
            }
        }
    }

    /// Every row, or the rows in `state`, ordered by path.
    ///
    /// Loads the rows into memory; for very large journals prefer ``counts()``.
    /// - Throws: ``AttacheCore/AttacheError`` `.journal`.
    package func entries(in state: State? = nil) throws -> [JournalEntry] {
        try access("read the journal") {
            try database.read { db in
                let rows: [Row]
                if let state {
                    rows = try Row.fetchAll(
                        db, sql: "SELECT * FROM file WHERE state = ? ORDER BY path", arguments: [state.rawValue])
                } else {
                    rows = try Row.fetchAll(db, sql: "SELECT * FROM file ORDER BY path")
                }
                return rows.map(JournalEntry.init(row:))
            }
        }
    }

    /// How many rows are in each state (states without rows are absent).
    /// - Throws: ``AttacheCore/AttacheError`` `.journal`.
    package func counts() throws -> [State: Int] {
        try access("read the journal") {
            try database.read { db in
                var counts: [State: Int] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM file GROUP BY state") {
                    if let state = State(rawValue: row["state"]) { counts[state] = row["n"] }
                }
                return counts
            }
        }
    }

    // MARK: Writing (the batch's steps; each one is its own committed transaction)

    /// Records the start of a run and returns its id. With `looksUpContent` (the run reuses stored
    /// uploads), the index of content keys is made first if the journal has none yet.
    func beginRun(filter: String = "", looksUpContent: Bool = false) throws -> Int64 {
        try access("start a run in the journal") {
            try database.write { db in
                if looksUpContent {
                    try db.execute(sql: "CREATE INDEX IF NOT EXISTS file_content_key ON file(contentKey)")
                }
                try db.execute(sql: "INSERT INTO run (startedAt, filter) VALUES (?, ?)", arguments: [Self.now(), filter])
                return db.lastInsertedRowID
            }
        }
    }

    /// The filter of the last run before `runID` (``AttacheCore/WalkFilter/description``), when there was one.
    package func previousFilter(before runID: Int64) throws -> String? {
        try access("read the journal") {
            try database.read { db in
                try String.fetchOne(
                    db, sql: "SELECT COALESCE(filter, '') FROM run WHERE id < ? ORDER BY id DESC LIMIT 1", arguments: [runID])
            }
        }
    }

    /// Records the end of a run.
    func finishRun(_ id: Int64, outcome: String) throws {
        try access("finish a run in the journal") {
            try database.write { db in
                try Self.execute(
                    db, sql: "UPDATE run SET finishedAt = ?, outcome = ? WHERE id = ?",
                    arguments: [Self.now(), outcome, id])
            }
        }
    }

    /// What the batch should do with a file, decided against its row.
    enum Decision: Sendable, Equatable {
        /// Send it with this key and seal material (already committed as `inFlight`); `resumed` when the
        /// key came from an earlier, unfinished send. The material is nil only in dry runs.
        case send(idempotencyKey: String, material: SealMaterial?, resumed: Bool)
        /// Unchanged and stored before.
        case alreadyDone
        /// Unchanged and failed before; the earlier error's code and message.
        case previouslyFailed(code: String, message: String)
        /// This run has already handled the same path (given twice).
        case duplicate
        /// The same content is stored already (``ContentReuse``): the row of that upload and its receipt.
        /// Nothing was written; ``markReused(path:identity:contentKey:receipt:runID:)`` records the reuse.
        indirect case reuse(sourcePath: String, receipt: UploadReceipt)
    }

    /// What a row says about a file with a given identity.
    private enum Verdict {
        case changed
        case done
        case failed(code: String, message: String)
        /// Send it, with the stored key and material when there are.
        case send(storedKey: String?, storedMaterial: String?, resumed: Bool)
    }

    private static func verdict(row: Row, identity: FileIdentity, retryFailed: Bool) -> Verdict {
        let same =
            (row["size"] as Int64?) == identity.byteCount
            && (row["mtime"] as Int64?) == identity.modificationTime
            && (row["sha256"] as String?) == identity.sha256
        guard same else { return .changed }
        let state = State(rawValue: row["state"]) ?? .pending
        switch state {
        case .done:
            return .done
        case .failed where !retryFailed:
            return .failed(code: row["errorCode"] ?? "unknown", message: row["errorMessage"] ?? "")
        default:
            let stored: String? = row["idempotencyKey"]
            return .send(
                storedKey: stored, storedMaterial: row["sealMaterial"],
                resumed: stored != nil && (state == .inFlight || state == .pending))
        }
    }

    /// Decides, without writing, what ``claim(path:identity:retryFailed:runID:)`` would do (dry runs).
    /// The key of a file that would get a new one is empty.
    func decide(path: String, identity: FileIdentity, retryFailed: Bool) throws -> Decision {
        let key = Self.absolute(path)
        return try access("read the journal") {
            try database.read { db in
                guard let row = try Row.fetchOne(db.cachedStatement(sql: Self.selectFile), arguments: [key]) else {
                    return .send(idempotencyKey: "", material: nil, resumed: false)
                }
                switch Self.verdict(row: row, identity: identity, retryFailed: retryFailed) {
                case .changed: return .send(idempotencyKey: "", material: nil, resumed: false)
                case .done: return .alreadyDone
                case .failed(let code, let message): return .previouslyFailed(code: code, message: message)
                case .send(let stored, _, let resumed):
                    return .send(idempotencyKey: stored ?? "", material: nil, resumed: resumed)
                }
            }
        }
    }

    /// Decides what to do with the file at `path` with `identity`; when it is to be sent, commits it as
    /// `inFlight` with its idempotency key and seal material before returning (the key and material of
    /// an unfinished send are kept).
    ///
    /// With `reuseStored`, a file to be sent whose `contentKey` a `done` row of another path has is not
    /// claimed: the decision is ``Decision/reuse(sourcePath:receipt:)``, the most recent such upload. A row
    /// whose receipt cannot be read is passed over.
    func claim(
        path: String, identity: FileIdentity, retryFailed: Bool, runID: Int64, scheme: SealScheme = .streamGCM,
        contentKey: String? = nil, reuseStored: Bool = false
    ) throws -> Decision {
        let key = Self.absolute(path)
        return try access("record a file in the journal") {
            try database.write { db in
                let row = try Row.fetchOne(db.cachedStatement(sql: Self.selectFile), arguments: [key])
                let now = Self.now()
                func storedCopy() throws -> Decision? {
                    guard reuseStored, let contentKey else { return nil }
                    let rows = try Row.fetchAll(
                        db.cachedStatement(sql: Self.selectStored), arguments: [contentKey, key])
                    for stored in rows {
                        let text: String = stored["receipt"]
                        guard let receipt = try? JSONDecoder().decode(UploadReceipt.self, from: Data(text.utf8)) else {
                            continue
                        }
                        return .reuse(sourcePath: stored["path"], receipt: receipt)
                    }
                    return nil
                }
                // An unfinished send of the same content by another path (a run killed mid-send, a send whose
                // answer was lost): its key and material are taken over, so that what reached the server is
                // answered again rather than stored a second time.
                func unfinishedCopy() throws -> (key: String, material: SealMaterial)? {
                    guard reuseStored, let contentKey else { return nil }
                    for other in try Row.fetchAll(
                        db.cachedStatement(sql: Self.selectUnfinished), arguments: [contentKey, key])
                    {
                        let otherKey: String? = other["idempotencyKey"]
                        let encoded: String? = other["sealMaterial"]
                        if let otherKey, let material = encoded.flatMap({ try? SealMaterial(encoded: $0) }),
                            material.suits(scheme)
                        {
                            return (otherKey, material)
                        }
                    }
                    return nil
                }
                if let row {
                    let runId: Int64? = row["runId"]
                    let state = State(rawValue: row["state"]) ?? .pending
                    if runId == runID, state != .pending {
                        return .duplicate
                    }
                    switch Self.verdict(row: row, identity: identity, retryFailed: retryFailed) {
                    case .changed:
                        break
                    case .done:
                        return .alreadyDone
                    case .failed(let code, let message):
                        return .previouslyFailed(code: code, message: message)
                    case .send(let stored, let storedMaterial, let resumed):
                        if let copy = try storedCopy() { return copy }
                        // A row from before seal material was journaled, or a failed send retried: the
                        // key is kept only together with the material it was used with.
                        let kept = storedMaterial.flatMap { try? SealMaterial(encoded: $0) }.flatMap {
                            $0.suits(scheme) ? $0 : nil
                        }
                        let keepKey = stored != nil && kept != nil
                        let adopted = keepKey ? nil : try unfinishedCopy()
                        let idempotencyKey = keepKey ? stored! : adopted?.key ?? Uploader.makeIdempotencyKey()
                        let material = keepKey ? kept! : adopted?.material ?? SealMaterial.random(for: scheme)
                        if !keepKey {
                            // Another key and material: an earlier resumable upload holds other bytes.
                            try Self.execute(
                                db, sql: "UPDATE file SET uploadProtocol = NULL, uploadURL = NULL, confirmedOffset = NULL, multipartUpload = NULL WHERE path = ?",
                                arguments: [key])
                        }
                        try Self.execute(
                            db, sql: """
                                UPDATE file SET state = 'inFlight', idempotencyKey = ?, sealMaterial = ?,
                                    attempts = attempts + 1, errorCode = NULL, errorStage = NULL, errorMessage = NULL,
                                    runId = ?, updatedAt = ?, startedAt = ?, finishedAt = NULL, contentKey = ?
                                WHERE path = ?
                                """,
                            arguments: [idempotencyKey, material.encoded, runID, now, now, contentKey, key])
                        return .send(
                            idempotencyKey: idempotencyKey, material: material,
                            resumed: (resumed && keepKey) || adopted != nil)
                    }
                }
                if let copy = try storedCopy() { return copy }
                // New or changed: a new upload under a new key, with new seal material (or those of an
                // unfinished send of the same content, taken over).
                let adopted = try unfinishedCopy()
                let idempotencyKey = adopted?.key ?? Uploader.makeIdempotencyKey()
                let material = adopted?.material ?? SealMaterial.random(for: scheme)
                try Self.execute(
                    db, sql: """
                        INSERT INTO file (path, size, mtime, sha256, state, idempotencyKey, sealMaterial, attempts,
                                          runId, createdAt, updatedAt, startedAt, contentKey)
                        VALUES (?, ?, ?, ?, 'inFlight', ?, ?, 1, ?, ?, ?, ?, ?)
                        ON CONFLICT(path) DO UPDATE SET
                            size = excluded.size, mtime = excluded.mtime, sha256 = excluded.sha256,
                            state = 'inFlight', idempotencyKey = excluded.idempotencyKey,
                            sealMaterial = excluded.sealMaterial, attempts = 1,
                            receipt = NULL, errorCode = NULL, errorStage = NULL, errorMessage = NULL,
                            uploadProtocol = NULL, uploadURL = NULL, confirmedOffset = NULL, multipartUpload = NULL,
                            runId = excluded.runId, updatedAt = excluded.updatedAt,
                            startedAt = excluded.startedAt, finishedAt = NULL, contentKey = excluded.contentKey
                        """,
                    arguments: [
                        key, identity.byteCount, identity.modificationTime, identity.sha256, idempotencyKey,
                        material.encoded, runID, now, now, now, contentKey,
                    ])
                return .send(idempotencyKey: idempotencyKey, material: material, resumed: adopted != nil)
            }
        }
    }

    /// Records the resumable upload of the file at `path` (its resource and the offset the server
    /// confirmed), or forgets it (nil: abandoned, started over).
    package func recordResumable(path: String, state: ResumableState?) throws {
        let key = Self.absolute(path)
        try access("record a resumable upload in the journal") {
            try database.write { db in
                try Self.execute(
                    db, sql: "UPDATE file SET uploadProtocol = ?, uploadURL = ?, confirmedOffset = ? WHERE path = ?",
                    arguments: [state?.protocolName.rawValue, state?.uploadURL, state?.offset, key])
            }
        }
    }

    /// The resumable upload recorded for the file at `path`, if any.
    package func resumableState(path: String) throws -> ResumableState? {
        let key = Self.absolute(path)
        return try access("read the journal") {
            try database.read { db in
                guard let row = try Row.fetchOne(db.cachedStatement(sql: Self.selectFile), arguments: [key]) else {
                    return nil
                }
                return JournalEntry.resumable(row)
            }
        }
    }

    /// Commits a file as stored, with its receipt.
    func markDone(path: String, receipt: UploadReceipt) throws {
        let json = Self.encode(receipt)
        try update(path: path, state: .done, set: "receipt = ?, finishedAt = ?", [json, Self.now()])
    }

    /// Commits a file as failed, with its error. Creates the row when the file failed before it was
    /// claimed (it vanished, could not be read or hashed).
    func markFailed(path: String, error: AttacheError, runID: Int64, identity: FileIdentity? = nil) throws {
        let key = Self.absolute(path)
        try access("record a failure in the journal") {
            try database.write { db in
                let now = Self.now()
                try Self.execute(
                    db, sql: """
                        INSERT INTO file (path, size, mtime, sha256, state, errorCode, errorStage, errorMessage,
                                          runId, createdAt, updatedAt, finishedAt)
                        VALUES (?, ?, ?, ?, 'failed', ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT(path) DO UPDATE SET
                            state = 'failed', errorCode = excluded.errorCode, errorStage = excluded.errorStage,
                            errorMessage = excluded.errorMessage, runId = excluded.runId,
                            updatedAt = excluded.updatedAt, finishedAt = excluded.finishedAt,
                            size = COALESCE(excluded.size, size), mtime = COALESCE(excluded.mtime, mtime),
                            sha256 = COALESCE(excluded.sha256, sha256)
                        """,
                    arguments: [
                        key, identity?.byteCount, identity?.modificationTime, identity?.sha256,
                        error.code.rawValue, error.stage.rawValue, error.message, runID, now, now, now,
                    ])
            }
        }
    }

    /// Puts an interrupted file back to `pending`, keeping its key for the next run.
    func markPending(path: String) throws {
        try update(path: path, state: .pending, set: "finishedAt = NULL", [])
    }

    /// Records a path the walk does not send, with the reason.
    func markSkipped(path: String, reason: String, runID: Int64) throws {
        let key = Self.absolute(path)
        try access("record a skipped path in the journal") {
            try database.write { db in
                let now = Self.now()
                try Self.execute(
                    db, sql: """
                        INSERT INTO file (path, state, errorCode, errorStage, errorMessage, runId, createdAt, updatedAt)
                        VALUES (?, 'skipped', 'skipped', 'batch', ?, ?, ?, ?)
                        ON CONFLICT(path) DO UPDATE SET
                            state = 'skipped', errorCode = 'skipped', errorStage = 'batch',
                            errorMessage = excluded.errorMessage, runId = excluded.runId, updatedAt = excluded.updatedAt
                        """,
                    arguments: [key, reason, runID, now, now])
            }
        }
    }

    private func update(path: String, state: State, set: String, _ values: [(any DatabaseValueConvertible)?]) throws {
        let key = Self.absolute(path)
        try access("update the journal") {
            try database.write { db in
                var arguments: [(any DatabaseValueConvertible)?] = [state.rawValue, Self.now()]
                arguments += values
                arguments.append(key)
                try Self.execute(
                    db, sql: "UPDATE file SET state = ?, updatedAt = ?\(set.isEmpty ? "" : ", " + set) WHERE path = ?",
                    arguments: StatementArguments(arguments))
            }
        }
    }

    // MARK: Helpers

    private static let selectFile = "SELECT * FROM file WHERE path = ?"
    /// The stored uploads of one content, other paths', most recent first.
    static let selectStored = """
        SELECT path, receipt FROM file
        WHERE contentKey = ? AND state = 'done' AND receipt IS NOT NULL AND path != ?
        ORDER BY finishedAt DESC LIMIT 4
        """

    /// The unfinished sends of one content, other paths'.
    private static let selectUnfinished = """
        SELECT idempotencyKey, sealMaterial FROM file
        WHERE contentKey = ? AND state IN ('inFlight', 'pending', 'failed') AND idempotencyKey IS NOT NULL
            AND sealMaterial IS NOT NULL AND path != ?
        ORDER BY startedAt LIMIT 4
        """

    static func encode(_ receipt: UploadReceipt) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(receipt)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// Runs one of the journal's few statements, compiled once per connection and kept: a batch of small
    /// files runs the same two or three statements thousands of times, and compiling each (SQLite's parser,
    /// GRDB's authorizer) cost more than running it.
    ///
    /// The arguments are bound as copies (`setArguments`): `execute(arguments:)` binds them without
    /// copying, through a generic function that recurses once per argument, which cost more than
    /// copying a path and a key (about 7,000 instructions a statement in a callgrind count).
    static func execute(_ db: Database, sql: String, arguments: StatementArguments) throws {
        let statement = try db.cachedStatement(sql: sql)
        try statement.setArguments(arguments)
        try statement.execute()
    }

    func access<T>(_ what: String, _ body: () throws -> T) throws -> T {
        try journalAccess(what, file: path, stage: .batch, body)
    }

    static func now() -> Double { Date().timeIntervalSince1970 }

    /// The journal's key for a path: absolute and standardized, symlinks kept as they are
    /// (`PathText.absolute(_:)`, the name the file walker and the shared queue use too).
    package static func absolute(_ path: String) -> String { PathText.absolute(path) }
}
