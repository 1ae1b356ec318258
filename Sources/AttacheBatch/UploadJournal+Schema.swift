import GRDB

/// The journal's schema, as the migrations that make it: each is applied once, in order, and recorded in
/// the database, so that a journal made by an older release is brought up to date when it is opened.
extension UploadJournal {
    /// The schema, one migration at a time, in order (applied by `openJournalDatabase`).
    static let migrations: [JournalMigration] = [
        JournalMigration(
            "v1",
            """
                CREATE TABLE run (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    startedAt REAL NOT NULL,
                    finishedAt REAL,
                    outcome TEXT
                );
                CREATE TABLE file (
                    path TEXT PRIMARY KEY NOT NULL,
                    size INTEGER,
                    mtime INTEGER,
                    sha256 TEXT,
                    state TEXT NOT NULL
                        CHECK (state IN ('pending', 'inFlight', 'done', 'failed', 'skipped')),
                    idempotencyKey TEXT,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    receipt TEXT,
                    errorCode TEXT,
                    errorStage TEXT,
                    errorMessage TEXT,
                    runId INTEGER REFERENCES run(id),
                    createdAt REAL NOT NULL,
                    updatedAt REAL NOT NULL,
                    startedAt REAL,
                    finishedAt REAL
                );
                CREATE INDEX file_state ON file(state);
            """),
        // The seal key and nonce seed of the upload in progress, committed with its idempotency key before
        // the first byte leaves, so that a resumed send regenerates identical bytes.
        JournalMigration("v2-seal-material", "ALTER TABLE file ADD COLUMN sealMaterial TEXT"),
        // A resumable upload in progress (tus or the IETF draft): its resource and the last offset the
        // server confirmed, so that a run killed mid-file continues it from the server's offset.
        JournalMigration(
            "v3-resumable",
            """
            ALTER TABLE file ADD COLUMN uploadProtocol TEXT;
            ALTER TABLE file ADD COLUMN uploadURL TEXT;
            ALTER TABLE file ADD COLUMN confirmedOffset INTEGER;
            """),
        // A multipart upload to an object store in progress: its upload id and the parts the store confirmed
        // (a ``MultipartRecord`` as JSON), so that a run killed mid-file continues that upload.
        JournalMigration("v4-multipart", "ALTER TABLE file ADD COLUMN multipartUpload TEXT"),
        // The content index (`--dedup reuse`): the source's SHA-256 and the settings' fingerprint, set when
        // a file is claimed for sending or takes a stored upload's receipt. A `done` row with it is a stored
        // upload another file with the same content may reuse.
        JournalMigration(
            "v5-content",
            """
            ALTER TABLE file ADD COLUMN contentKey TEXT;
            CREATE INDEX file_content ON file(contentKey, state);
            """),
        // What each run's walk took (`--include`, `--exclude`, sizes, `--hidden`), so that a run with
        // another filter says so.
        JournalMigration("v6-run-filter", "ALTER TABLE run ADD COLUMN filter TEXT"),
        // The content index is made by the first run that looks content up (`--dedup reuse` or `verify`,
        // ``UploadJournal/beginRun(filter:looksUpContent:)``), on the key alone, and kept from then on.
        // Every run writes the key (so that a later run with reuse finds what it sent); kept up by every
        // run, an index in SHA-256 order cost each file sent a page written at a random place, and with
        // `state` in it, one at each of the file's two state changes: about 3 more WAL pages a file.
        JournalMigration("v7-content-index-on-demand", "DROP INDEX IF EXISTS file_content"),
    ]
}
