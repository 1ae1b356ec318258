import AttacheMetricsExport
import Synchronization
import AttacheCore
import ArgumentParser
import Attache
import AttacheQueue
import Foundation
import Logging

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
    @OptionGroup(title: "Choosing files") var walk: WalkOptions

    @Argument(help: "Files and folders to enqueue.", completion: .file())
    var paths: [String] = []

    @OptionGroup var list: PathListOptions

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
        try list.appending(to: &paths)
        guard !paths.isEmpty else { throw ValidationError("give at least one file or folder (or --files-from)") }
        guard hashLimit >= 0 else { throw ValidationError("--hash-limit must be 0 or more") }
    }

    func run() async throws {
        let logger = global.bootstrapLogging()
        var configuration = QueueEnqueuer.Configuration()
        configuration.scheme = scheme
        configuration.hashLimit = hashLimit
        configuration.followSymlinks = followSymlinks
        configuration.filter = walk.filter
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
            let filtered = summary.filtered.values.reduce(0, +)
            if filtered > 0 {
                line += ", \(filtered) left out by the filter ("
                    + WalkFilter.Reason.allCases.compactMap { reason in
                        summary.filtered[reason.rawValue].map { "\($0) \(reason.rawValue)" }
                    }.joined(separator: ", ") + ")"
            }
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
