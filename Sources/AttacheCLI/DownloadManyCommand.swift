import AttacheMetricsExport
import ArgumentParser
import Attache
import AttacheBatch
import AttacheCore
import Foundation

/// `attache download URL... [-d DIR] [--from LIST] [--journal FILE] [--concurrency N]`, and the
/// single-file `attache download URL -o OUT`, which runs a ``SingleDownload``.
struct DownloadManyCommand: AsyncParsableCommand, PathListCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Download files, resumably, verified and optionally decrypted; many at a time.",
        discussion: """
            One URL with -o OUT downloads one file. The bytes collect in OUT.part and OUT appears only \
            when the download is complete and checked: against the size the server announced, against \
            its ETag when that is a SHA-256 (as attache-server sends), and, with --key-file/--key-env, \
            by decrypting and verifying the sealed bytes into OUT. A broken connection or a \
            408/429/5xx answer is retried with backoff, each attempt continuing where the last stopped \
            (Range). With --resume, an OUT.part left by an earlier run is continued too; without it, it \
            is discarded. With -o - (standard output) or an existing FIFO or device (such as \
            /dev/stdout), the bytes collect in a temporary folder instead and are written there only \
            once complete and checked; the summary line then goes to standard error.

            Several URLs, -d DIR or --from LIST run a download manager over all of them: --concurrency at a time, \
            each into NAME.part and renamed to NAME only once complete and verified (announced size, \
            a SHA-256 ETag, sha256=HEX when given), recorded in an SQLite journal (--journal, default \
            DIR/attache-downloads.sqlite). A run killed at any point resumes when the same command is \
            run again: finished files are skipped, the others continue from their .part files with \
            Range and If-Range, and start over only when the server's copy changed.

            --from LIST: one file per line, `URL [OUTPUT] [sha256=HEX] [key-env=VAR|key-file=PATH]`, \
            or JSON lines {"url":…,"output":…,"sha256":…,"keyEnv":…,"keyFile":…}; blank lines and \
            lines starting with # are skipped. OUTPUT is relative to -d; without it, the URL's last \
            path segment.

            An s3://BUCKET/KEY URL (alone, or mixed with https ones in a list) is fetched from an \
            object store with SigV4-signed GETs (each attempt, resumed ones too, signed anew), \
            credentials, region and endpoint found as for uploads to --url s3:// (AWS_* variables, the \
            shared files and --aws-profile, --region, --s3-endpoint).

            Ctrl-C pauses the transfers in flight (their bytes are kept) and exits 130; the same \
            command resumes. Exit status of one file with -o: 0 done; 64 usage, 65 bad data (hash \
            mismatch, failed decryption), 69 server unreachable or TLS failure, 74 cannot write OUT, \
            75 temporary failure (retries exhausted), 77 rejected by the server (404, 403, ...), 78 the \
            config file of --endpoint is wrong, 130 cancelled. Of several, as `attache batch`: 0 every \
            file downloaded (now or before), 3 some files failed, 64 usage, 74 the journal cannot be \
            opened or written, 75 another run holds the journal, 130 interrupted (the transfers are paused).
            """)

    @Argument(help: "The http://, https:// or s3://BUCKET/KEY URLs.")
    var urls: [String] = []

    @Option(name: .shortAndLong, help: ArgumentHelp(
        "With one URL: the file to create; - for standard output.", valueName: "file"))
    var output: String?

    @Option(name: .customShort("d"), help: ArgumentHelp("The folder for the files (default: .).", valueName: "dir"))
    var directory: String?

    @Option(name: .customLong("from"), help: ArgumentHelp("A list of files to download (see above).", valueName: "list"))
    var list: String?

    @Option(help: ArgumentHelp("The journal database (created when missing).", valueName: "file"))
    var journal: String?

    @Option(help: ArgumentHelp("Files downloaded at the same time.", valueName: "n"))
    var concurrency = 8

    @Option(help: ArgumentHelp("Files downloaded at the same time from one host (default: --concurrency).", valueName: "n"))
    var perHost: Int?

    @Flag(help: "With -o: continue OUT.part from an earlier run instead of starting over.")
    var resume = false

    @OptionGroup var key: DownloadKeyOptions

    @OptionGroup(title: "Object storage") var s3: S3AccessOptions

    @OptionGroup var connection: ConnectionOptions

    @OptionGroup var endpointSelection: EndpointOptions

    @OptionGroup(title: "Observability") var metrics: MetricsOptions

    @Option(help: ArgumentHelp(
        "The Matrix homeserver (https://matrix.example.org) that mxc://SERVER/ID URLs are fetched from, through its authenticated media API with the token from --bearer-env.",
        valueName: "homeserver"))
    var matrix: String?

    @Flag(help: "Print one JSON object per event (many files) or the receipt (one file).")
    var json = false

    @Flag(help: "Do not show progress on the terminal.")
    var noProgress = false

    /// One URL with -o and nothing of the manager's: the single-file command, unchanged.
    private var isSingle: Bool { output != nil && urls.count == 1 && list == nil && directory == nil && journal == nil }

    /// The single-file form (one URL and `-o`), from the options parsed here.
    var single: SingleDownload {
        SingleDownload(
            url: urls[0], output: output ?? "-", resume: resume, key: key, s3: s3, connection: connection,
            endpointSelection: endpointSelection, json: json, noProgress: noProgress)
    }

    mutating func validate() throws {
        CommandLinePaths.restore(&urls)
        urls = try urls.map(resolvingMatrix)
        if isSingle { return try single.validate() }
        if output != nil { throw ValidationError("-o names one file: give one URL, or use -d for several") }
        guard !urls.isEmpty || list != nil else { throw ValidationError("give at least one URL, or --from LIST") }
        for url in urls where !S3AccessOptions.isDownloadURL(url) {
            throw ValidationError("the URL must start with http://, https:// or s3://: \(url)")
        }
        guard (1...256).contains(concurrency) else { throw ValidationError("--concurrency must be 1 to 256") }
        if let perHost, !(1...256).contains(perHost) { throw ValidationError("--per-host must be 1 to 256") }
    }

    func run() async throws {
        try await metrics.serving(stopSignals: [SIGINT, SIGTERM]) { try await runDownloads() }
    }

    private func runDownloads() async throws {
        if isSingle { return try await single.run() }
        let folder = directory ?? "."
        let journalPath = journal ?? folder + "/attache-downloads.sqlite"
        let items: [DownloadItem]
        let endpoint: Endpoint
        var configuration = ConnectionConfiguration()
        do {
            endpoint = try endpointSelection.load()
            try connection.apply(to: &configuration, endpoint: endpoint, environment: CommandIO.environment)
            items = try makeItems(folder: folder, endpoint: endpoint)
        } catch let error as AttacheError {
            throw Console.failing(error)
        }
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            Console.err("attache: cannot create \(folder): \(error)")
            throw ExitCode(ExitStatus.ioError)
        }

        let store: DownloadJournal
        do {
            store = try DownloadJournal(path: journalPath)
        } catch let error as AttacheError {
            throw Console.failing(error)
        }
        let manager = DownloadManager(
            configuration: .init(maximumConcurrentTransfers: concurrency, maximumTransfersPerHost: perHost),
            connection: configuration, journal: store)
        let mode: DownloadOutput.Mode = json ? .json : (!noProgress && Console.stderrIsTerminal) ? .terminal : .plain
        let printer = Task { [events = manager.events] in
            let output = DownloadOutput(mode: mode)
            for await event in events { output.handle(event) }
            output.finish()
        }
        let interrupts = InterruptHandler { manager.pauseAll() }
        defer { interrupts.stop() }
        var summary = DownloadSummary()
        var journalError: AttacheError?
        do {
            // A Ctrl-C while a long list is being added pauses what was added and adds no more.
            for item in items where !interrupts.wasTriggered { try manager.add(item) }
            if interrupts.wasTriggered { manager.pauseAll() }
            summary = try await manager.waitUntilSettled()
        } catch let error as AttacheError {
            journalError = error
            manager.pauseAll()
            summary = (try? await manager.waitUntilSettled()) ?? summary
        }
        manager.close()
        await printer.value

        let head = "\(summary.completed) downloaded, \(summary.alreadyDone) already done, \(summary.failed) failed"
            + (summary.paused > 0 ? ", \(summary.paused) paused" : "") + " of \(items.count) files"
            + " (\(formatBytes(summary.transferredBytes)) fetched)"
        if json {
            Console.outJSON(SummaryLine(summary: summary, files: items.count))
        } else {
            Console.err(head)
        }
        if let journalError {
            throw Console.failing(journalError)
        }
        if interrupts.wasTriggered || summary.paused > 0 {
            Console.err("attache: paused; the bytes are kept. To resume, run the same command again.")
            throw ExitCode(ExitStatus.cancelled)
        }
        if summary.failed > 0 { throw ExitCode(ExitStatus.someFailed) }
    }

    /// `url`, or for `mxc://SERVER/ID` the homeserver's authenticated download URL of it.
    private func resolvingMatrix(_ url: String) throws -> String {
        guard url.hasPrefix("mxc://") else { return url }
        guard let matrix else { throw ValidationError("\(url): an mxc:// URL needs --matrix HOMESERVER") }
        guard let resolved = MatrixEndpoint(homeserver: matrix).downloadURL(of: url) else {
            throw ValidationError("not an mxc://SERVER/ID URL: \(url)")
        }
        return resolved
    }

    // MARK: Items

    private func makeItems(folder: String, endpoint: Endpoint) throws -> [DownloadItem] {
        var entries: [ListEntry] = urls.map { ListEntry(url: $0) }
        if let list {
            for var entry in try Self.readList(list) {
                entry.url = try resolvingMatrix(entry.url)
                entries.append(entry)
            }
        }
        let defaultKey = try key.unsealing(endpoint: endpoint)
        let store = try s3.store(for: entries.map(\.url), environment: CommandIO.environment)
        var seen: Set<String> = []
        var items: [DownloadItem] = []
        for entry in entries {
            let name = try entry.output ?? Self.name(from: entry.url)
            let destination = name.hasPrefix("/") ? name : folder + "/" + name
            let id = DownloadID(path: destination)
            guard seen.insert(id.path).inserted else {
                throw AttacheError(.invalidArgument, stage: .configuration, "two downloads go to the same file", file: destination)
            }
            var item = DownloadItem(url: entry.url, destination: destination, expectedSHA256: entry.sha256?.lowercased())
            item.headers = []
            if S3AccessOptions.isObjectURL(entry.url) { item.objectStore = store }
            let own = entry.keyFile != nil || entry.keyEnv != nil
            item.unsealing = own ? try key.unsealing(endpoint: endpoint, entryKeyFile: entry.keyFile, entryKeyEnv: entry.keyEnv) : defaultKey
            items.append(item)
        }
        return items
    }

    /// One line of a `--from` list.
    struct ListEntry: Decodable {
        var url: String
        var output: String?
        var sha256: String?
        var keyEnv: String?
        var keyFile: String?

        init(url: String) { self.url = url }
    }

    static func readList(_ path: String) throws -> [ListEntry] {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw AttacheError(.fileUnreadable, stage: .configuration, "cannot read the list: \(error.localizedDescription)", file: path)
        }
        var entries: [ListEntry] = []
        for (index, raw) in text.split(whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let place = "\(path):\(index + 1)"
            var entry: ListEntry
            if line.hasPrefix("{") {
                do {
                    entry = try JSONDecoder().decode(ListEntry.self, from: Data(line.utf8))
                } catch {
                    throw AttacheError(.invalidArgument, stage: .configuration, "not a JSON object with a url", file: place)
                }
            } else {
                let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                entry = ListEntry(url: words[0])
                for word in words.dropFirst() {
                    if word.hasPrefix("sha256=") {
                        entry.sha256 = String(word.dropFirst(7))
                    } else if word.hasPrefix("key-env=") {
                        entry.keyEnv = String(word.dropFirst(8))
                    } else if word.hasPrefix("key-file=") {
                        entry.keyFile = String(word.dropFirst(9))
                    } else if entry.output == nil, !word.contains("=") {
                        entry.output = word
                    } else {
                        throw AttacheError(.invalidArgument, stage: .configuration, "unexpected word '\(word)'", file: place)
                    }
                }
            }
            guard S3AccessOptions.isDownloadURL(entry.url) || entry.url.hasPrefix("mxc://") else {
                throw AttacheError(
                    .invalidArgument, stage: .configuration, "the URL must start with http://, https://, s3:// or mxc://",
                    file: place)
            }
            if let sha = entry.sha256, sha.count != 64 || !sha.allSatisfy(\.isHexDigit) {
                throw AttacheError(.invalidArgument, stage: .configuration, "sha256= needs 64 hex digits", file: place)
            }
            if entry.keyEnv != nil, entry.keyFile != nil {
                throw AttacheError(.invalidArgument, stage: .configuration, "give only one of key-env= and key-file=", file: place)
            }
            entries.append(entry)
        }
        return entries
    }

    /// The URL's last path segment, percent-decoded, as a file name; an `s3://` URL's as written (its key
    /// is not encoded).
    static func name(from url: String) throws -> String {
        let name: String
        if S3AccessOptions.isObjectURL(url) {
            name = url.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        } else {
            let path = URL(string: url)?.path ?? ""
            let last = path.split(separator: "/").last.map(String.init) ?? ""
            name = last.percentDecoded() ?? last
        }
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.contains("\0") else {
            throw AttacheError(
                .invalidArgument, stage: .configuration, "cannot name a file after this URL; give OUTPUT in --from", file: url)
        }
        return name
    }
}

