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
        Console.err("attache: \(QueueConnection.redacting(error.description)) [\(error.code)]")
        throw ExitCode(ExitStatus.forError(error))
    }
}

/// `attache enqueue PATH... --queue URL`
struct EnqueueCommand: AsyncParsableCommand, PathListCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Add every file under the given paths to the shared PostgreSQL queue that `attache worker`s take from.",
        discussion: """
            Walks files and folders like `attache batch` and inserts one row per file: its absolute path \
            (workers must read the files at the same path: a shared mount), size, modification time, \
            SHA-256 (up to --hash-limit), a new idempotency key and new seal material (the key the file \
            is encrypted with), so any worker sends the same bytes under the same key. Enqueuing the \
            same tree again adds nothing; a changed file is added as a new row.

            The queue's rows hold seal keys: give the database the care keys need (docs/SCALE.md).

            Exit status: 0 every file enqueued or already queued, 3 some paths could not be read, \
            64 usage, 69 the queue cannot be reached or has no tables (attache queue migrate).
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var queue: QueueOptions

    @Argument(help: "Files and folders to enqueue.", completion: .file())
    var paths: [String]

    @Option(help: ArgumentHelp("The scheme the seal material is made for; workers must use the same.", valueName: "scheme"))
    var scheme = SealScheme.streamGCM

    @Option(help: ArgumentHelp("Hash files up to this many bytes (0: never).", valueName: "bytes"))
    var hashLimit: Int64 = 16 * 1024 * 1024

    @Flag(help: "Follow symbolic links wherever they point.")
    var followSymlinks = false

    @Flag(help: "Print the summary (and each problem) as JSON lines.")
    var json = false

    mutating func validate() throws {
        CommandLinePaths.restore(&paths)
        guard !paths.isEmpty else { throw ValidationError("give at least one file or folder") }
        guard hashLimit >= 0 else { throw ValidationError("--hash-limit must be 0 or more") }
    }

    func run() async throws {
        let logger = global.bootstrapLogging()
        var configuration = QueueEnqueuer.Configuration()
        configuration.scheme = scheme
        configuration.hashLimit = hashLimit
        configuration.followSymlinks = followSymlinks
        let json = json
        let summary = try await withQueue(queue, logger: logger) { database in
            try await QueueEnqueuer(database: database, configuration: configuration).enqueue(paths) { path, error in
                if json {
                    Console.outJSON(ProblemLine(path: path, code: error.code.rawValue, message: error.message))
                } else {
                    Console.err("attache: \(path): \(error.message) [\(error.code)]")
                }
            }
        }
        if json {
            Console.outJSON(summary)
        } else {
            var line = "\(summary.added) added (\(formatBytes(summary.addedBytes))), \(summary.alreadyQueued) already queued"
            if summary.skipped > 0 { line += ", \(summary.skipped) skipped" }
            if summary.failed > 0 { line += ", \(summary.failed) unreadable" }
            Console.out(line + " of \(summary.discovered) files")
        }
        if summary.failed > 0 { throw ExitCode(ExitStatus.someFailed) }
    }

    struct ProblemLine: Encodable {
        var event = "problem"
        var path: String
        var code: String
        var message: String
    }
}

/// `attache worker --queue URL --url URL`
struct WorkerCommand: AsyncParsableCommand, PipelineCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Take files from the shared PostgreSQL queue and send them, alongside any number of other workers.",
        discussion: """
            Claims --claim-batch files at a time (FOR UPDATE SKIP LOCKED), holds each under a lease of \
            --lease seconds renewed every third of it, sends it through the pipeline with the idempotency \
            key and seal material stored at enqueue time, and commits the receipt under the lease's \
            fencing token. A worker that dies or stalls past its lease loses its files to the others; the \
            server's idempotency keys make the second send a replay, never a second copy. A file that \
            fails retryably goes back to the queue (after --retry-delay, doubled per attempt) until \
            --max-attempts, then is parked as failed (attache queue retry-failed).

            SIGTERM or Ctrl-C: no new files; the ones not started are handed back, the ones in flight \
            finish and are committed, then the worker exits 0. A second signal cancels the files in \
            flight and hands them back too (exit 130).

            Output: one line per file (--json: one JSON object per event) on stdout, a summary on stderr.
            Exit status: 0 stopped or drained, 64 usage, 69 the queue cannot be reached (or was lost \
            for longer than a lease), 130 stopped by a second signal.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var queue: QueueOptions
    @OptionGroup var endpointSelection: EndpointOptions
    @OptionGroup var pipeline: PipelineOptions
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var scanning: ScanOptions
    @OptionGroup(title: "Object storage") var objectStore: ObjectStoreOptions
    @OptionGroup(title: "Observability") var metrics: MetricsOptions

    @Option(help: ArgumentHelp("Files sent at the same time.", valueName: "n"))
    var concurrency = 4

    @Option(help: ArgumentHelp("Files claimed per round trip (default: --concurrency).", valueName: "n"))
    var claimBatch: Int?

    @Option(help: ArgumentHelp("Seconds a claim holds a file without a heartbeat.", valueName: "seconds"))
    var lease: Double = 60

    @Option(help: ArgumentHelp("Claims of one file before it is parked as failed.", valueName: "n"))
    var maxAttempts = 3

    @Option(help: ArgumentHelp("Seconds before a retryably failed file is claimed again (doubled per attempt).", valueName: "seconds"))
    var retryDelay: Double = 5

    @Flag(help: "Exit when no file is pending or claimed, instead of waiting for more.")
    var drain = false

    @Flag(help: "Print one JSON object per event, one per line.")
    var json = false

    @Option(help: ArgumentHelp("This worker's name in the queue (default: host-pid-random).", valueName: "id"))
    var workerId: String?

    @Flag(help: .hidden)
    var stubUploads = false

    func validate() throws {
        try flags.validate()
        guard (1...256).contains(concurrency) else { throw ValidationError("--concurrency must be 1 to 256") }
        if let claimBatch, !(1...1000).contains(claimBatch) { throw ValidationError("--claim-batch must be 1 to 1000") }
        guard lease >= 1, lease <= 86_400 else { throw ValidationError("--lease must be 1 to 86400 seconds") }
        guard maxAttempts >= 1 else { throw ValidationError("--max-attempts must be at least 1") }
        guard retryDelay >= 0 else { throw ValidationError("--retry-delay must be 0 or more") }
    }

    func run() async throws {
        try await metrics.serving { try await runWorker() }
    }

    private func runWorker() async throws {
        let logger = global.bootstrapLogging()
        let sender: any QueueFileSender
        if stubUploads {
            sender = StubQueueSender()
        } else {
            var pipelineConfiguration = try flags.resolvedConfiguration(retry: .batch, scanWait: 600)
            pipelineConfiguration.transformConcurrency = min(pipelineConfiguration.transformConcurrency, concurrency)
            sender = PipelineQueueSender(
                pipeline: try AttachmentPipeline(configuration: pipelineConfiguration, logger: logger),
                declaredKind: pipeline.kind)
        }
        var configuration = QueueWorkerConfiguration()
        if let workerId { configuration.workerID = workerId }
        configuration.concurrency = concurrency
        configuration.claimBatch = claimBatch ?? concurrency
        configuration.lease = .milliseconds(Int64(lease * 1000))
        configuration.maximumAttempts = maxAttempts
        configuration.retryDelay = .milliseconds(Int64(retryDelay * 1000))
        configuration.exitWhenDrained = drain
        let json = json
        let workerConfiguration = configuration
        let stoppedHard = Atomic<Bool>(false)

        let summary = try await withQueue(queue, logger: logger, maximumConnections: 3) { database in
            let worker = QueueWorker(database: database, sender: sender, configuration: workerConfiguration)
            let task = Task { try await worker.run { event in WorkerOutput.print(event, json: json) } }
            let signals = SignalWatch([SIGTERM, SIGINT]) { _ in
                Console.err("attache: stopping: no new files; finishing the ones in flight (again to cancel them)")
                worker.stop()
            } again: { _ in
                stoppedHard.store(true, ordering: .sequentiallyConsistent)
                Console.err("attache: cancelling the files in flight and handing them back")
                task.cancel()
            }
            defer { signals.stop() }
            return try await task.value
        }
        var line = "\(summary.succeeded) sent (\(formatBytes(summary.bytes))), \(summary.failed) failed"
        if summary.retried > 0 { line += ", \(summary.retried) to retry" }
        if summary.leaseLost > 0 { line += ", \(summary.leaseLost) taken over by other workers" }
        if summary.released > 0 { line += ", \(summary.released) handed back" }
        line += " in \(formatDuration(summary.seconds))"
        if json {
            Console.outJSON(WorkerOutput.SummaryLine(summary: summary))
        } else {
            Console.err(line)
        }
        if stoppedHard.load(ordering: .sequentiallyConsistent) { throw ExitCode(ExitStatus.cancelled) }
    }
}

