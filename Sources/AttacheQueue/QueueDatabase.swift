import AttacheCore
import Foundation
public import Logging
public import PostgresNIO

/// An open connection pool to the queue's PostgreSQL database, and the schema's migrations.
///
/// Open it with ``withDatabase(_:maximumConnections:logger:_:)``, which runs PostgresNIO's client for
/// the duration of the body and closes it afterwards. Every failure is an ``AttacheError`` with code
/// `.queue` and stage `.queue` whose message names the database by its redacted URL, never with the
/// password.
///
/// ```swift
/// var queue = try QueueConnection(parsing: "postgres://attache@127.0.0.1/attache")
/// queue.resolvePassword(environment: ProcessInfo.processInfo.environment)
/// try await QueueDatabase.withDatabase(queue) { database in
///     try await database.migrate()
///     print(try await database.status().counts)
/// }
/// ```
public final class QueueDatabase: Sendable {
    /// Where the database is.
    public let connection: QueueConnection
    /// PostgresNIO's pooled client; usable while ``withDatabase(_:maximumConnections:logger:_:)`` runs.
    public let client: PostgresClient
    let logger: Logger

    private init(connection: QueueConnection, client: PostgresClient, logger: Logger) {
        self.connection = connection
        self.client = client
        self.logger = logger
    }

    /// Connects (lazily, up to `maximumConnections` at once), checks that the database answers within the
    /// connection's timeout, runs `body`, and closes the pool.
    ///
    /// - Throws: ``AttacheError`` `.queue` when the database cannot be reached or refuses the
    ///   credentials; whatever `body` throws.
    public static func withDatabase<T: Sendable>(
        _ connection: QueueConnection, maximumConnections: Int = 4, logger: Logger = Logger(label: "attache.queue"),
        _ body: (QueueDatabase) async throws -> T
    ) async throws -> T {
        let configuration = try connection.clientConfiguration(maximumConnections: maximumConnections)
        // PostgresNIO logs its connection attempts at debug and its failures at error with the server's
        // words; its background logger stays quiet unless the caller's is verbose.
        var background = logger
        background.logLevel = max(logger.logLevel, .error)
        let client = PostgresClient(configuration: configuration, backgroundLogger: background)
        let database = QueueDatabase(connection: connection, client: client, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await database.ping()
            return try await body(database)
        }
    }

