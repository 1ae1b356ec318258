import ArgumentParser
import Attache
import AttacheCommands
import Foundation

/// The options that shape the pipeline, shared by `upload` and `batch`.
struct PipelineOptions: ParsableArguments {
    @OptionGroup var endpointSelection: EndpointOptions

    @Option(help: "The upload endpoint (http:// or https://). Default: the --endpoint's url, else $ATTACHE_URL.")
    var url: String?

    @Option(name: .customLong("field"), help: ArgumentHelp("A form field NAME=VALUE sent with every file; repeatable (use name[] for lists).", valueName: "name=value"))
    var fields: [String] = []

    @Option(
        help: "Declare the message kind (image, voice, video, sticker, file); checked against the content.",
        transform: parseKind)
    var kind: MessageKind?

    @Option(help: ArgumentHelp("The form name of the attachment part (default: file).", valueName: "name"))
    var fileField: String?

    @OptionGroup var connection: ConnectionOptions

    @Option(help: ArgumentHelp(
        "Encryption: stream-gcm (the default; a fresh key per file, printed with its receipt), signal, legacy-cbc or legacy-ecb (INSECURE, need --key-file/--key-env), none.",
        valueName: "scheme"))
    var scheme: String?

    @Flag(help: "Send the sealed bytes as base64 text (RFC 4648, no line breaks).")
    var base64 = false

    @Option(help: ArgumentHelp(
        "Seal every file with the key in this file instead of a fresh key per file (32/64 raw bytes or base64; legacy schemes: a passphrase).",
        valueName: "file"))
    var keyFile: String?

    @Option(help: ArgumentHelp("Like --key-file, from an environment variable.", valueName: "name"))
    var keyEnv: String?

    @Flag(help: "Send files as they are: no recompression, no thumbnails.")
    var noTransform = false

    @Option(help: ArgumentHelp("Longest side of recompressed photos.", valueName: "pixels"))
    var maxSide = 1280

    @Option(help: ArgumentHelp("JPEG quality of recompressed photos (1-100).", valueName: "q"))
    var quality = 82

    @Flag(help: "Do not send thumbnails with images and stickers.")
    var noThumbnails = false

    @Option(help: ArgumentHelp(
        "An image that cannot be recompressed (broken, over a limit): send-original (default; the receipt says why) or fail.",
        valueName: "policy"))
    var onTransformError = TransformErrorPolicy.sendOriginal.rawValue

    /// `--url`, else the endpoint's `url`, else `$ATTACHE_URL`.
    func resolvedURL(_ endpoint: Endpoint = .none) -> String? {
        url ?? endpoint.url ?? ProcessInfo.processInfo.environment["ATTACHE_URL"]
    }

    /// Whether the URL may still come from the config file (`--endpoint`), so that its absence cannot
    /// be reported before the file is read.
    var urlMayComeFromEndpoint: Bool { endpointSelection.endpoint != nil }

    /// Checks everything but the URL (a dry run needs none).
    func validate() throws {
        for field in fields where !field.contains("=") || field.hasPrefix("=") {
            throw ValidationError("--field needs NAME=VALUE, got '\(field)'")
        }
        let sealScheme = try SealKeyOptions.parseScheme(scheme ?? SealScheme.streamGCM.rawValue)
        if keyFile != nil, keyEnv != nil { throw ValidationError("give only one of --key-file and --key-env") }
        // With --endpoint, the key may come from the file: checked once merged (makeConfiguration).
        if sealScheme.usesPassphrase, keyFile == nil, keyEnv == nil, endpointSelection.endpoint == nil {
            throw ValidationError("\(sealScheme) needs a passphrase from --key-file or --key-env")
        }
        guard (16...16384).contains(maxSide) else { throw ValidationError("--max-side must be 16...16384") }
        guard (1...100).contains(quality) else { throw ValidationError("--quality must be 1...100") }
        guard TransformErrorPolicy(rawValue: onTransformError) != nil else {
            throw ValidationError("--on-transform-error must be fail or send-original")
        }
    }