/// A worker's events as lines.
enum WorkerOutput {
    struct EventLine: Encodable {
        var event: String
        var id: Int64?
        var path: String?
        var attempt: Int?
        var count: Int?
        var code: String?
        var stage: String?
        var message: String?
        var willRetry: Bool?
        var receipt: UploadReceipt?
    }

    struct SummaryLine: Encodable {
        var event = "finished"
        var summary: QueueWorkerSummary
    }

    static func print(_ event: QueueWorkerEvent, json: Bool) {
        switch event {
        case .claimed(let count):
            if json { Console.outJSON(EventLine(event: "claimed", count: count)) }
        case .succeeded(let job, let receipt):
            if json {
                Console.outJSON(EventLine(event: "succeeded", id: job.id, path: job.path, attempt: job.attempt, receipt: receipt))
            } else {
                var text = "sent \(job.path)"
                if let fileId = receipt.fileId { text += " as \(fileId)" }
                if receipt.replayed { text += " (already on the server)" }
                Console.out(text)
            }
        case .failed(let job, let error, let willRetry):
            if json {
                Console.outJSON(
                    EventLine(
                        event: "failed", id: job.id, path: job.path, attempt: job.attempt, code: error.code.rawValue,
                        stage: error.stage.rawValue, message: error.message, willRetry: willRetry))
            } else {
                Console.out(
                    "failed \(job.path): \(error.stage): \(error.message) [\(error.code)]"
                        + (willRetry ? " (will retry)" : ""))
            }
        case .leaseLost(let job):
            if json {
                Console.outJSON(EventLine(event: "leaseLost", id: job.id, path: job.path, attempt: job.attempt))
            } else {
                Console.out("taken over \(job.path): another worker holds it now")
            }
        case .released(let count):
            if json { Console.outJSON(EventLine(event: "released", count: count)) }
        }
    }
}