    /// Opens one connection outside the pool and runs `SELECT 1`: the pool retries a refused connection
    /// or a wrong password for ever, which is right for a worker that lost its database for a minute but
    /// not for a first contact with a mistyped host or a wrong password, which must be said at once.
    func ping() async throws {
        let connection = connection
        let configuration = try connection.connectionConfiguration()
        var quiet = logger
        quiet.logLevel = max(logger.logLevel, .error)
        do {
            let probe = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: quiet)
            do {
                try await probe.query("SELECT 1", logger: quiet)
            } catch {
                try? await probe.close()
                throw error
            }
            try? await probe.close()
        } catch {
            throw Self.failure(error, "reach the queue database", connection: connection)
        }
    }

    /// Runs `query`, turning PostgresNIO's errors into ``AttacheError`` `.queue` ("cannot `action`: …").
    @discardableResult
    func run(_ query: PostgresQuery, _ action: String) async throws -> PostgresRowSequence {
        do {
            return try await client.query(query, logger: logger)
        } catch {
            throw Self.failure(error, action, connection: connection)
        }
    }

    /// Runs `body` in one transaction (committed when it returns, rolled back when it throws).
    func transaction<T: Sendable>(_ action: String, _ body: (PostgresConnection) async throws -> sending T) async throws -> T {
        do {
            return try await client.withTransaction(logger: logger) { connection in try await body(connection) }
        } catch {
            throw Self.failure(error, action, connection: connection)
        }
    }

    // MARK: Migrations

    /// The schema version the database has (0 when the queue's tables were never created).
    /// - Throws: ``AttacheError`` `.queue`.
    public func schemaVersion() async throws -> Int {
        // Two statements: a query naming a missing table fails when it is planned, whatever its WHERE says.
        var exists = false
        for try await found in try await run(
            "SELECT to_regclass('attache_queue_migration') IS NOT NULL", "read the queue's schema version"
        ).decode(Bool.self) {
            exists = found
        }
        guard exists else { return 0 }
        let rows = try await run(
            "SELECT COALESCE(max(version), 0) FROM attache_queue_migration", "read the queue's schema version")
        for try await version in rows.decode(Int.self) { return version }
        return 0
    }

    /// Creates the queue's tables, or brings older ones up to this build's version; returns the versions
    /// applied now (empty when the schema was current).
    ///
    /// Safe to run from many processes at once: the first takes an advisory lock, the others wait for it
    /// and find nothing left to do.
    /// - Throws: ``AttacheError`` `.queue`, also when the database has a newer schema than this build knows.
    @discardableResult
    public func migrate() async throws -> [Int] {
        try await transaction("migrate the queue's schema") { connection in
            let logger = self.logger
            try await connection.query("SELECT pg_advisory_xact_lock(\(QueueSchema.migrationLockKey))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS attache_queue_migration (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """, logger: logger)
            var current = 0
            for try await version in try await connection.query(
                "SELECT COALESCE(max(version), 0) FROM attache_queue_migration", logger: logger
            ).decode(Int.self) {
                current = version
            }
            guard current <= QueueSchema.latestVersion else {
                throw AttacheError(
                    .queue, stage: .queue,
                    "the queue's schema is version \(current), newer than this attache knows "
                        + "(\(QueueSchema.latestVersion)): upgrade attache")
            }
            var applied: [Int] = []
            for migration in QueueSchema.migrations where migration.version > current {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO attache_queue_migration (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger)
                applied.append(migration.version)
            }
            return applied
        }
    }

    /// Checks that the schema is this build's, for commands that read or write rows.
    /// - Throws: ``AttacheError`` `.queue` naming `attache queue migrate` when it is missing or older.
    func requireCurrentSchema() async throws {
        let version = try await schemaVersion()
        if version < QueueSchema.latestVersion {
            throw AttacheError(
                .queue, stage: .queue,
                version == 0
                    ? "the queue at \(connection.redacted) has no tables yet: run attache queue migrate"
                    : "the queue's schema is version \(version), older than \(QueueSchema.latestVersion): run attache queue migrate")
        }
        if version > QueueSchema.latestVersion {
            throw AttacheError(
                .queue, stage: .queue,
                "the queue's schema is version \(version), newer than this attache knows (\(QueueSchema.latestVersion)): upgrade attache")
        }
    }

    // MARK: Errors

    /// An ``AttacheError`` `.queue` for a database failure: the server's own message and SQLSTATE when it
    /// answered, the connection failure otherwise. Never the password or the statement's values.
    static func failure(_ error: any Error, _ action: String, connection: QueueConnection) -> AttacheError {
        if let error = error as? AttacheError { return error }
        if error is CancellationError { return AttacheError(.cancelled, stage: .queue, "cancelled") }
        guard let error = error as? PSQLError else {
            return AttacheError(.queue, stage: .queue, "cannot \(action): \(error)", isRetryable: true)
        }
        if let message = error.serverInfo?[.message] {
            let state = error.serverInfo?[.sqlState] ?? "?"
            // Class 08 is a connection exception, 53 insufficient resources, 57 an operator intervention
            // (a restart), 40 a serialization failure or deadlock: all worth trying again.
            let retryable = ["08", "53", "57", "40"].contains(String(state.prefix(2)))
            return AttacheError(
                .queue, stage: .queue, "cannot \(action): \(message) [SQLSTATE \(state)] (\(connection.redacted))",
                isRetryable: retryable)
        }
        var reason = "\(error.code)"
        if let underlying = error.underlying { reason += ": \(underlying)" }
        return AttacheError(
            .queue, stage: .queue, "cannot \(action): \(reason) (\(connection.redacted))", isRetryable: true)
    }
}
