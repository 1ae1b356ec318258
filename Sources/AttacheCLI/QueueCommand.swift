import ArgumentParser

/// `attache queue status|receipts|retry-failed|migrate`
struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Look after the shared PostgreSQL queue: its schema, state, receipts and failed files.",
        subcommands: [QueueStatusCommand.self, QueueReceiptsCommand.self, QueueRetryFailedCommand.self, QueueMigrateCommand.self])
}