/// `attache queue status|receipts|retry-failed|migrate`
struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Look after the shared PostgreSQL queue: its schema, state, receipts and failed files.",
        subcommands: [QueueStatusCommand.self, QueueReceiptsCommand.self, QueueRetryFailedCommand.self, QueueMigrateCommand.self])
}

/// `attache queue migrate`
struct QueueMigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Create the queue's tables, or upgrade them to this version's schema.",
        discussion: "Safe to run while workers run and from several machines at once (an advisory lock serialises it).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var queue: QueueOptions

    func run() async throws {
        let logger = global.bootstrapLogging()
        let (applied, version) = try await withQueue(queue, logger: logger) { database in
            (try await database.migrate(), try await database.schemaVersion())
        }
        Console.out(
            applied.isEmpty
                ? "the queue's schema is current (version \(version))"
                : "applied \(applied.map { "version \($0)" }.joined(separator: ", ")); the schema is version \(version)")
    }
}

/// `attache queue status`
struct QueueStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Counts by state, files/s and bytes/s, the oldest lease, and each worker's activity.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var queue: QueueOptions

    @Option(help: ArgumentHelp("Measure rates over the last this many seconds.", valueName: "seconds"))
    var window = 300

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard window >= 1 else { throw ValidationError("--window must be at least 1 second") }
    }

    func run() async throws {
        let logger = global.bootstrapLogging()
        let window = window
        let status = try await withQueue(queue, logger: logger) { database in
            try await QueueInspector(database: database).status(window: .seconds(window))
        }
        if json {
            Console.outJSON(status)
            return
        }
        let counts = status.counts
        Console.out(
            "pending \(counts["pending"] ?? 0), claimed \(counts["claimed"] ?? 0), done \(counts["done"] ?? 0), "
                + "failed \(counts["failed"] ?? 0)")
        Console.out(
            "last \(formatDuration(Double(status.windowSeconds))): "
                + "\(formatRate(status.filesPerSecond)) files/s, \(formatBytes(Int64(status.bytesPerSecond)))/s")
        if let oldest = status.oldestClaimSeconds {
            Console.out("oldest claim: \(formatDuration(oldest)) ago; \(status.expiredLeases) leases expired")
        }
        for worker in status.workers {
            Console.out(
                "worker \(worker.id): \(worker.stopped ? "stopped" : "seen \(formatDuration(worker.secondsSinceHeartbeat)) ago"), "
                    + "holding \(worker.holding), \(formatRate(worker.filesPerSecond)) files/s, "
                    + "\(worker.filesDone) done, \(worker.filesFailed) failed")
        }
        for failure in status.recentFailures {
            Console.out("failed \(failure.path): \(failure.stage): \(failure.message) [\(failure.code)]")
        }
    }

    private func formatRate(_ rate: Double) -> String {
        rate >= 10 ? String(Int(rate.rounded())) : String((rate * 10).rounded() / 10)
    }
}

/// `attache queue receipts`
struct QueueReceiptsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receipts",
        abstract: "Print every done file with its receipt, seal key included (for the system that writes the chat messages).",
        discussion: """
            --json: one object per line, {"id":…,"path":…,"receipt":{…}} in id order; continue a later \
            read with --after the last id seen. Without --json: the path and the file id, tab-separated \
            (no keys). The receipts hold the keys that open the stored files: pipe them only where keys \
            may go.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var queue: QueueOptions

    @Option(help: ArgumentHelp("Only rows with an id above this one.", valueName: "id"))
    var after: Int64 = 0

    @Flag(help: "One JSON object per line, receipts and keys included.")
    var json = false

    func run() async throws {
        let logger = global.bootstrapLogging()
        let json = json
        let after = after
        try await withQueue(queue, logger: logger) { database in
            try await QueueInspector(database: database).receipts(after: after) { row in
                if json {
                    Console.outJSON(row)
                } else {
                    Console.out("\(row.path)\t\(row.receipt.fileId ?? "-")")
                }
            }
        }
    }
}

/// `attache queue retry-failed`
struct QueueRetryFailedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry-failed",
        abstract: "Put the files parked as failed back into the queue, keys and seal material kept.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var queue: QueueOptions

    @Option(help: ArgumentHelp("Only the files that failed with this error code.", valueName: "code"))
    var code: String?

    func run() async throws {
        let logger = global.bootstrapLogging()
        let code = code
        let count = try await withQueue(queue, logger: logger) { database in
            try await QueueInspector(database: database).retryFailed(code: code)
        }
        Console.out("\(count) failed files back in the queue")
    }
}
