import AttacheMetricsExport
import Synchronization
import AttacheCore
import ArgumentParser
import Attache
import AttacheQueue
import Foundation
import Logging

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
