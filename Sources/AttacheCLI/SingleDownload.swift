import AttacheCore
package import ArgumentParser
package import Attache
import FoundationEssentials
import Glibc

/// `attache download URL -o OUT [--resume] [--key-file K]`: the single-file form of ``DownloadManyCommand``,
/// which parses the options and fills these in.
struct SingleDownload {
    /// The http://, https:// or s3://BUCKET/KEY URL.
    var url: String
    /// The file to create; `-` for standard output. An existing FIFO or device is written in place.
    var output: String
    /// Whether an OUT.part from an earlier run is continued.
    var resume: Bool
    /// How the bytes are decrypted, if they are.
    var key: DownloadKeyOptions
    /// The credentials, region and endpoint of an `s3://` URL.
    var s3: S3AccessOptions
    /// Timeouts, retries, TLS and headers.
    var connection: ConnectionOptions
    /// The endpoint whose connection settings and seal apply.
    var endpointSelection: EndpointOptions
    /// Whether the receipt is printed as one JSON object.
    var json: Bool
    /// Whether progress stays off the terminal.
    var noProgress: Bool

    func validate() throws {
        guard S3AccessOptions.isDownloadURL(url) else {
            throw ValidationError("the URL must start with http://, https:// or s3://")
        }
        if resume, OutputDestination(path: output, stage: .download).kind != .replaced {
            throw ValidationError("--resume needs -o to name a regular file (OUT.part is kept beside it)")
        }
    }

    func run() async throws {
        try await reportingErrors {
            // The endpoint's connection settings and seal (its url is for uploads; the URL here is
            // the argument): headers, credentials, TLS, timeouts, attempts, the scheme and key.
            let endpoint = try endpointSelection.load()
            var configuration = ConnectionConfiguration()
            try connection.apply(to: &configuration, endpoint: endpoint, environment: CommandIO.environment)

            // A stream (-, a FIFO, a device) is never renamed over: the Downloader writes it in place
            // once the download is verified.
            let destination = OutputDestination(path: output, stage: .download)
            var request = DownloadRequest(url: url, destination: output, resume: resume)
            // Hashing costs more CPU than receiving over a fast link: only when the ETag can check it.
            request.digest = .whenVerifiable
            request.unsealing = try key.unsealing(endpoint: endpoint)
            request.objectStore = try s3.store(for: [url], environment: CommandIO.environment)

            let showProgress = !noProgress && !json && Console.stderrIsTerminal
            let meter = DownloadMeter(enabled: showProgress, name: PathText.lastComponent(destination.displayName))
            let receipt: DownloadReceipt
            do {
                receipt = try await Downloader(configuration: configuration).download(request) { meter.update($0) }
            } catch {
                meter.clear()
                throw error
            }
            meter.clear()
            // With -o -, standard output carries the file: the summary goes to standard error.
            let toError = destination.kind == .standardOutput
            if json {
                if toError { Console.err(Console.json(receipt)) } else { Console.outJSON(receipt) }
            } else {
                var line = "\(receipt.path): \(formatBytes(receipt.storedByteCount))"
                if receipt.unsealed { line += " decrypted from \(formatBytes(receipt.byteCount))" }
                if receipt.resumedFrom > 0 { line += ", resumed at \(formatBytes(receipt.resumedFrom))" }
                if receipt.attempts > 1 { line += ", \(receipt.attempts) attempts" }
                if let sha256 = receipt.sha256 {
                    line += receipt.verifiedByETag ? ", sha256 \(sha256) (matches the ETag)" : ", sha256 \(sha256)"
                }
                if toError { Console.err(line) } else { Console.out(line) }
            }
        }
    }
}