/// The closing line of `--json`.
private struct SummaryLine: Encodable {
    let event = "finished"
    let summary: DownloadSummary
    let files: Int
}

/// Prints a download run's events: a live aggregate line, plain lines, or JSON lines.
final class DownloadOutput {
    enum Mode { case terminal, plain, json }

    private let mode: Mode
    private var lastDraw = ContinuousClock.now - .seconds(1)
    private var done = 0
    private var failed = 0
    private var active = 0

    init(mode: Mode) { self.mode = mode }

    func handle(_ event: DownloadEvent) {
        switch event {
        case .started: active += 1
        case .completed: done += 1; active -= 1
        case .alreadyDone: done += 1
        case .failed: failed += 1; active -= 1
        case .paused, .cancelled: active = max(0, active - 1)
        default: break
        }
        switch mode {
        case .json:
            Console.outJSON(DownloadEventLine(event))
        case .plain:
            if let line = line(for: event) { Console.out(line) }
        case .terminal:
            if case .failed = event, let line = line(for: event) {
                Console.clearStatus()
                Console.err(line)
            }
            if case .progress(_, _, let aggregate) = event {
                let now = ContinuousClock.now
                guard now - lastDraw >= .milliseconds(100) else { return }
                lastDraw = now
                var text = "\(done) done, \(active) active, \(failed) failed  \(formatBytes(aggregate.receivedBytes))"
                if let total = aggregate.totalBytes { text += "/\(formatBytes(total))" }
                if aggregate.bytesPerSecond > 0 { text += "  \(formatBytes(Int64(aggregate.bytesPerSecond)))/s" }
                if let eta = aggregate.secondsRemaining { text += "  ETA \(formatDuration(eta))" }
                Console.status(text)
            }
        }
    }

