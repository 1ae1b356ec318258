import AttacheMetricsExport
import Synchronization
import AttacheCore
import ArgumentParser
import Attache
import AttacheQueue
import Foundation
import Logging

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
