import AttacheMetricsExport
import Synchronization
import AttacheCore
import ArgumentParser
import Attache
import AttacheQueue
import Foundation
import Logging

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
