package import Attache
public import AttacheCore
import Foundation
import PostgresNIO

/// Puts files into the shared queue: one row per file with its identity, a fresh idempotency key and
/// fresh seal material, so that whichever worker sends the file, and however often, it sends the same
/// bytes under the same key.
///
/// Walks files and folders with the batch's walker (same rules for symbolic links), makes every path
/// absolute (workers on other machines must see the files at the same path: a shared mount), and
/// inserts in batches. Enqueuing the same tree again adds nothing: a row is new only when its path,
/// size, modification time or SHA-256 is.
///
/// ```swift
/// try await QueueDatabase.withDatabase(connection) { database in
///     let summary = try await QueueEnqueuer(database: database).enqueue(["/mnt/old-storage/2019"])
///     print("\(summary.added) added, \(summary.alreadyQueued) already queued")
/// }
/// ```
public struct QueueEnqueuer: Sendable {
    /// How files are enqueued.
    public struct Configuration: Sendable {
        /// The scheme the seal material is made for; workers must seal with the same one.
        public var scheme: SealScheme = .streamGCM
        /// Follow symbolic links wherever they point (by default only inside the folder walked).
        public var followSymlinks = false
        /// Files up to this size get a SHA-256 in their identity (read once at enqueue time); larger ones
        /// are identified by path, size and modification time only. 0: never hash.
        public var hashLimit: Int64 = 16 * 1024 * 1024
        /// Rows per `INSERT`.
        public var batchSize = 500
        /// What the walk takes (by default all but hidden files and OS junk; ``AttacheCore/WalkFilter``).
        public var filter = WalkFilter()
        /// The threads that walk folders and hash files.
        package var pool: BlockingPool = .shared

        /// The defaults: `stream-gcm`, SHA-256 up to 16 MiB, 500 rows per insert.
        public init() {}
    }

    /// What one ``enqueue(_:onProblem:)`` did.
    public struct Summary: Sendable, Codable, Equatable {
        /// Regular files found.
        public var discovered = 0
        /// Rows added now.
        public var added = 0
        /// Files that already had a row with the same identity.
        public var alreadyQueued = 0
        /// Bytes of the files added.
        public var addedBytes: Int64 = 0
        /// Paths not enqueued: not regular files, links leaving the tree.
        public var skipped = 0
        /// Paths that could not be read.
        public var failed = 0
        /// Paths the filter left out, by reason (``AttacheCore/WalkFilter/Reason`` raw values).
        public var filtered: [String: Int] = [:]

        /// All zero.
        public init() {}
    }

    /// The queue written to.
    public let database: QueueDatabase
    /// The configuration in use.
    public let configuration: Configuration
    /// Where the enqueue span goes; its context is stored with each row for the job's span to link to.
    package var telemetry = Telemetry.bootstrapped

    /// Creates an enqueuer.
    public init(database: QueueDatabase, configuration: Configuration = Configuration()) {
        self.database = database
        self.configuration = configuration
    }

    /// Enqueues every regular file under `paths`.
    ///
    /// `onProblem` hears each path that was skipped or could not be read (the walk goes on).
    /// - Throws: ``AttacheError`` `.queue` when the database fails (rows inserted before stay: enqueuing
    ///   again adds only the rest).
    public func enqueue(
        _ paths: [String], onProblem: @Sendable (String, AttacheError) -> Void = { _, _ in }
    ) async throws -> Summary {
        try await telemetry.withSpan("attache.queue.enqueue") { _ in try await enqueueFiles(paths, onProblem: onProblem) }
    }

