import AttacheMetricsExport
import AttacheCore
import ArgumentParser
import Attache
import AttacheBatch
import Foundation
import Logging

/// `attache batch PATH... --url URL`
struct BatchCommand: AsyncParsableCommand, PipelineCommand, PathListCommand {
    static let configuration = CommandConfiguration(
        commandName: "batch",
        abstract: "Send every file under the given paths, resumably, recording each one in a journal.",
        discussion: """
            Walks files and folders (symbolic links are followed only while they stay inside the folder, \
            unless --follow-symlinks), sends each file through the pipeline with --concurrency files at \
            a time, and records every file's state in an SQLite journal: by default \
            ./attache-journal.sqlite in the current directory, or --journal FILE. Each file's \
            Idempotency-Key is written to the journal before its first byte is sent, so a run that is \
            killed or interrupted resumes where it stopped when the same command is run again with the \
            same journal: stored files are skipped, interrupted ones are resumed with the same key (the \
            server deduplicates), changed files (size, time or content) are sent again.

            Output: a live progress line on a terminal, one line per file otherwise, or one JSON object \
            per event with --json; a summary at the end. Ctrl-C stops starting files, cancels the ones \
            in flight, leaves the journal consistent and prints the command that resumes.

            Exit status: 0 every file stored (now or before), 3 some files failed (now, or before and \
            not retried: see --retry-failed), 64 usage, 74 the journal cannot be opened or written, \
            78 the config file of --endpoint is wrong, 130 interrupted.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Files and folders to send.", completion: .file())
    var paths: [String] = []

    @OptionGroup var list: PathListOptions

    @OptionGroup var endpointSelection: EndpointOptions
    @OptionGroup var pipeline: PipelineOptions
    @OptionGroup(title: "Choosing files") var walk: WalkOptions
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var scanning: ScanOptions
    @OptionGroup(title: "Object storage") var objectStore: ObjectStoreOptions

    @OptionGroup(title: "Observability") var metrics: MetricsOptions

    @Option(help: ArgumentHelp(
        "The journal database (created when missing).", discussion: "Default: ./attache-journal.sqlite.",
        valueName: "file"))
    var journal = BatchConfiguration.defaultJournalPath

    @Option(help: ArgumentHelp("Files sent at the same time.", valueName: "n"))
    var concurrency = 4

    @Flag(help: "Print one JSON object per event, one per line.")
    var json = false

    @Flag(help: "Walk, hash and compare with the journal; send and record nothing.")
    var dryRun = false

    @Flag(help: "Send again the files that failed in an earlier run.")
    var retryFailed = false

    @Flag(help: "Sync every journal commit to disk, so that even a power loss cannot cause a second copy.")
    var durable = false

    @Flag(help: "Follow symbolic links wherever they point.")
    var followSymlinks = false









    @Flag(help: "Do not show the progress line on the terminal.")
    var noProgress = false

    mutating func validate() throws {
        CommandLinePaths.restore(&paths)
        try list.appending(to: &paths)
        try flags.validate()
        guard !paths.isEmpty else { throw ValidationError("give at least one file or folder (or --files-from)") }
        guard (1...256).contains(concurrency) else { throw ValidationError("--concurrency must be 1 to 256") }
        guard !journal.isEmpty else { throw ValidationError("--journal needs a file name") }
    }

    func run() async throws {
        // Ctrl-C and SIGTERM are the run's own (InterruptHandler): the run stops, its journal, receipts and
        // spans complete, and only then do the exporters flush.
        try await metrics.serving { try await runBatch() }
    }

    private func runBatch() async throws {
        let logger = global.bootstrapLogging()
        // A dry run sends nothing, so it needs no URL.
        let pipelineConfiguration = try flags.resolvedConfiguration(
            retry: .batch, url: dryRun ? "http://127.0.0.1/" : nil, scanWait: 600)

        var configuration = BatchConfiguration(
            pipeline: try AttachmentPipeline(configuration: pipelineConfiguration, logger: logger), journalPath: journal)
        configuration.concurrency = concurrency
        configuration.retryFailed = retryFailed
        configuration.dryRun = dryRun
        configuration.followSymlinks = followSymlinks
        configuration.durableJournal = durable
        configuration.declaredKind = pipeline.kind
        configuration.contentReuse = pipeline.dedup.contentReuse
        configuration.filter = walk.filter

        let batch = BatchUploader(configuration: configuration)
        let run = batch.run(paths)
        let interrupts = InterruptHandler(signals: [SIGINT, SIGTERM]) { run.cancel() }
        defer { interrupts.stop() }

        let mode: BatchOutput.Mode =
            json ? .json : (!noProgress && Console.stderrIsTerminal) ? .terminal : .plain
        let output = BatchOutput(mode: mode, dryRun: dryRun)
        var summary: BatchSummary?
        do {
            for try await event in run {
                output.handle(event)
                if case .finished(let finished) = event { summary = finished }
            }
        } catch let error as AttacheError {
            output.abandon()
            throw Console.failing(error)
        }
        guard let summary else { throw ExitCode(ExitStatus.internalError) }

        if summary.cancelled || interrupts.wasTriggered {
            Console.err("attache: interrupted; the journal is consistent. To resume, run:")
            Console.err("  \(resumeCommand())")
            throw ExitCode(interrupts.wasTriggered ? interrupts.exitStatus : ExitStatus.cancelled)
        }
        if summary.failed > 0 || summary.previouslyFailed > 0 {
            throw ExitCode(ExitStatus.someFailed)
        }
    }

    /// The command line that resumes this run: the same arguments, with the journal named absolutely.
    private func resumeCommand() -> String {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if !arguments.contains(where: { $0 == "--journal" || $0.hasPrefix("--journal=") }) {
            arguments += ["--journal", absolutePath(journal)]
        }
        return (["attache"] + arguments).map(shellQuoted).joined(separator: " ")
    }
}

private func absolutePath(_ path: String) -> String {
    path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
}