    /// The pipeline configuration these options describe, on top of `endpoint` (from `--endpoint`;
    /// ``Endpoint/none`` without it): each flag given wins over the file, each default applies last.
    /// - Throws: `ExitCode` after printing one line when the key or a secret the endpoint names cannot
    ///   be read; `ValidationError` when the merged settings do not fit together.
    func makeConfiguration(url: String, endpoint: Endpoint = .none, retry: RetryPolicy = .standard) throws
        -> PipelineConfiguration
    {
        var configuration = PipelineConfiguration(url: url)
        configuration.fileFieldName = fileField ?? endpoint.fileField ?? "file"
        configuration.fields = endpoint.fields(overriddenBy: fields.map { field in
            let parts = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return Endpoint.Pair(name: String(parts[0]), value: String(parts[1]))
        }).map { ($0.name, $0.value) }
        configuration.seal.scheme = try SealKeyOptions.parseScheme(
            scheme ?? endpoint.seal.scheme ?? SealScheme.streamGCM.rawValue)
        configuration.seal.transferEncoding = base64 || endpoint.seal.base64 == true ? .base64 : .binary
        // The key flags replace the endpoint's key as a pair: --key-env wins over the file's key-file.
        let (keyFile, keyEnv) = self.keyFile != nil || self.keyEnv != nil
            ? (self.keyFile, self.keyEnv) : (endpoint.seal.keyFile, endpoint.seal.keyEnv)
        if configuration.seal.scheme.usesPassphrase, keyFile == nil, keyEnv == nil {
            throw ValidationError("\(configuration.seal.scheme) needs a passphrase from --key-file or --key-env")
        }
        do {
            try connection.apply(to: &configuration.connection, defaults: retry, endpoint: endpoint)
            if keyFile != nil || keyEnv != nil {
                configuration.seal.key = try SealKeyOptions.loadKey(
                    file: keyFile, environmentVariable: keyEnv, for: configuration.seal.scheme)
            }
        } catch let error as AttacheError {
            Console.err("attache: \(error) [\(error.code)]")
            throw ExitCode(ExitStatus.forError(error))
        }
        configuration.transform.recompressImages = !noTransform
        configuration.transform.makeStickers = !noTransform
        configuration.transform.makeThumbnails = !noTransform && !noThumbnails
        configuration.transform.image.maxSide = maxSide
        configuration.transform.image.quality = quality
        configuration.transform.onTransformError = TransformErrorPolicy(rawValue: onTransformError) ?? .sendOriginal
        return configuration
    }
}

/// Retries, timeouts and TLS trust: the options every command that talks to a server shares.
struct ConnectionOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Attempts per file, the first included (1 = no retries). Default: 6 for upload and download; "
                + "no count limit for batch, whose retries are bounded by --retry-budget.",
            valueName: "n"))
    var attempts: Int?

    @Option(
        help: ArgumentHelp(
            "Start no new attempt of a file after this many seconds. Default: 600 for upload and download "
                + "(with at most --attempts); 180 for batch, enough to ride out a server restart of a minute "
                + "or more (retries every 5-10 s once backed off).",
            valueName: "seconds"))
    var retryBudget: Double?

    @Option(help: ArgumentHelp("Connection timeout (default: 10).", valueName: "seconds"))
    var connectTimeout: Double?

    @Option(help: ArgumentHelp("Fail an attempt when no byte moves for this long (default: 30).", valueName: "seconds"))
    var stallTimeout: Double?

    @Option(help: ArgumentHelp("Trust the CA certificates in this PEM file instead of the system's.", valueName: "file"))
    var caFile: String?

    @Option(help: ArgumentHelp("Pin the server's public key (sha256//BASE64 or a key file).", valueName: "pin"))
    var pinnedPublicKey: String?

    func validate() throws {
        guard (attempts ?? 1) >= 1 else { throw ValidationError("--attempts must be at least 1") }
        guard (connectTimeout ?? 1) > 0, (stallTimeout ?? 1) > 0, (retryBudget ?? 0) >= 0 else {
            throw ValidationError("timeouts must be positive")
        }
    }

    /// Sets the retry policy, timeouts, TLS settings, headers and credentials of `configuration`: each
    /// from its flag, else from `endpoint` (``Endpoint/none`` without `--endpoint`), else the default.
    /// `defaults` is the command's retry policy before --attempts and --retry-budget.
    /// - Throws: ``AttacheError`` `.configInvalid` when a variable the endpoint names is not set.
    func apply(
        to configuration: inout ConnectionConfiguration, defaults: RetryPolicy = .standard, endpoint: Endpoint = .none
    ) throws {
        configuration.retry = defaults
        if let attempts = attempts ?? endpoint.attempts { configuration.retry.maximumAttempts = attempts }
        if let retryBudget = retryBudget ?? endpoint.retryBudget {
            configuration.retry.budget = .milliseconds(Int64(retryBudget * 1000))
        }
        configuration.connectTimeout = .milliseconds(Int64((connectTimeout ?? endpoint.connectTimeout ?? 10) * 1000))
        configuration.stallTimeout = .milliseconds(Int64((stallTimeout ?? endpoint.stallTimeout ?? 30) * 1000))
        configuration.caFile = caFile ?? endpoint.caFile
        configuration.pinnedPublicKey = pinnedPublicKey ?? endpoint.pinnedPublicKey
        try endpoint.applyHeadersAndCredentials(to: &configuration, environment: ProcessInfo.processInfo.environment)
    }
}
