import AttacheMetricsExport
import Synchronization
import AttacheCore
import ArgumentParser
import Attache
import AttacheQueue
import Foundation
import Logging

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
