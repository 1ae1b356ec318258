package import ArgumentParser
package import Attache
import FoundationEssentials
import Glibc

/// The options that shape the pipeline, shared by `upload`, `batch` and `worker`, beside the groups
/// they share with other commands (``PipelineFlags``).
///
/// Each value is parsed once, into its type, when the command line is parsed; ``validate()`` only checks
/// how options fit together, and ``PipelineFlags/configuration(endpoint:environment:retry:url:scanWait:)``
/// turns them, the endpoint of the config file and the environment into the configuration the command
/// runs with.
package struct PipelineOptions: ParsableArguments {
    package init() {}

    @Option(help: "The upload endpoint (http:// or https://). Default: the --endpoint's url, else $ATTACHE_URL.")
    package var url: String?

    @Option(name: .customLong("field"), help: ArgumentHelp("A form field NAME=VALUE sent with every file; repeatable (use name[] for lists).", valueName: "name=value"))
    package var fields: [NameValue] = []

    @Option(help: "Declare the message kind (image, voice, video, sticker, file); checked against the content.")
    package var kind: MessageKind?

    @Option(help: ArgumentHelp("The form name of the attachment part (default: file).", valueName: "name"))
    package var fileField: String?

    @Option(help: ArgumentHelp(
        "Encryption: stream-gcm (the default; a fresh key per file, printed with its receipt), signal, matrix (the receipt carries the EncryptedFile object), legacy-cbc or legacy-ecb (INSECURE, need --key-file/--key-env), none.",
        valueName: "scheme"))
    package var scheme: SealScheme?

    @Flag(help: "Send the sealed bytes as base64 text (RFC 4648, no line breaks).")
    package var base64 = false

    @Option(help: ArgumentHelp(
        "Seal every file with the key in this file instead of a fresh key per file (32/64 raw bytes or base64; legacy schemes: a passphrase).",
        valueName: "file"))
    package var keyFile: String?

    @Option(help: ArgumentHelp("Like --key-file, from an environment variable.", valueName: "name"))
    package var keyEnv: String?

    @Flag(help: "Send files as they are: no recompression or conversion, no thumbnails.")
    package var noTransform = false

    @Option(help: ArgumentHelp(
        "run (default): files of one run with the same bytes are transformed once, each still sealed with its "
            + "own key and sent on its own; off: each file is transformed on its own; reuse (batch, worker): a file "
            + "whose bytes the journal (or the queue) knows as stored takes that upload's receipt and key and sends "
            + "nothing; verify: reuse after downloading and opening the stored upload once per run.",
        valueName: "mode"))
    package var dedup = DedupMode.run

    @Option(help: ArgumentHelp(
        "How much of each file its exported spans show (with --otlp-endpoint): send (default): attache.send "
            + "and a span per HTTP attempt, the stages as events and attributes of the send; stages: a span for "
            + "each stage too.",
        valueName: "detail"))
    package var traceDetail = TraceDetail.send

    @Option(help: ArgumentHelp("Longest side of recompressed photos.", valueName: "pixels"))
    package var maxSide = 1280

    @Option(help: ArgumentHelp("JPEG quality of recompressed photos (1-100).", valueName: "q"))
    package var quality = 82

    @Option(help: ArgumentHelp(
        "The most memory one image's transform may need, estimated from its header before decoding (bytes, or "
            + "with K, M, G; default: 256M). An image over it is sent as it is (or fails, with "
            + "--on-transform-error fail), the reason naming the estimate; each of several transforms at once has it.",
        valueName: "size"))
    package var memoryBudget: ByteSize?

    @Option(help: ArgumentHelp(
        "Videos: standard (long side 1280, 720p) or hd (long side 1920, 1080p).", valueName: "preset"))
    package var videoPreset = VideoPreset.standard

    @Option(help: ArgumentHelp(
        "Voice notes: telegram (Ogg/Opus 16 kHz, 16 kb/s) or high (48 kHz, 32 kb/s).", valueName: "preset"))
    package var voicePreset = VoicePreset.telegram

    @Flag(help: "Do not send thumbnails with images and stickers.")
    package var noThumbnails = false

    @Flag(help: "Make no placeholders (BlurHash, ThumbHash, Telegram's stripped thumbnail) for the receipt.")
    package var noPlaceholders = false

    @Flag(help: "Also send the placeholders as the form fields blurhash, thumbhash and stripped (base64).")
    package var placeholderFields = false

    @Option(help: ArgumentHelp("BlurHash components across x down, each 1-9.", valueName: "XxY"))
    package var blurhashComponents = BlurHashComponents(argument: "4x3")!

    @Option(help: ArgumentHelp(
        "An image that cannot be recompressed (broken, over a limit): send-original (default; the receipt says why) or fail.",
        valueName: "policy"))
    package var onTransformError = TransformErrorPolicy.sendOriginal

    @Option(help: ArgumentHelp(
        "How the server's answers are read: errorcode (default: a JSON errorCode), status (any 2xx), s3-post (an S3/MinIO/GCS presigned POST form), s3-put (an object store's answer to a PUT: ETag, version id, XML errors), telegram (Bot API ok/result), matrix (a homeserver's media API: content_uri, errcode).",
        valueName: "name"))
    package var answerProfile: AnswerProfile?

    @Option(
        help: ArgumentHelp(
            "Where the file id is in the answer, as an RFC 6901 JSON pointer (/result/document/file_id, /data/id, /Key).",
            valueName: "pointer"),
        transform: PipelineOptions.parseIDPointer)
    package var idPointer: JSONPointer?

    @Option(help: ArgumentHelp(
        "Where thumbnails go: inline (in the file's request; the default), separate (each in a request of its own, with its own receipt) or none (the default for s3-post).",
        valueName: "placement"))
    package var thumbnails: ThumbnailPlacement?

    @Flag(inversion: .prefixedNo, help: ArgumentHelp(
        "Send the detected type and metadata (mimeType, kind, width, ...) as form fields. Default: yes, except with s3-post, whose policy refuses fields it does not list."))
    package var metadataFields: Bool?

    @Flag(inversion: .prefixedNo, help: ArgumentHelp(
        "Send how a file was sealed (scheme, encoding, plaintextSize) as form fields. Default: yes, except with s3-post."))
    package var sealFields: Bool?

    @Option(help: ArgumentHelp(
        "Send large files as resumable uploads: auto (tus when the server announces it, else the IETF draft when the server creates an upload resource, else multipart), tus, ietf or off (default: off).",
        valueName: "mode"))
    package var resumable: ResumableMode?

    @Option(help: ArgumentHelp(
        "With --resumable: sealed bodies of at least this size go resumable (bytes, or with K, M, G for KiB, MiB, GiB; default: 16M).",
        valueName: "size"))
    package var resumableThreshold: ByteSize?

    @Flag(help: "With --resumable tus: send no Upload-Checksum (saves a hashing pass over each chunk before it is sent).")
    package var noResumableChecksums = false

    /// `--id-pointer`, parsed: a usage error quotes what is wrong with the pointer.
    static func parseIDPointer(_ text: String) throws -> JSONPointer {
        do { return try JSONPointer(text) } catch let error as AttacheError { throw ValidationError("--id-pointer: \(error.message)") }
    }

    /// Checks how the options fit together (a dry run needs no URL, so the URL is checked by the
    /// command; a passphrase that the config file may give, by ``PipelineFlags/validate()``); each value
    /// was checked when it was parsed.
    package func validate() throws {
        if keyFile != nil, keyEnv != nil { throw ValidationError("give only one of --key-file and --key-env") }
        guard (16...16384).contains(maxSide) else { throw ValidationError("--max-side must be 16...16384") }
        guard (1...100).contains(quality) else { throw ValidationError("--quality must be 1...100") }
        try Self.checkAnswerSettings(profile: answerProfile, thumbnails: thumbnails)
    }

    /// Checks that an answer profile and a thumbnail placement (from flags, or merged with an endpoint)
    /// fit together.
    static func checkAnswerSettings(profile: AnswerProfile?, thumbnails: ThumbnailPlacement?) throws {
        let profile = profile ?? .errorCode
        if thumbnails == .inline, profile.sendsOneFilePerRequest {
            throw ValidationError("--thumbnails inline: the \(profile) profile takes exactly one file part per request (use none or separate)")
        }
    }

    /// The configuration these options and the groups beside them make, with `endpoint` and
    /// `environment`: ``PipelineFlags/configuration(endpoint:environment:retry:url:scanWait:)``.
    func configuration(
        connection: ConnectionOptions, scanning: ScanOptions, objectStore: ObjectStoreOptions,
        endpoint: Endpoint, environment: [String: String], retry: RetryPolicy, url fallbackURL: String?,
        scanWait: Double
    ) throws -> PipelineConfiguration {
        guard let url = url ?? objectStore.matrix ?? endpoint.url ?? environment["ATTACHE_URL"] ?? fallbackURL else {
            if endpoint.name.isEmpty { throw ValidationError("missing --url (or --endpoint, or set ATTACHE_URL)") }
            throw ValidationError("missing --url: the endpoint \(endpoint.name) has no url (or set ATTACHE_URL)")
        }
        var configuration = PipelineConfiguration(url: url)
        configuration.fileFieldName = fileField ?? endpoint.fileField ?? "file"
        configuration.fields = endpoint.fields(overriddenBy: fields.map { Endpoint.Pair(name: $0.name, value: $0.value) })
            .map { UploadField(name: $0.name, value: $0.value) }
        // A Matrix client opens the matrix scheme's EncryptedFile: the default with --matrix.
        configuration.seal.scheme = scheme ?? endpoint.seal.scheme ?? (objectStore.matrix != nil ? .matrix : .streamGCM)
        configuration.seal.transferEncoding = base64 || endpoint.seal.base64 == true ? .base64 : .binary
        // The key flags replace the endpoint's key as a pair: --key-env wins over the file's key-file.
        let (keyFile, keyEnv) = self.keyFile != nil || self.keyEnv != nil
            ? (self.keyFile, self.keyEnv) : (endpoint.seal.keyFile, endpoint.seal.keyEnv)
        if configuration.seal.scheme.usesPassphrase, keyFile == nil, keyEnv == nil {
            throw ValidationError("\(configuration.seal.scheme) needs a passphrase from --key-file or --key-env")
        }
        try connection.apply(to: &configuration.connection, defaults: retry, endpoint: endpoint, environment: environment)
        if keyFile != nil || keyEnv != nil {
            configuration.seal.key = try SealKeyOptions.loadKey(
                file: keyFile, environmentVariable: keyEnv, for: configuration.seal.scheme, environment: environment)
        }
        let profile = answerProfile ?? endpoint.answerProfile
        let placement = thumbnails ?? endpoint.thumbnails
        try Self.checkAnswerSettings(profile: profile, thumbnails: placement)
        if let profile { configuration.answers = .init(profile: profile) }
        if let pointer = idPointer ?? endpoint.idPointer { configuration.answers.idPointer = pointer }
        configuration.thumbnails = placement
        configuration.sendMetadataFields = metadataFields
        configuration.sendSealFields = sealFields
        configuration.transform.recompressImages = !noTransform
        configuration.sharesTransforms = dedup != .off
        configuration.traceDetail = traceDetail
        configuration.transform.makeStickers = !noTransform
        configuration.transform.convertVideo = !noTransform
        configuration.transform.convertVoice = !noTransform
        configuration.transform.convertAnimations = !noTransform
        configuration.transform.makeThumbnails = !noTransform && !noThumbnails
        configuration.transform.image.placeholders = noPlaceholders ? nil : blurhashComponents.options
        configuration.sendPlaceholderFields = placeholderFields && !noPlaceholders
        configuration.transform.media.video = videoPreset.options
        configuration.transform.media.voice = voicePreset.options
        configuration.transform.image.maxSide = maxSide
        configuration.transform.image.quality = quality
        if let memoryBudget { configuration.transform.image.memoryBudget = Int(clamping: memoryBudget.bytes) }
        configuration.transform.onTransformError = onTransformError
        configuration.resumable.mode = resumable ?? .off
        configuration.resumable.threshold = resumableThreshold?.bytes ?? 16 << 20
        configuration.resumable.checksums = !noResumableChecksums
        try scanning.apply(to: &configuration.scan, endpoint: endpoint, defaultWait: scanWait)
        do {
            try objectStore.apply(to: &configuration, answerProfileGiven: profile != nil, endpoint: endpoint, environment: environment)
        } catch let error as AttacheError {
            throw ValidationError(error.message)
        }
        // The check the pipeline makes when it is made, as a usage error (64) naming what to change.
        do { try configuration.validate() } catch let error as AttacheError { throw ValidationError(error.message) }
        return configuration
    }
}

