package import ArgumentParser
import Attache
import AttacheCore
import FoundationEssentials

/// `attache scan FILE... --clamd ADDRESS [--json]`: scans files with clamd, as the Scan stage of
/// `upload` would, and prints a verdict per file like `clamdscan`.
package struct ScanCommand: AsyncParsableCommand, PathListCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Scan files for malware with clamd, as upload's Scan stage does.",
        discussion: """
            Prints `path: OK`, `path: SIGNATURE FOUND` or `path: MESSAGE ERROR` per file as clamdscan \
            does, in the order the verdicts arrive, then a summary (--no-summary leaves it out). Folders \
            are scanned with everything under them, walked as batch walks them: a symbolic link is \
            followed only when it stays inside the folder, and what is not a regular file is printed as \
            `path: REASON SKIPPED`. With --json, prints one JSON object per line: path, verdict (clean, \
            infected, error or skipped), signature, engine, signatures, and code and error for a file that \
            was not scanned. Files go to clamd by descriptor over a UNIX socket and as streams \
            over TCP (--clamd-transfer), several at once (--concurrency), each connection a session that \
            serves many files. Exit status: 0 when every file is clean, 79 (infected) when any file is \
            infected, else the status of the first failure (docs/EXIT-STATUS.md).
            """)

    @Argument(help: "The files and folders to scan.")
    var files: [String] = []

    @OptionGroup var list: PathListOptions

    @OptionGroup(title: "Choosing files (hidden files are always scanned)") var walk: WalkOptions

    @Option(
        help: ArgumentHelp("clamd's address: unix:PATH or tcp:HOST:PORT (default: $ATTACHE_CLAMD).", valueName: "address"),
        transform: ScanOptions.parseAddress)
    var clamd: ClamdAddress?

    @Option(help: ArgumentHelp("How bytes reach clamd: auto (the default), stream or descriptor.", valueName: "mode"))
    var clamdTransfer = ClamAVScanner.Transfer.automatic

    @Option(help: ArgumentHelp("Sessions with clamd at once, each with up to 16 files by descriptor (default: 8).", valueName: "n"))
    var concurrency = 8

    @Option(help: ArgumentHelp("Seconds clamd may take to scan one file once it has it all (default: 300).", valueName: "seconds"))
    var scanTimeout: Double = 300

    @Flag(name: .long, help: "Print one JSON object per line.")
    var json = false

    @Flag(name: .long, help: "Print only infected files (and errors).")
    var infected = false

    @Flag(name: .long, help: "Leave out the summary.")
    var noSummary = false

    package mutating func validate() throws {
        CommandLinePaths.restore(&files)
        try list.appending(to: &files)
        if files.isEmpty { throw ValidationError("give at least one file (or --files-from)") }
        guard (1...256).contains(concurrency) else { throw ValidationError("--concurrency must be 1...256") }
        guard scanTimeout > 0 else { throw ValidationError("--scan-timeout must be positive") }
    }

    package func run() async throws {
        let address: ClamdAddress
        if let clamd {
            address = clamd
        } else if let text = CommandIO.environment["ATTACHE_CLAMD"], !text.isEmpty {
            address = try ScanOptions.parseAddress(text)
        } else {
            throw ValidationError("missing --clamd (or set ATTACHE_CLAMD)")
        }
        var client = ClamAVScanner.Configuration(address: address)
        client.transfer = clamdTransfer
        client.replyTimeout = .milliseconds(Int64(scanTimeout * 1000))
        client.idleSessions = concurrency
        let scanner = ClamAVScanner(configuration: client)
        defer { scanner.closeIdleSessions() }
        let start = ContinuousClock.now
        var tally = Tally()
        // The walk feeds the sessions as it goes, so that clamd has the first files at once. One blocking
        // thread per session takes files from it; by descriptor each keeps up to 16 requests unanswered
        // and sends the next file as soon as an answer frees a place, as clamdscan pipelines them;
        // streamed, one file at a time. The results come back here in runs, to be printed.
        // A scanner looks at hidden files too (what hides there is what it is for): only the globs and
        // sizes narrow the walk.
        var filter = walk.filter
        filter.includesHidden = true
        let walker = FileWalker(roots: files, followSymlinks: false, filter: filter)
        let (results, sink) = AsyncStream.makeStream(of: [Entry].self)
        let workers = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<concurrency {
                    group.addTask {
                        _ = try? await BlockingPool.shared.run { Self.scanFiles(from: walker, with: scanner, into: sink) }
                    }
                }
            }
            sink.finish()
        }
        // A run's lines in one write.
        for await run in results {
            let text = run.compactMap { entry -> String? in
                switch entry {
                case .result(let path, let result): line(path, result, into: &tally)
                case .unscanned(let item): notScanned(item, into: &tally)
                }
            }.joined()
            if !text.isEmpty { writeToStandardOutput(text) }
        }
        await workers.value
        if !json && !noSummary {
            let seconds = (ContinuousClock.now - start).seconds
            Console.out("")
            Console.out("----------- SCAN SUMMARY -----------")
            Console.out("Scanned files: \(tally.scanned)")
            Console.out("Infected files: \(tally.infected)")
            if tally.skipped > 0 { Console.out("Skipped: \(tally.skipped)") }
            if tally.filtered > 0 { Console.out("Left out by the filter: \(tally.filtered)") }
            if tally.errors > 0 { Console.out("Total errors: \(tally.errors)") }
            Console.out("Time: \(String(Double(Int(seconds * 1000)) / 1000)) sec")
        }
        if tally.infected > 0 { throw ExitCode(ExitStatus.infected) }
        if let status = tally.firstFailure { throw ExitCode(status) }
    }

    /// What a scanning thread hands on to be printed.
    private enum Entry: Sendable {
        /// A file's verdict, or its error naming it.
        case result(String, Result<ScanVerdict, AttacheError>)
        /// What the walk met that is not scanned.
        case unscanned(FileWalker.Item)
    }

    /// One session's thread: takes files from `walker` until it is done, scans them with `scanner`
    /// (pipelined by descriptor, else one by one) and yields the results to `sink` in runs: every 32, and
    /// whenever clamd has not answered for 50 ms, so that a slow file does not hold back the lines
    /// before it.
    private static func scanFiles(from walker: FileWalker, with scanner: ClamAVScanner, into sink: AsyncStream<[Entry]>.Continuation) {
        var run: [Entry] = []
        func flush() {
            if !run.isEmpty { sink.yield(run) }
            run.removeAll(keepingCapacity: true)
        }
        func add(_ entry: Entry) {
            run.append(entry)
            if run.count >= 32 { flush() }
        }
        // The next regular file of the walk, taken 16 at a time (the threads share the walk's lock); what
        // is not one is handed on as it is met.
        var taken: [FileWalker.Item] = []
        var nextTaken = 0
        func nextFile() -> String? {
            while true {
                if nextTaken == taken.count {
                    taken = walker.next(limit: 16)
                    nextTaken = 0
                    if taken.isEmpty { return nil }
                }
                let item = taken[nextTaken]
                nextTaken += 1
                if case .file(let path, _) = item { return path }
                add(.unscanned(item))
            }
        }
        defer { flush() }
        scanner.scanFilesBlocking(next: nextFile, deliver: { path, result in add(.result(path, result)) }, idle: flush)
    }

    private struct Tally {
        /// Paths the globs or sizes left out.
        var filtered = 0
        var scanned = 0
        var infected = 0
        var errors = 0
        var skipped = 0
        var firstFailure: Int32?
    }

    /// One JSON line of `--json`.
    private struct Line: Encodable {
        var path: String
        var verdict: String
        var signature: String?
        var engine: String?
        var signatures: String?
        var code: String?
        var error: String?
    }

    /// The output line of one file's result (nil when `--infected` leaves a clean file out), counted
    /// into `tally`.
    private func line(_ path: String, _ result: Result<ScanVerdict, AttacheError>, into tally: inout Tally) -> String? {
        switch result {
        case .success(let verdict):
            tally.scanned += 1
            let isInfected = verdict.outcome == .infected
            if isInfected { tally.infected += 1 }
            if json {
                return Console.json(
                    Line(
                        path: path, verdict: verdict.outcome.rawValue, signature: verdict.signature,
                        engine: verdict.version.engine, signatures: verdict.version.signatures)) + "\n"
            } else if isInfected {
                return TerminalText.escaping("\(path): \(verdict.signature ?? "unnamed") FOUND") + "\n"
            } else if !infected {
                return TerminalText.escaping("\(path): OK") + "\n"
            }
            return nil
        case .failure(let error):
            tally.errors += 1
            if tally.firstFailure == nil { tally.firstFailure = ExitStatus.forError(error) }
            if json {
                return Console.json(Line(path: path, verdict: "error", code: error.code.rawValue, error: error.message)) + "\n"
            }
            return TerminalText.escaping("\(path): \(error.message) ERROR") + "\n"
        }
    }

    /// The output line of a path the walk did not give as a file, counted into `tally`.
    private func notScanned(_ item: FileWalker.Item, into tally: inout Tally) -> String? {
        switch item {
        case .file:
            return nil
        case .skipped(let path, let reason):
            tally.skipped += 1
            if json { return Console.json(Line(path: path, verdict: "skipped", error: reason)) + "\n" }
            return infected ? nil : TerminalText.escaping("\(path): \(reason) SKIPPED") + "\n"
        case .failed(let path, let code, let message):
            return line(path, .failure(AttacheError(code, stage: .scan, message, file: path)), into: &tally)
        case .filtered:
            tally.filtered += 1
            return nil
        }
    }
}
