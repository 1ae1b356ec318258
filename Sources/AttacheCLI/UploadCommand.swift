import AttacheCore
package import AttacheMetricsExport
package import ArgumentParser
package import Attache
import FoundationEssentials
import Glibc
import Logging

/// `attache upload FILE... --url URL`
package struct UploadCommand: AsyncParsableCommand, PipelineCommand, PathListCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "upload",
        abstract: "Send files through the pipeline and print one receipt per file.",
        discussion: """
            Each file is detected, transformed, sealed and posted as multipart/form-data to --url, \
            streamed from disk with an exact Content-Length. Temporary failures (connection lost, \
            408/429/5xx) are retried with exponential backoff and jitter, honouring Retry-After, with \
            the same Idempotency-Key on every attempt. Receipts are printed in the order the files \
            were given; --json prints one JSON object per line (failures too, with "status":"error").

            Each file is sealed with a fresh key unless --key-file or --key-env gives one. That key \
            opens the stored file, so it belongs in the chat message, not in a terminal's scrollback or \
            a log: the text receipts leave it out unless --show-keys is given, and --json receipts carry \
            it in seal.key for the program that writes the messages.

            --endpoint NAME starts from an endpoint of the config file (TOML; --config FILE, else \
            $ATTACHE_CONFIG, else ~/.config/attache/config.toml): its url, fields, headers and the \
            environment variables holding its secrets, TLS, seal, timeouts and attempts. Flags given as \
            well override it.

            Exit status: 0 all files stored; otherwise the status of the first failed file: \
            64 usage, 65 bad input, 66 cannot read a file, 69 server unreachable or TLS failure, \
            75 temporary failure (retries exhausted, timed out), 76 unusable server answer, \
            77 rejected by the server, 78 the config file is wrong, 80 the server refused the \
            credentials (401), 130 cancelled.
            """)

    @OptionGroup package var global: GlobalOptions

    @Argument(help: "Files to send.", completion: .file())
    package var files: [String] = []

    @OptionGroup package var list: PathListOptions

    @OptionGroup package var endpointSelection: EndpointOptions
    @OptionGroup package var pipeline: PipelineOptions
    @OptionGroup package var connection: ConnectionOptions
    @OptionGroup package var scanning: ScanOptions
    @OptionGroup(title: "Object storage") package var objectStore: ObjectStoreOptions

    @OptionGroup(title: "Observability") package var otlp: OTLPOptions

    @Option(help: ArgumentHelp("Files sent at the same time.", valueName: "n"))
    package var concurrency = 4

    @Option(
        help: ArgumentHelp(
            "Idempotency-Key to send (one file only); a random key per file otherwise. The seal key and nonce "
                + "seed used with it are kept (0600) in --seal-material-dir, so sending again under the same key "
                + "sends identical bytes and the receipt's key opens what the server stored.",
            valueName: "key"))
    package var idempotencyKey: String?

    @Option(
        help: ArgumentHelp(
            "Where the seal material of --idempotency-key uploads is kept (default: "
                + "$XDG_STATE_HOME/attache/seal-material or ~/.local/state/attache/seal-material).",
            valueName: "dir"))
    package var sealMaterialDir: String?

    @Flag(help: "Print one JSON object per line.")
    package var json = false

    @Flag(help: "Print each file's seal key in the text receipts too (--json receipts always carry it).")
    package var showKeys = false

    @Flag(help: "Do not show progress on the terminal.")
    package var noProgress = false

    package mutating func validate() throws {
        CommandLinePaths.restore(&files)
        try list.appending(to: &files)
        guard !files.isEmpty else { throw ValidationError("give at least one file (or --files-from)") }
        try flags.validate()
        // With a {sha256} key template the bucket is the index.
        if objectStore.keyTemplate?.contains("{sha256}") != true { try pipeline.refuseContentReuse(in: "upload") }
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
        if idempotencyKey != nil, files.count != 1 {
            throw ValidationError("--idempotency-key can be given for one file only")
        }
    }

    package func run() async throws {
        try await otlp.exporting(stopSignals: [SIGINT, SIGTERM]) { try await runUpload() }
    }

    private func runUpload() async throws {
        let logger = global.bootstrapLogging()
        let configuration = try flags.resolvedConfiguration()
        let pipeline = try AttachmentPipeline(configuration: configuration, logger: logger)

        // An upload under a caller's idempotency key may be a second send of an earlier one: its seal
        // material is made durable before anything is sent, and found again the next time.
        var material: (material: SealMaterial, existed: Bool)?
        // A resumable upload's resource and confirmed offset, and a multipart upload's id and the parts
        // the store confirmed, are kept next to the material, so the same command run again continues a
        // large file where the first run stopped.
        var journal: (any SendJournal)?
        if let idempotencyKey {
            do {
                let store = try SealMaterialStore(directory: sealMaterialDir ?? SealMaterialStore.defaultDirectory)
                store.prune(olderThan: .seconds(7 * 24 * 3600))
                let scope = configuration.url + " " + configuration.seal.scheme.rawValue
                material = try store.material(
                    forKey: idempotencyKey, scope: scope, scheme: configuration.seal.scheme)
                journal = store.journal(forKey: idempotencyKey, scope: scope, continuesEarlierSend: material?.existed ?? false)
            } catch let error as AttacheError {
                throw Console.failing(error)
            }
        }

        let showProgress = !noProgress && !json && Console.stderrIsTerminal
        let board = ProgressBoard(enabled: showProgress)
        let outcomes = await sendAll(pipeline: pipeline, board: board, material: material?.material, journal: journal)
        board.finish()

        var firstFailure: AttacheError?
        var keysLeftOut = false
        for (path, outcome) in zip(files, outcomes) {
            switch outcome {
            case .success(let receipt):
                if json {
                    Console.outJSON(ReceiptLine(receipt))
                } else {
                    Console.out(describe(receipt))
                    keysLeftOut = keysLeftOut || (receipt.seal.key != nil && !showKeys)
                }
            case .failure(let error):
                if firstFailure == nil { firstFailure = error }
                if json { Console.outJSON(FailureLine(path: path, error: error)) }
                Console.err("attache: \(error) [\(error.code)]")
            }
        }
        if keysLeftOut {
            Console.err("attache: the keys that open these files are not shown; use --json or --show-keys to get them")
        }
        if let firstFailure {
            throw ExitCode(ExitStatus.forError(firstFailure))
        }
    }

    private func sendAll(
        pipeline: AttachmentPipeline, board: ProgressBoard, material: SealMaterial?, journal: (any SendJournal)?
    ) async -> [Result<UploadReceipt, AttacheError>] {
        await withTaskGroup(of: (Int, Result<UploadReceipt, AttacheError>).self) { group in
            var results = [Result<UploadReceipt, AttacheError>?](repeating: nil, count: files.count)
            var next = 0
            func start(_ index: Int) {
                let attachment = Attachment(
                    path: files[index], declaredKind: self.pipeline.kind, idempotencyKey: idempotencyKey,
                    sealMaterial: material)
                var options = SendOptions()
                options.journal = journal
                group.addTask {
                    do {
                        let receipt = try await pipeline.send(attachment, options: options) { event in
                            if case .upload(let update) = event { board.update(index: index, path: attachment.path, update) }
                        }
                        board.done(index: index)
                        return (index, .success(receipt))
                    } catch let error as AttacheError {
                        board.done(index: index)
                        return (index, .failure(error))
                    } catch {
                        board.done(index: index)
                        return (index, .failure(AttacheError(.internalError, stage: .upload, "\(error)", file: attachment.path)))
                    }
                }
            }
            while next < min(concurrency, files.count) {
                start(next)
                next += 1
            }
            for await (index, result) in group {
                results[index] = result
                if next < files.count {
                    start(next)
                    next += 1
                }
            }
            return results.map { $0! }
        }
    }

    private func describe(_ receipt: UploadReceipt) -> String {
        var text = "\(receipt.path): stored"
        if let fileId = receipt.fileId { text += " as \(fileId)" }
        text += " (\(receipt.kind), \(receipt.mimeType), \(formatBytes(receipt.originalByteCount))"
        if receipt.transform.recompressed {
            text += " → \(formatBytes(receipt.transform.byteCount))"
            if let width = receipt.transform.width, let height = receipt.transform.height { text += " \(width)×\(height)" }
        }
        if receipt.seal.scheme != .none { text += ", \(receipt.seal.scheme)" }
        if receipt.seal.transferEncoding != .binary { text += "+\(receipt.seal.transferEncoding)" }
        text += ", \(receipt.attempts) attempt\(receipt.attempts == 1 ? "" : "s")"
        if receipt.replayed { text += ", replayed" }
        if let resumable = receipt.resumable {
            text += ", \(resumable.protocolName)"
            if resumable.resumedBytes > 0 { text += ", resumed after \(formatBytes(resumable.resumedBytes))" }
        }
        if let skipped = receipt.transform.skipped { text += ", sent as it is: \(skipped)" }
        text += ", \(receipt.seconds.formatted(decimals: 2)) s)"
        if let url = receipt.url { text += " \(url)" }
        if showKeys, let key = receipt.seal.key { text += " key=\(key.base64)" }
        if receipt.detection.mismatch, let claimed = receipt.detection.extensionMIMEType {
            text += " [extension says \(claimed)]"
        }
        return text
    }
}
