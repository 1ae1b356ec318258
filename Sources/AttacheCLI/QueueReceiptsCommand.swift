import AttacheMetricsExport
import Synchronization
import AttacheCore
import ArgumentParser
import Attache
import AttacheQueue
import Foundation
import Logging

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