    func finish() {
        if mode == .terminal { Console.clearStatus() }
    }

    private func line(for event: DownloadEvent) -> String? {
        switch event {
        case .completed(let id, let receipt):
            var text = "downloaded \(id.path) (\(formatBytes(receipt.storedByteCount))"
            if receipt.resumedFrom > 0 { text += ", resumed at \(formatBytes(receipt.resumedFrom))" }
            return text + (receipt.sha256.map { ", sha256 \($0))" } ?? ")")
        case .alreadyDone(let id):
            return "already done \(id.path)"
        case .failed(let id, let error):
            return "failed \(id.path): \(error.stage): \(error.message) [\(error.code)]"
        case .paused(let id, let bytes):
            return "paused \(id.path) at \(formatBytes(bytes))"
        case .cancelled(let id):
            return "cancelled \(id.path)"
        default:
            return nil
        }
    }
}

/// One download event as one JSON object: `{"event":"completed","path":…,"receipt":{…}}`.
struct DownloadEventLine: Encodable {
    let event: DownloadEvent
    init(_ event: DownloadEvent) { self.event = event }

    private enum Key: String, CodingKey {
        case event, path, offset, bytes, totalBytes, bytesPerSecond, aggregate, receipt, code, stage, message
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch event {
        case .queued(let id):
            try c.encode("queued", forKey: .event)
            try c.encode(id.path, forKey: .path)
        case .alreadyDone(let id):
            try c.encode("alreadyDone", forKey: .event)
            try c.encode(id.path, forKey: .path)
        case .started(let id, let offset):
            try c.encode("started", forKey: .event)
            try c.encode(id.path, forKey: .path)
            try c.encode(offset, forKey: .offset)
        case .progress(let id, let figures, let aggregate):
            try c.encode("progress", forKey: .event)
            try c.encode(id.path, forKey: .path)
            try c.encode(figures.receivedBytes, forKey: .bytes)
            try c.encodeIfPresent(figures.totalBytes, forKey: .totalBytes)
            try c.encode(figures.bytesPerSecond.rounded(), forKey: .bytesPerSecond)
            try c.encode(aggregate, forKey: .aggregate)
        case .paused(let id, let bytes):
            try c.encode("paused", forKey: .event)
            try c.encode(id.path, forKey: .path)
            try c.encode(bytes, forKey: .bytes)
        case .completed(let id, let receipt):
            try c.encode("completed", forKey: .event)
            try c.encode(id.path, forKey: .path)
            try c.encode(receipt, forKey: .receipt)
        case .failed(let id, let error):
            try c.encode("failed", forKey: .event)
            try c.encode(id.path, forKey: .path)
            try c.encode(error.code.rawValue, forKey: .code)
            try c.encode(error.stage.rawValue, forKey: .stage)
            try c.encode(error.message, forKey: .message)
        case .cancelled(let id):
            try c.encode("cancelled", forKey: .event)
            try c.encode(id.path, forKey: .path)
        }
    }
}