    private func enqueueFiles(
        _ paths: [String], onProblem: @Sendable (String, AttacheError) -> Void
    ) async throws -> Summary {
        try await database.requireCurrentSchema()
        let walker = FileWalker(roots: paths, followSymlinks: configuration.followSymlinks, filter: configuration.filter)
        let configuration = configuration
        var summary = Summary()
        var rows: [Row] = []
        while true {
            try Task.checkCancellation()
            let items = try await configuration.pool.run { walker.next(limit: 256) }
            if items.isEmpty { break }
            // Identities on the pool: a stat, and a read for the hash.
            let identified = try await configuration.pool.run { () -> [Identified] in
                items.map { item in
                    switch item {
                    case .file(let path, _):
                        let absolute = PathText.absolute(path)
                        do {
                            let source = try FileSource(path: path)
                            let hash =
                                source.byteCount <= configuration.hashLimit && configuration.hashLimit > 0
                                ? try ContentDigest.sha256Hex(of: source) : ""
                            return .file(
                                Row(
                                    path: absolute, byteCount: source.byteCount,
                                    modificationTime: source.modificationTime, sha256: hash))
                        } catch {
                            let failure =
                                (error as? AttacheError)?.concerning(path)
                                ?? AttacheError(.fileUnreadable, stage: .read, "\(error)", file: path)
                            return .problem(path, failure, skipped: false)
                        }
                    case .skipped(let path, let reason):
                        return .problem(path, AttacheError(.unsupportedInput, stage: .read, reason, file: path), skipped: true)
                    case .failed(let path, let code, let message):
                        return .problem(path, AttacheError(code, stage: .read, message, file: path), skipped: false)
                    case .filtered(_, let reason):
                        return .filtered(reason)
                    }
                }
            }
            for entry in identified {
                switch entry {
                case .file(let row):
                    summary.discovered += 1
                    rows.append(row)
                case .problem(let path, let error, let skipped):
                    if skipped { summary.skipped += 1 } else { summary.failed += 1 }
                    onProblem(path, error)
                case .filtered(let reason):
                    summary.filtered[reason.rawValue, default: 0] += 1
                }
            }
            while rows.count >= configuration.batchSize {
                let chunk = Array(rows.prefix(configuration.batchSize))
                rows.removeFirst(chunk.count)
                try await insert(chunk, into: &summary)
            }
        }
        if !rows.isEmpty { try await insert(rows, into: &summary) }
        return summary
    }

    struct Row: Sendable {
        var path: String
        var byteCount: Int64
        var modificationTime: Int64
        var sha256: String
    }

    enum Identified: Sendable {
        case file(Row)
        case problem(String, AttacheError, skipped: Bool)
        case filtered(WalkFilter.Reason)
    }

    /// One `INSERT … ON CONFLICT DO NOTHING` for `rows`; keys and material are made here, so a row that
    /// already exists keeps the ones it was first given.
    private func insert(_ rows: [Row], into summary: inout Summary) async throws {
        let scheme = configuration.scheme
        let keys = rows.map { _ in Uploader.makeIdempotencyKey() }
        let materials = rows.map { _ in SealMaterial.random(for: scheme).encoded }
        let schemes = Array(repeating: scheme.rawValue, count: rows.count)
        let paths = rows.map(\.path)
        let sizes = rows.map(\.byteCount)
        let times = rows.map(\.modificationTime)
        let hashes = rows.map(\.sha256)
        let context = QueueTraceContext.encode(telemetry.propagationFields()) ?? ""
        let traces = Array(repeating: context, count: rows.count)
        let inserted = try await database.run(
            """
            INSERT INTO attache_file (path, size, mtime_ns, sha256, idempotency_key, seal_material, scheme, trace_context)
            SELECT * FROM unnest(\(paths)::text[], \(sizes)::bigint[], \(times)::bigint[], \(hashes)::text[],
                                 \(keys)::text[], \(materials)::text[], \(schemes)::text[], \(traces)::text[])
            ON CONFLICT (path, size, mtime_ns, sha256) DO NOTHING
            RETURNING size
            """, "add files to the queue")
        var added = 0
        var bytes: Int64 = 0
        do {
            for try await size in inserted.decode(Int64.self) {
                added += 1
                bytes += size
            }
        } catch {
            throw QueueDatabase.failure(error, "add files to the queue", connection: database.connection)
        }
        summary.added += added
        summary.addedBytes += bytes
        summary.alreadyQueued += rows.count - added
    }
}
