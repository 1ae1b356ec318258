/// The queue's tables, as an ordered list of migrations; `attache queue migrate` (or
/// ``QueueDatabase/migrate()``) applies the ones a database lacks, each in its own transaction, under an
/// advisory lock so that two workers starting together do not both apply one.
///
/// Append new migrations at the end; never edit one that was released. docs/SCALE.md explains every
/// column.
enum QueueSchema {
    struct Migration: Sendable {
        let version: Int
        let name: String
        let statements: [String]
    }

    /// Taken (transaction-scoped) while migrating.
    static let migrationLockKey: Int64 = 0x6174_7461_6368_6571  // "attacheq"

    static let migrations: [Migration] = [
        Migration(
            version: 1, name: "files, leases and workers",
            statements: [
                """
                CREATE TABLE attache_file (
                    id bigserial PRIMARY KEY,
                    path text NOT NULL,
                    size bigint NOT NULL,
                    mtime_ns bigint NOT NULL,
                    sha256 text NOT NULL DEFAULT '',
                    idempotency_key text NOT NULL UNIQUE,
                    seal_material text NOT NULL,
                    scheme text NOT NULL,
                    state text NOT NULL DEFAULT 'pending'
                        CHECK (state IN ('pending', 'claimed', 'done', 'failed')),
                    attempts integer NOT NULL DEFAULT 0,
                    not_before timestamptz,
                    worker_id text,
                    lease_token bigint,
                    locked_until timestamptz,
                    heartbeat_at timestamptz,
                    receipt jsonb,
                    sent_bytes bigint,
                    error_code text,
                    error_stage text,
                    error_message text,
                    enqueued_at timestamptz NOT NULL DEFAULT now(),
                    claimed_at timestamptz,
                    finished_at timestamptz
                )
                """,
                // Enqueuing the same tree twice adds nothing: a file is new when its path or identity is.
                "CREATE UNIQUE INDEX attache_file_identity ON attache_file (path, size, mtime_ns, sha256)",
                // What workers scan: only the open rows, in enqueue order; done rows never enter it.
                "CREATE INDEX attache_file_open ON attache_file (id) WHERE state IN ('pending', 'claimed')",
                // Rates over the last minutes (`queue status`).
                "CREATE INDEX attache_file_finished ON attache_file (finished_at) WHERE state = 'done'",
                "CREATE INDEX attache_file_failed ON attache_file (id) WHERE state = 'failed'",
                // Leases: the oldest, the expired, who holds what.
                "CREATE INDEX attache_file_claimed ON attache_file (locked_until) WHERE state = 'claimed'",
                // Fencing tokens: every claim takes a new one, so a lease taken over can be told apart.
                "CREATE SEQUENCE attache_lease_token",
                """
                CREATE TABLE attache_worker (
                    id text PRIMARY KEY,
                    host text NOT NULL,
                    pid integer NOT NULL,
                    started_at timestamptz NOT NULL DEFAULT now(),
                    heartbeat_at timestamptz NOT NULL DEFAULT now(),
                    stopped_at timestamptz,
                    files_done bigint NOT NULL DEFAULT 0,
                    bytes_done bigint NOT NULL DEFAULT 0,
                    files_failed bigint NOT NULL DEFAULT 0
                )
                """,
            ]),
        Migration(
            version: 2, name: "trace context of the enqueuing span",
            statements: [
                // W3C `traceparent`/`tracestate` of the span that enqueued the file (when tracing was on), so
                // that the job's span links back to it.
                "ALTER TABLE attache_file ADD COLUMN trace_context text"
            ]),
        Migration(
            version: 3, name: "multipart upload in progress",
            statements: [
                // A multipart upload to an object store in progress (its upload id and the parts the store
                // confirmed, as JSON), so that the next worker to claim the row continues that upload.
                "ALTER TABLE attache_file ADD COLUMN multipart_upload text"
            ]),
        Migration(
            version: 4, name: "content index",
            statements: [
                // Content reuse (`worker --dedup reuse`): one row per content key (the source's SHA-256 and
                // the settings' fingerprint): `sending` with the key and seal material of the send under
                // way or unfinished, then `done` with its receipt. Workers take turns on a content under an
                // advisory lock; the primary key keeps one row.
                """
                CREATE TABLE attache_content (
                    content_key text PRIMARY KEY,
                    state text NOT NULL CHECK (state IN ('sending', 'done')),
                    idempotency_key text NOT NULL,
                    seal_material text NOT NULL,
                    receipt jsonb,
                    updated_at timestamptz NOT NULL DEFAULT now()
                )
                """
            ]),
    ]

    /// The newest version this build knows.
    static var latestVersion: Int { migrations.last?.version ?? 0 }
}
