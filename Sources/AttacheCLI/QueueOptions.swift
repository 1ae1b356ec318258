import AttacheMetricsExport
import Synchronization
import AttacheCore
import ArgumentParser
import Attache
import AttacheQueue
import Foundation
import Logging

/// `--queue URL`, or `ATTACHE_QUEUE_URL`: where the shared queue is.
struct QueueOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The queue's PostgreSQL URL, without a password.",
            discussion: """
                postgres://USER@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require|verify-ca|verify-full\
                &sslrootcert=FILE]. Default: ATTACHE_QUEUE_URL. A password is refused here (the process list \
                shows arguments to every user): give it in ATTACHE_QUEUE_URL, PGPASSWORD or a passfile \
                (PGPASSFILE, else ~/.pgpass, mode 0600).
                """,
            valueName: "url"))
    var queue: String?

    func validate() throws {
        if queue == nil, CommandIO.environment["ATTACHE_QUEUE_URL"]?.isEmpty ?? true {
            throw ValidationError("missing --queue (or set ATTACHE_QUEUE_URL)")
        }
        if let queue {
            do {
                _ = try QueueConnection(parsing: queue, passwordAllowed: false)
            } catch let error as AttacheError {
                throw ValidationError(error.message)
            }
        }
    }

    /// The connection, its password resolved from the environment or the passfile.
    func connection() throws -> QueueConnection {
        let environment = CommandIO.environment
        var connection: QueueConnection
        do {
            if let queue {
                connection = try QueueConnection(parsing: queue, passwordAllowed: false)
            } else {
                connection = try QueueConnection(parsing: environment["ATTACHE_QUEUE_URL"] ?? "", passwordAllowed: true)
            }
        } catch let error as AttacheError {
            throw ValidationError(error.message)
        }
        connection.resolvePassword(environment: environment)
        return connection
    }
}

/// Runs `body` against the queue; an ``AttacheError`` becomes one line on stderr and its exit status.
func withQueue<T: Sendable>(
    _ options: QueueOptions, logger: Logger, maximumConnections: Int = 2, _ body: (QueueDatabase) async throws -> T
) async throws -> T {
    let connection = try options.connection()
    do {
        return try await QueueDatabase.withDatabase(connection, maximumConnections: maximumConnections, logger: logger, body)
    } catch let error as AttacheError {
        throw Console.failing(error, text: QueueConnection.redacting(error.description))
    }
}