/// Retries, timeouts, TLS trust, headers and credentials: the options every command that talks to a server
/// shares.
package struct ConnectionOptions: ParsableArguments {
    package init() {}

    @Option(
        help: ArgumentHelp(
            "Attempts per file, the first included (1 = no retries). Default: 6 for upload and download; "
                + "no count limit for batch, whose retries are bounded by --retry-budget.",
            valueName: "n"))
    package var attempts: Int?

    @Option(
        help: ArgumentHelp(
            "Start no new attempt of a file after this many seconds. Default: 600 for upload and download "
                + "(with at most --attempts); 180 for batch, enough to ride out a server restart of a minute "
                + "or more (retries every 5-10 s once backed off).",
            valueName: "seconds"))
    package var retryBudget: Double?

    @Option(help: ArgumentHelp("Connection timeout (default: 10).", valueName: "seconds"))
    package var connectTimeout: Double?

    @Option(help: ArgumentHelp("Fail an attempt when no byte moves for this long (default: 30).", valueName: "seconds"))
    package var stallTimeout: Double?

    @Option(help: ArgumentHelp("Trust the CA certificates in this PEM file instead of the system's.", valueName: "file"))
    package var caFile: String?

    @Option(help: ArgumentHelp("Pin the server's public key (sha256//BASE64 or a key file).", valueName: "pin"))
    package var pinnedPublicKey: String?

    @Option(
        name: .customLong("header"),
        help: ArgumentHelp(
            "A request header 'Name: value', or @FILE for one header per line (blank lines and lines starting with # "
                + "are skipped). Repeatable. Put credentials in a file, not on the command line: "
                + "an Authorization header is taken from @FILE only.",
            valueName: "header"))
    package var headers: [String] = []

    @Option(help: ArgumentHelp(
        "Send 'Authorization: Bearer TOKEN' with the token read from this environment variable.", valueName: "name"))
    package var bearerEnv: String?

    @Option(help: ArgumentHelp(
        "Send HTTP Basic credentials read as user:password from this environment variable.", valueName: "name"))
    package var userEnv: String?

    @Option(help: ArgumentHelp("The User-Agent header (default: attache/VERSION).", valueName: "text"))
    package var userAgent: String?

    package func validate() throws {
        guard (attempts ?? 1) >= 1 else { throw ValidationError("--attempts must be at least 1") }
        guard (connectTimeout ?? 1) > 0, (stallTimeout ?? 1) > 0, (retryBudget ?? 0) >= 0 else {
            throw ValidationError("timeouts must be positive")
        }
        if bearerEnv != nil, userEnv != nil { throw ValidationError("give only one of --bearer-env and --user-env") }
        // Headers given inline are checked now; header files and credential variables are read with the
        // rest of the configuration (credentials(environment:)), still before anything is sent.
        for argument in headers where !argument.hasPrefix("@") {
            let header = try HeaderLines.parse(argument, where: "--header")
            if HeaderLines.carriesCredentials(header.name) { throw HeaderLines.credentialsOnTheCommandLine(header.name) }
        }
    }

    /// Sets the retry policy, timeouts, TLS settings, headers and credentials of `configuration`: each
    /// from its flag, else from `endpoint` (``Endpoint/none`` without `--endpoint`), else the default.
    /// `defaults` is the command's retry policy before --attempts and --retry-budget.
    /// - Throws: ``AttacheError`` `.configInvalid` when a variable the endpoint names is not set;
    ///   `ValidationError` (exit 64) for a header file that cannot be read or holds a malformed line, or a
    ///   credentials variable of a flag that is not set.
    package func apply(
        to configuration: inout ConnectionConfiguration, defaults: RetryPolicy = .standard, endpoint: Endpoint = .none,
        environment: [String: String]
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
        try endpoint.applyHeadersAndCredentials(to: &configuration, environment: environment)
        // Flags win over the file: a --header replaces the file's header of the same name.
        let credentials = try credentials(environment: environment)
        configuration.headers = Endpoint.merging(headers: configuration.headers, overriddenBy: credentials.headers)
        if let authorization = credentials.authorization { configuration.authorization = authorization }
        if let userAgent { configuration.userAgent = userAgent }
    }

    /// The headers and credentials these options name, read from their files and environment variables.
    /// Errors name the option, the variable or the file and line, never a value.
    package func credentials(environment: [String: String]) throws -> (headers: [HeaderField], authorization: HTTPAuthorization?) {
        if bearerEnv != nil, userEnv != nil { throw ValidationError("give only one of --bearer-env and --user-env") }
        func variable(_ name: String, option: String) throws -> String {
            guard !name.isEmpty, let value = environment[name] else {
                throw ValidationError("\(option) \(name): the environment variable is not set")
            }
            guard !value.isEmpty else { throw ValidationError("\(option) \(name): the environment variable is empty") }
            return value
        }
        var authorization: HTTPAuthorization?
        if let bearerEnv {
            let token = try variable(bearerEnv, option: "--bearer-env")
            guard HeaderFieldSyntax.isValidValue(token), !token.contains(" ") else {
                throw ValidationError("--bearer-env \(bearerEnv): the token holds a space or a control character")
            }
            authorization = .bearer(token)
        }
        if let userEnv {
            let text = try variable(userEnv, option: "--user-env")
            guard let basic = HTTPAuthorization(userColonPassword: text), HeaderFieldSyntax.isValidValue(text) else {
                throw ValidationError("--user-env \(userEnv): expected user:password (no control characters)")
            }
            authorization = basic
        }
        var parsed: [HeaderField] = []
        for argument in headers {
            if argument.hasPrefix("@") {
                parsed += try HeaderLines.read(file: String(argument.dropFirst()))
            } else {
                let header = try HeaderLines.parse(argument, where: "--header")
                if HeaderLines.carriesCredentials(header.name) { throw HeaderLines.credentialsOnTheCommandLine(header.name) }
                parsed.append(header)
            }
        }
        if authorization != nil, let clash = parsed.first(where: { $0.name.lowercased() == "authorization" }) {
            throw ValidationError("an \(clash.name) header and --bearer-env/--user-env: give only one")
        }
        return (parsed, authorization)
    }
}