/// The one-line progress display of a download, redrawn at most ten times a second.
package final class DownloadMeter: Sendable {
    private struct State {
        var lastDraw: ContinuousClock.Instant?
        var drawn = false
    }

    private let enabled: Bool
    private let name: String
    private let state = LockedValue(State())

    package init(enabled: Bool, name: String) {
        self.enabled = enabled
        self.name = name
    }

    package func update(_ progress: DownloadProgress) {
        guard enabled else { return }
        let now = ContinuousClock.now
        let draw = state.withLock { state -> Bool in
            if let last = state.lastDraw, now - last < .milliseconds(100) { return false }
            state.lastDraw = now
            state.drawn = true
            return true
        }
        guard draw else { return }
        var text = "\(name) \(formatBytes(progress.receivedBytes))"
        if let total = progress.totalBytes, total > 0 {
            text += " of \(formatBytes(total)) (\(progress.receivedBytes * 100 / total)%)"
        }
        Console.status(text)
    }

    package func clear() {
        if state.withLock({ $0.drawn }) { Console.clearStatus() }
    }
}

/// How `download` decrypts what it fetched: `--key-file` or `--key-env`, `--scheme`, `--base64` and
/// `--plaintext-length`, shared by the single-file and the many-file form.
package struct DownloadKeyOptions: ParsableArguments {
    package init() {}

    @Option(help: ArgumentHelp(
        "Decrypt with the key in this file (32/64 raw bytes or base64; legacy schemes: a passphrase).",
        valueName: "file"))
    package var keyFile: String?

    @Option(help: ArgumentHelp("Like --key-file, from an environment variable.", valueName: "name"))
    package var keyEnv: String?

    @Option(help: ArgumentHelp(
        "With a key: stream-gcm (default), signal, legacy-cbc or legacy-ecb (INSECURE).", valueName: "scheme"))
    package var scheme: SealScheme?

    @Flag(help: "With a key: the downloaded bytes are base64 text.")
    package var base64 = false

    @Option(help: ArgumentHelp("signal only: the real plaintext length, to strip the padding.", valueName: "bytes"))
    package var plaintextLength: Int64?

    @Option(help: ArgumentHelp(
        "matrix: decrypt with the key and IV of this JSON file's EncryptedFile (a receipt's seal.encryptedFile, an event's file), after checking its SHA-256.",
        valueName: "file"))
    package var fileInfo: String?

    package func validate() throws {
        if keyFile != nil, keyEnv != nil { throw ValidationError("give only one of --key-file and --key-env") }
        if fileInfo != nil, keyFile != nil || keyEnv != nil {
            throw ValidationError("--file-info carries the key: give no --key-file or --key-env")
        }
    }

    /// The decryption of one download, or nil when no key is named. The key is a list entry's own
    /// (`entryKeyFile`, `entryKeyEnv`), else the flags', else the endpoint's, each as a pair; the scheme and
    /// encoding are the flags', else the endpoint's, else stream-gcm and binary.
    /// - Throws: ``AttacheError`` when the key cannot be read.
    package func unsealing(endpoint: Endpoint, entryKeyFile: String? = nil, entryKeyEnv: String? = nil) throws
        -> DownloadRequest.Unsealing?
    {
        if let fileInfo, entryKeyFile == nil, entryKeyEnv == nil {
            return try DownloadRequest.Unsealing(
                matrixFile: try DecryptCommand.readFileInfo(fileInfo), transferEncoding: base64 ? .base64 : .binary)
        }
        let (file, env) =
            entryKeyFile != nil || entryKeyEnv != nil ? (entryKeyFile, entryKeyEnv)
            : keyFile != nil || keyEnv != nil ? (keyFile, keyEnv) : (endpoint.seal.keyFile, endpoint.seal.keyEnv)
        guard file != nil || env != nil else { return nil }
        let scheme = scheme ?? endpoint.seal.scheme ?? .streamGCM
        return DownloadRequest.Unsealing(
            scheme: scheme, key: try SealKeyOptions.loadKey(file: file, environmentVariable: env, for: scheme),
            transferEncoding: base64 || endpoint.seal.base64 == true ? .base64 : .binary,
            plaintextByteCount: plaintextLength)
    }
}
