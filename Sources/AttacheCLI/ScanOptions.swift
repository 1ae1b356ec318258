package import ArgumentParser
package import Attache

/// The Scan stage's options, shared by `upload`, `batch`, `worker` and `scan`.
package struct ScanOptions: ParsableArguments {
    package init() {}

    @Option(
        help: ArgumentHelp(
            "Scan every file with clamd before it is sealed: unix:PATH (a UNIX socket; files go by descriptor) or tcp:HOST:PORT. Default: the --endpoint's clamd, else no scanning.",
            valueName: "address"),
        transform: ScanOptions.parseAddress)
    package var clamd: ClamdAddress?

    @Option(help: ArgumentHelp(
        "When clamd gives no verdict (unreachable, its error, over StreamMaxLength, no answer in time): refuse (the default: the file fails, nothing unscanned leaves) or send (the receipt says unscanned).",
        valueName: "policy"))
    package var scanFailure: ScanFailurePolicy?

    @Option(help: ArgumentHelp(
        "What is scanned: sent (the bytes as they will be sealed, after recompression; the default) or original (the original too, when it was changed).",
        valueName: "what"))
    package var scan: ScanTarget?

    @Option(help: ArgumentHelp(
        "Keep verdicts in this file, by content SHA-256 and signature version, so that a duplicate is not scanned twice.",
        valueName: "file"))
    package var scanCache: String?

    @Option(help: ArgumentHelp(
        "How bytes reach clamd: auto (files by descriptor over a UNIX socket, else streamed; the default), stream or descriptor.",
        valueName: "mode"))
    package var clamdTransfer: ClamAVScanner.Transfer?

    @Option(help: ArgumentHelp(
        "Seconds a file waits for an unreachable clamd before it fails (default: 0 for upload; 600 for batch and worker, whose files wait for a restarted clamd).",
        valueName: "seconds"))
    package var scanWait: Double?

    /// `--clamd`, parsed: a usage error quotes the expected forms.
    static func parseAddress(_ text: String) throws -> ClamdAddress {
        do { return try ClamdAddress(parsing: text) } catch let error as AttacheError {
            throw ValidationError("--clamd: \(error.message)")
        }
    }

    /// Checks the options that need a scanner.
    package func validate() throws {
        if let scanWait, !(scanWait >= 0 && scanWait <= 86_400) { throw ValidationError("--scan-wait must be 0...86400") }
    }

    /// Sets `configuration`'s Scan stage from the flags, else from `endpointClamd` (the config file's
    /// `clamd`, with its `scan-failure`); `defaultWait` is the command's `--scan-wait` default.
    /// - Throws: `ValidationError` for scan flags without any clamd; ``AttacheError`` when the cache file
    ///   cannot be opened.
    package func apply(
        to configuration: inout ScanConfiguration, endpoint: Endpoint = .none, defaultWait: Double = 0
    ) throws {
        guard let address = clamd ?? endpoint.clamd else {
            if scanFailure != nil || scan != nil || scanCache != nil || clamdTransfer != nil || scanWait != nil {
                throw ValidationError("the scan options need --clamd (or an endpoint with clamd)")
            }
            return
        }
        var client = ClamAVScanner.Configuration(address: address)
        client.transfer = clamdTransfer ?? .automatic
        configuration.scanner = ClamAVScanner(configuration: client)
        configuration.failurePolicy = scanFailure ?? endpoint.scanFailure ?? .refuse
        configuration.scansOriginal = (scan ?? .sent) == .original
        if let scanCache { configuration.cache = try ScanCache(path: scanCache) }
        let wait = scanWait ?? defaultWait
        configuration.unreachableWait = wait > 0 ? .milliseconds(Int64(wait * 1000)) : nil
    }
}

/// `--scan`: what the Scan stage looks at.
package enum ScanTarget: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// The bytes as they will be sealed.
    case sent
    /// Those and the original, when Transform changed it.
    case original
}