/// Request headers as `--header` takes them: `Name: value` lines, alone or one per line of a file, the way
/// curl's `-H` and `-H @FILE` read them.
package enum HeaderLines {
    /// Reads `Name: value` lines from `path`. Blank lines and lines starting with `#`
    /// are skipped; a trailing CR is dropped; `Name;` is a header with an empty value, as in curl.
    package static func read(file path: String) throws -> [HeaderField] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("--header @\(path): cannot read the file")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ValidationError("--header @\(path): the file is not UTF-8 text")
        }
        var headers: [HeaderField] = []
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = Substring(rawLine)
            if line.hasSuffix("\r") { line = line.dropLast() }
            let trimmed = line.trimmingBlanks
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            headers.append(try parse(String(line), where: "--header @\(path), line \(number + 1)"))
        }
        return headers
    }

    /// Parses `Name: value` (or curl's `Name;` for an empty value). The error names `place` and never
    /// quotes the value, which may be a secret.
    package static func parse(_ line: String, where place: String) throws -> HeaderField {
        let name: Substring
        let value: String
        if let colon = line.firstIndex(of: ":") {
            name = line[..<colon]
            value = line[line.index(after: colon)...].trimmingBlanks
        } else if line.hasSuffix(";") {
            name = line.dropLast()
            value = ""
        } else {
            throw ValidationError("\(place): expected 'Name: value'")
        }
        guard HeaderFieldSyntax.isValidName(name) else {
            throw ValidationError("\(place): the header name must be a token (letters, digits, -, _, ...)")
        }
        guard HeaderFieldSyntax.isValidValue(value) else {
            throw ValidationError("\(place): the value of \(name) holds a control character")
        }
        return HeaderField(name: String(name), value: value)
    }

    /// The usage error for a credentials header (`name`) given inline with `--header`.
    static func credentialsOnTheCommandLine(_ name: String) -> ValidationError {
        ValidationError(
            "--header \(name): credentials on the command line end up in shell history and process "
                + "lists; use --bearer-env, --user-env or --header @FILE")
    }

    /// Headers whose values are credentials, refused on the command line.
    package static func carriesCredentials(_ name: String) -> Bool {
        CredentialHeaders.contains(name)
    }
}

extension PipelineOptions {
    /// Refuses `--dedup reuse` and `verify` in a command that keeps no index of what it stored.
    package func refuseContentReuse(in command: String) throws {
        guard dedup.contentReuse.reusesStoredUploads else { return }
        throw ValidationError(
            "--dedup \(dedup.rawValue) needs an index of stored uploads, which `attache \(command)` does not keep: "
                + "use it with `attache batch` (its journal is the index), `attache worker` (the queue is), "
                + "--key-template with {sha256} for s3:// (the bucket is), or --dedup run")
    }
}

/// `--dedup`: what a run does with files whose bytes it has seen.
package enum DedupMode: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// Transform once, seal and send each file.
    case run
    /// Every file on its own.
    case off
    /// `run`, and a file whose content is stored takes that upload's receipt (batch only).
    case reuse
    /// `reuse`, after checking the stored upload once per run.
    case verify

    /// What a batch does with stored content.
    package var contentReuse: ContentReuse {
        switch self {
        case .run, .off: .off
        case .reuse: .reuse
        case .verify: .verify
        }
    }
}
