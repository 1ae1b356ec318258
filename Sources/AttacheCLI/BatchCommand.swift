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
    var paths: [String]

    @OptionGroup var endpointSelection: EndpointOptions
    @OptionGroup var pipeline: PipelineOptions
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
        try flags.validate()
        guard !paths.isEmpty else { throw ValidationError("give at least one file or folder") }
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
            Console.err("attache: \(error) [\(error.code)]")
            throw ExitCode(ExitStatus.forError(error))
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

/// Quotes `word` for a POSIX shell when it needs it. A word with characters ``TerminalText`` escapes
/// is written in bash's `$'…'` form with those bytes as `\xHH`, so that the printed command holds no
/// control character and still names the same file when pasted into bash or zsh.
func shellQuoted(_ word: String) -> String {
    let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@%+,")
    if !word.isEmpty, word.allSatisfy({ safe.contains($0) }) { return word }
    guard TerminalText.needsEscaping(word) else {
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
    var quoted = "$'"
    for character in word {
        let text = String(character)
        if text == "'" || text == "\\" {
            quoted += "\\" + text
        } else if TerminalText.needsEscaping(text) {
            for byte in text.utf8 { quoted += "\\x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16) }
        } else {
            quoted += text
        }
    }
    return quoted + "'"
}

/// Turns the first of `signals` (SIGINT, and for `batch` SIGTERM too) into a cancellation of the run; a
/// second one exits at once (the journal is consistent at every commit, so nothing is lost but the in-flight
/// files' pending marks).
final class InterruptHandler {
    private let watch: SignalWatch

    init(signals numbers: [Int32] = [SIGINT], onInterrupt: @escaping @Sendable () -> Void) {
        watch = SignalWatch(
            numbers,
            first: { number in
                Console.clearStatus()
                let name = number == SIGINT ? "Ctrl-C" : "SIGTERM"
                Console.err("attache: stopping: no new files; cancelling the ones in flight (\(name) again to quit now)")
                onInterrupt()
            },
            again: { number in
                Console.clearStatus()
                Console.err("attache: quit; run the same command again to resume")
                exit(128 + number)
            })
    }

    var wasTriggered: Bool { watch.received != nil }

    /// The exit status of a run stopped by a signal: 128 + the first signal (130 for Ctrl-C, 143 for
    /// SIGTERM).
    var exitStatus: Int32 { 128 + (watch.received ?? SIGINT) }

    func stop() { watch.stop() }
}

/// Prints a batch's events: a live progress line, plain lines, or JSON lines.
final class BatchOutput {
    enum Mode { case terminal, plain, json }

    private let mode: Mode
    private let dryRun: Bool
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant
    private var lastDraw: ContinuousClock.Instant

    // Totals for the progress line.
    private var discoveredFiles = 0
    private var discoveredBytes: Int64 = 0
    private var discoveryDone = false
    private var finishedFiles = 0
    private var finishedBytes: Int64 = 0
    private var sentBytes: Int64 = 0
    private var failures = 0
    private var inFlight: [BatchFileID: (byteCount: Int64, fraction: Double)] = [:]
    private var waiting: Set<BatchFileID> = []

    init(mode: Mode, dryRun: Bool) {
        self.mode = mode
        self.dryRun = dryRun
        self.start = clock.now
        self.lastDraw = clock.now - .seconds(1)
    }

    func handle(_ event: BatchEvent) {
        track(event)
        switch mode {
        case .json:
            Console.outJSON(BatchEventLine(event))
        case .plain:
            if let line = line(for: event) { Console.out(line) }
            if case .finished(let summary) = event { printSummary(summary, to: Console.out) }
        case .terminal:
            if case .finished(let summary) = event {
                Console.clearStatus()
                printSummary(summary, to: Console.err)
                return
            }
            if case .failed = event, let line = line(for: event) {
                Console.clearStatus()
                Console.err(line)
                draw(force: true)
            } else {
                draw(force: false)
            }
        }
    }

    /// Clears the progress line before an error message.
    func abandon() {
        if mode == .terminal { Console.clearStatus() }
    }

    private func track(_ event: BatchEvent) {
        switch event {
        case .discovered(let file):
            discoveredFiles += 1
            discoveredBytes += file.byteCount
            waiting.insert(file.id)
        case .discoveryFinished:
            discoveryDone = true
        case .started(let file, _, _):
            inFlight[file.id] = (file.byteCount, 0)
        case .progress(let file, let progress):
            inFlight[file.id] = (file.byteCount, progress.fractionCompleted)
        case .succeeded(let file, let receipt):
            sentBytes += receipt.originalByteCount
            finish(file)
        case .skipped(let file, _), .wouldSend(let file, _):
            finish(file)
        case .failed(let file, _):
            failures += 1
            finish(file)
        case .retried, .finished:
            break
        }
    }

    /// Counts a file as done with, once; paths the walk reported without discovering them (a dangling
    /// link, a device) are not part of the totals.
    private func finish(_ file: BatchFile) {
        inFlight[file.id] = nil
        guard waiting.remove(file.id) != nil else { return }
        finishedFiles += 1
        finishedBytes += file.byteCount
    }

    private func line(for event: BatchEvent) -> String? {
        switch event {
        case .succeeded(let file, let receipt):
            var text = "sent \(file.path)"
            if let fileId = receipt.fileId { text += " as \(fileId)" }
            text += " (\(formatBytes(receipt.originalByteCount))"
            if receipt.sentByteCount != receipt.originalByteCount { text += " → \(formatBytes(receipt.sentByteCount))" }
            if receipt.attempts > 1 { text += ", \(receipt.attempts) attempts" }
            if receipt.replayed { text += ", already on the server" }
            if let resumable = receipt.resumable {
                text += ", \(resumable.protocolName)"
                if resumable.resumedBytes > 0 { text += ", resumed after \(formatBytes(resumable.resumedBytes))" }
            }
            if let skipped = receipt.transform.skipped { text += ", sent as it is: \(skipped)" }
            return text + ")"
        case .skipped(let file, let reason):
            return "skipped \(file.path): \(reason)"
        case .wouldSend(let file, let resumed):
            return "\(resumed ? "would resume" : "would send") \(file.path) (\(formatBytes(file.byteCount)))"
        case .failed(let file, let error):
            return "failed \(file.path): \(error.stage): \(error.message) [\(error.code)]"
        default:
            return nil
        }
    }

    private func draw(force: Bool) {
        let now = clock.now
        guard force || now - lastDraw >= .milliseconds(100) else { return }
        lastDraw = now
        Console.status(progressLine(now: now))
    }

    private func progressLine(now: ContinuousClock.Instant) -> String {
        let partial = inFlight.values.reduce(0.0) { $0 + Double($1.byteCount) * $1.fraction }
        let doneBytes = Double(finishedBytes) + partial
        let share = discoveredBytes > 0 ? min(1, doneBytes / Double(discoveredBytes)) : 0
        let width = 20
        let filled = Int(share * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let seconds = (now - start).seconds
        let sentNow = Double(sentBytes) + partial
        let rate = seconds > 0.5 ? sentNow / seconds : 0
        var parts = [
            "\(finishedFiles)/\(discoveredFiles)\(discoveryDone ? "" : "+") files",
            "[\(bar)] \(Int(share * 100))%",
            "\(formatBytes(Int64(doneBytes)))/\(formatBytes(discoveredBytes))",
        ]
        if rate > 0 {
            parts.append("\(formatBytes(Int64(rate)))/s")
            if discoveryDone {
                let remaining = max(0, Double(discoveredBytes) - doneBytes)
                parts.append("ETA \(formatDuration(remaining / rate))")
            }
        }
        if !inFlight.isEmpty { parts.append("\(inFlight.count) active") }
        if failures > 0 { parts.append("\(failures) failed") }
        return fitted(parts.joined(separator: "  "))
    }

    /// Cuts the line to the terminal's width so that it never wraps (a wrapped line cannot be redrawn
    /// in place).
    private func fitted(_ line: String) -> String {
        var size = winsize()
        let columns = ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 80
        return line.count < columns ? line : String(line.prefix(max(0, columns - 1)))
    }

    private func printSummary(_ summary: BatchSummary, to write: (String) -> Void) {
        var head = dryRun ? "dry run: \(summary.wouldSend) to send" : "\(summary.succeeded) sent"
        head += ", \(summary.alreadyDone) already done"
        if summary.skipped > 0 { head += ", \(summary.skipped) skipped" }
        head += ", \(summary.failed) failed"
        if summary.previouslyFailed > 0 { head += " (and \(summary.previouslyFailed) failed before; --retry-failed)" }
        head += " of \(summary.discovered) files in \(formatDuration(summary.seconds))"
        write(head)
        if summary.succeeded > 0 {
            var bytes = "bytes: \(formatBytes(summary.originalBytes)) read"
            if summary.sentBytes != summary.originalBytes { bytes += ", \(formatBytes(summary.sentBytes)) after recompression" }
            if summary.seconds > 0 {
                bytes += String(format: ", %.1f files/s", Double(summary.succeeded) / summary.seconds)
            }
            if summary.resumed > 0 { bytes += ", \(summary.resumed) resumed" }
            if summary.replayed > 0 { bytes += ", \(summary.replayed) already on the server" }
            write(bytes)
        }
        for failure in summary.failures {
            write("  failed \(failure.path): \(failure.stage): \(failure.message) [\(failure.code)]")
        }
        if summary.failed > summary.failures.count {
            write("  … and \(summary.failed - summary.failures.count) more (see the journal)")
        }
    }
}

/// Formats seconds as m:ss or h:mm:ss.
func formatDuration(_ seconds: Double) -> String {
    guard seconds.isFinite, seconds >= 0 else { return "-" }
    if seconds < 10 { return String(format: "%.1f s", seconds) }
    let total = Int(seconds.rounded())
    let (h, m, s) = (total / 3600, (total / 60) % 60, total % 60)
    return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
}

/// One batch event as one JSON object: `{"event":"succeeded","id":3,"path":...,"receipt":{...}}`.
struct BatchEventLine: Encodable {
    let event: BatchEvent
    init(_ event: BatchEvent) { self.event = event }

    private enum Key: String, CodingKey {
        case event, id, path, bytes, files, reason, code, stage, message, retryable, idempotencyKey, resumed
        case bytesSent, totalBytes, attempt, fraction, receipt, summary, resumedBytes
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        func file(_ file: BatchFile) throws {
            try c.encode(file.id.rawValue, forKey: .id)
            try c.encode(file.path, forKey: .path)
            try c.encode(file.byteCount, forKey: .bytes)
        }
        switch event {
        case .discovered(let f):
            try c.encode("discovered", forKey: .event)
            try file(f)
        case .discoveryFinished(let files, let bytes):
            try c.encode("discoveryFinished", forKey: .event)
            try c.encode(files, forKey: .files)
            try c.encode(bytes, forKey: .bytes)
        case .skipped(let f, let reason):
            try c.encode("skipped", forKey: .event)
            try file(f)
            try c.encode(reason.code, forKey: .reason)
            try c.encode(reason.description, forKey: .message)
        case .wouldSend(let f, let resumed):
            try c.encode("wouldSend", forKey: .event)
            try file(f)
            try c.encode(resumed, forKey: .resumed)
        case .started(let f, let key, let resumed):
            try c.encode("started", forKey: .event)
            try file(f)
            try c.encode(key, forKey: .idempotencyKey)
            try c.encode(resumed, forKey: .resumed)
        case .progress(let f, let progress):
            try c.encode("progress", forKey: .event)
            try file(f)
            try c.encode(progress.bytesSent, forKey: .bytesSent)
            try c.encode(progress.totalBytes, forKey: .totalBytes)
            try c.encode(progress.attempt, forKey: .attempt)
            try c.encode((progress.fractionCompleted * 1000).rounded() / 1000, forKey: .fraction)
            if progress.resumedBytes > 0 { try c.encode(progress.resumedBytes, forKey: .resumedBytes) }
        case .retried(let f, let attempt):
            try c.encode("retried", forKey: .event)
            try file(f)
            try c.encode(attempt, forKey: .attempt)
        case .succeeded(let f, let receipt):
            try c.encode("succeeded", forKey: .event)
            try file(f)
            try c.encode(receipt, forKey: .receipt)
        case .failed(let f, let error):
            try c.encode("failed", forKey: .event)
            try file(f)
            try c.encode(error.code.rawValue, forKey: .code)
            try c.encode(error.stage.rawValue, forKey: .stage)
            try c.encode(error.message, forKey: .message)
            try c.encode(error.isRetryable, forKey: .retryable)
        case .finished(let summary):
            try c.encode("finished", forKey: .event)
            try c.encode(summary, forKey: .summary)
        }
    }
}
