package import Attache
import AttacheCore
import Foundation
import GRDB

/// A ``DownloadManager``'s state in an SQLite database (WAL mode, through GRDB): one row per
/// destination with its URL, group, state, `If-Range` validator, expected SHA-256 and outcome.
///
/// With it, a download run killed at any point resumes in the next process: adding the same items
/// again skips the files that are done and continues the others from their `.part` files. The file is
/// created 0600 and locked (`<journal>.lock`, released by the kernel when the process ends) so that two
/// runs never share one journal.
///
/// ```swift
/// let journal = try DownloadJournal(path: "downloads.sqlite")
/// let manager = DownloadManager(journal: journal)
/// try manager.add(DownloadItem(url: "https://files.example.com/files/42", destination: "42.bin"))
/// _ = try await manager.waitUntilSettled()
/// ```
package final class DownloadJournal: DownloadJournaling {
    /// The database file.
    package let path: String
    private let database: DatabaseQueue
    private let lock: JournalLock?

    /// Opens (creating when missing) the journal at `path`.
    ///
    /// - Parameters:
    ///   - readOnly: open without writing or locking (to inspect a journal another run uses); the
    ///     file must exist.
    ///   - durable: sync every commit to disk (`synchronous = FULL`), to survive a power loss too.
    /// - Throws: ``AttacheCore/AttacheError`` `.journal` when the file cannot be opened or is not a journal,
    ///   `.journalBusy` when another process holds it.
    package init(path: String, readOnly: Bool = false, durable: Bool = false) throws {
        self.path = path
        lock = readOnly ? nil : try JournalLock(journalPath: path, holder: "attache download", stage: .download)
        database = try openJournalDatabase(
            at: path, name: "download journal", table: "download", stage: .download, migrations: Self.migrations,
            configuration: journalConfiguration(label: "attache.download-journal", readOnly: readOnly, durable: durable))
    }

    /// The record for the absolute `destination`.
    /// - Throws: ``AttacheCore/AttacheError`` `.journal`.
    package func record(for destination: String) throws -> DownloadRecord? {
        try access("read the download journal") {
            try database.read { db in
                try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT * FROM download WHERE destination = ?"), arguments: [destination]
                ).map(Self.record(row:))
            }
        }
    }

    /// Every record, or those in `state`, ordered by destination.
    /// - Throws: ``AttacheCore/AttacheError`` `.journal`.
    package func records(in state: DownloadRecord.State? = nil) throws -> [DownloadRecord] {
        try access("read the download journal") {
            try database.read { db in
                let rows =
                    if let state {
                        try Row.fetchAll(
                            db, sql: "SELECT * FROM download WHERE state = ? ORDER BY destination",
                            arguments: [state.rawValue])
                    } else {
                        try Row.fetchAll(db, sql: "SELECT * FROM download ORDER BY destination")
                    }
                return rows.map(Self.record(row:))
            }
        }
    }

    /// How many records are in each state (states without records are absent).
    /// - Throws: ``AttacheCore/AttacheError`` `.journal`.
    package func counts() throws -> [DownloadRecord.State: Int] {
        try access("read the download journal") {
            try database.read { db in
                var counts: [DownloadRecord.State: Int] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM download GROUP BY state") {
                    if let state = DownloadRecord.State(rawValue: row["state"]) { counts[state] = row["n"] }
                }
                return counts
            }
        }
    }

    /// Inserts or replaces `records` in one commit.
    /// - Throws: ``AttacheCore/AttacheError`` `.journal`.
    package func save(_ records: [DownloadRecord]) throws {
        guard !records.isEmpty else { return }
        try access("write the download journal") {
            try database.write { db in
                let statement = try db.cachedStatement(
                    sql: """
                        INSERT INTO download (destination, url, groupName, state, validator, expectedSHA256,
                                              totalBytes, sha256, errorCode, errorMessage, updatedAt)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT(destination) DO UPDATE SET
                            url = excluded.url, groupName = excluded.groupName, state = excluded.state,
                            validator = excluded.validator, expectedSHA256 = excluded.expectedSHA256,
                            totalBytes = excluded.totalBytes, sha256 = excluded.sha256,
                            errorCode = excluded.errorCode, errorMessage = excluded.errorMessage,
                            updatedAt = excluded.updatedAt
                        """)
                let now = Date().timeIntervalSince1970
                for record in records {
                    try statement.execute(arguments: [
                        record.destination, record.url, record.group, record.state.rawValue, record.validator,
                        record.expectedSHA256, record.totalBytes, record.sha256, record.errorCode,
                        record.errorMessage, now,
                    ])
                }
            }
        }
    }

    /// Releases the lock before the journal is deallocated (it is released then anyway).
    package func close() { lock?.unlock() }

    /// The schema, one migration at a time, in order (applied by `openJournalDatabase`).
    private static let migrations: [JournalMigration] = [
        JournalMigration(
            "download-v1",
            """
                CREATE TABLE download (
                    destination TEXT PRIMARY KEY NOT NULL,
                    url TEXT NOT NULL,
                    groupName TEXT NOT NULL,
                    state TEXT NOT NULL
                        CHECK (state IN ('queued', 'active', 'paused', 'done', 'failed', 'cancelled')),
                    validator TEXT,
                    expectedSHA256 TEXT,
                    totalBytes INTEGER,
                    sha256 TEXT,
                    errorCode TEXT,
                    errorMessage TEXT,
                    updatedAt REAL NOT NULL
                );
                CREATE INDEX download_state ON download(state);
            """),
    ]

    private static func record(row: Row) -> DownloadRecord {
        DownloadRecord(
            destination: row["destination"], url: row["url"], group: row["groupName"],
            state: DownloadRecord.State(rawValue: row["state"]) ?? .queued, validator: row["validator"],
            expectedSHA256: row["expectedSHA256"], totalBytes: row["totalBytes"], sha256: row["sha256"],
            errorCode: row["errorCode"], errorMessage: row["errorMessage"])
    }

    private func access<T>(_ what: String, _ body: () throws -> T) throws -> T {
        try journalAccess(what, file: path, stage: .download, body)
    }
}
