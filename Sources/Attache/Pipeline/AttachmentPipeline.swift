import FoundationEssentials
public import Logging

/// Sends attachments through prepare → detect → transform → scan → seal → form → send → receipt.
///
/// `run(_:progress:)` in this file is the whole data path: one function per stage, each taking the
/// previous stage's typed hand-off (`PreparedAttachment`, `DetectedAttachment`, …) and returning its
/// own; the stages live in `AttachmentPipeline+Stage.swift` files beside this one. The configuration is
/// checked once, here, when the pipeline is made.
///
/// ```swift
/// let pipeline = try AttachmentPipeline(configuration: PipelineConfiguration(url: "http://127.0.0.1:8080/upload"))
/// let receipt = try await pipeline.send(Attachment(path: "Samples/photo.jpg"))
/// print(receipt.fileId ?? "-", receipt.kind, receipt.mimeType)
/// ```
public struct AttachmentPipeline: Sendable {
    /// The configuration in use.
    public private(set) var configuration: PipelineConfiguration
    /// Where the pipeline logs.
    package let logger: Logger
    /// Detect: content sniffing and classification.
    let detector: MIMEDetector
    /// Transform: recompression, conversion and thumbnails.
    let transformer: Transformer
    /// Image transforms at once, across every send of this pipeline.
    let transformLimiter: AsyncLimiter
    /// The transforms of identical sources, made once (``PipelineConfiguration/sharesTransforms``).
    let transformShare: TransformShare?
    /// Sends at once, when limited.
    private let sendLimiter: AsyncLimiter?
    /// The turns of sends of one content, with ``PipelineConfiguration/contentIndex``.
    let contentTurns = ContentTurns()
    /// Send: multipart POSTs, on the pipeline's one client (resumable uploads and object-store requests
    /// run on the same client).
    private(set) var uploader: Uploader
    /// The upload URL, parsed once: server paths in answers are resolved against it.
    let baseURL: URL?
    /// The homeserver's facts and reservations gate, with ``PipelineConfiguration/matrix``.
    let matrixMedia: MatrixMedia?
    /// Where the send and stage spans and the metrics go (what the process bootstrapped, or nothing).
    package let telemetry: Telemetry
    /// This send's journal (``SendOptions/journal``), in the copy of the pipeline one send runs on.
    var journal: (any SendJournal)?
    /// This send's known detection (``SendOptions/detection``).
    var knownDetection: Detection?
    /// This send's verdict found ahead (``SendOptions/scannedAhead``).
    var knownScan: ScannedAhead?

    /// Creates a pipeline with a client of its own, made for the configuration's connection; see
    /// ``init(configuration:client:logger:)``.
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `configuration`), as
    ///   `PipelineConfiguration.validate()` describes.
    public init(configuration: PipelineConfiguration, logger: Logger = Logger(label: "attache")) throws {
        try self.init(configuration: configuration, logger: logger, telemetry: .bootstrapped)
    }

    /// Creates a pipeline that sends everything through `client`: multipart and resumable uploads,
    /// object-store requests, thumbnails. The client brings its transport, its retry rule, its
    /// interceptors (a signer, a token) and its telemetry; the configuration's
    /// ``PipelineConfiguration/connection`` still gives each request its headers, timeouts and retry
    /// policy. Checks the configuration once, for combinations no server could take.
    ///
    /// ```swift
    /// let client = AttacheClient(interceptors: ClientInterceptors(adapters: [TokenAdapter(store: store)]))
    /// let pipeline = try AttachmentPipeline(configuration: configuration, client: client)
    /// ```
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `configuration`), as
    ///   `PipelineConfiguration.validate()` describes.
    public init(configuration: PipelineConfiguration, client: AttacheClient, logger: Logger = Logger(label: "attache")) throws {
        try self.init(configuration: configuration, logger: logger, client: client)
    }

    /// Creates a pipeline whose metrics and spans go to `telemetry`.
    /// - Throws: as ``init(configuration:logger:)``.
    package init(configuration: PipelineConfiguration, logger: Logger = Logger(label: "attache"), telemetry: Telemetry) throws {
        try self.init(
            configuration: configuration, logger: logger,
            client: AttacheClient(connection: configuration.connection, telemetry: telemetry))
    }

    private init(configuration: PipelineConfiguration, logger: Logger, client: AttacheClient) throws {
        try configuration.validate()
        self.telemetry = client.telemetry
        self.configuration = configuration
        self.baseURL = URL(string: configuration.url)
        self.matrixMedia = configuration.matrix.map { MatrixMedia(endpoint: $0) }
        self.logger = logger
        self.detector = MIMEDetector(configuration: configuration.detection)
        var transform = configuration.transform
        if configuration.thumbnailPlacement == .omitted { transform.makeThumbnails = false }
        self.transformer = Transformer(configuration: transform)
        self.transformLimiter = AsyncLimiter(limit: configuration.transformConcurrency)
        self.transformShare = configuration.sharesTransforms ? TransformShare() : nil
        self.sendLimiter = configuration.maximumConcurrentSends.map { AsyncLimiter(limit: max(1, $0)) }
        var uploader = Uploader(client: client, answers: configuration.answers, logger: logger)
        uploader.connection = configuration.connection
        self.uploader = uploader
    }

    /// Sends one attachment and returns the server's receipt.
    ///
    /// - Parameters:
    ///   - attachment: the file to send: a path, bytes in memory or a stream of chunks.
    ///   - options: what this send changes of the configuration (headers, fields, a time limit, the
    ///     answer profile, the seal); nothing by default.
    ///   - progress: stage changes and upload progress, from any thread.
    /// - Throws: ``AttacheCore/AttacheError`` naming the file and the stage: unreadable input, a refusal by
    ///   the server (`.rejected`, `.badResponse`, with ``AttacheCore/AttacheError/rejection``), retries
    ///   exhausted, `.timedOut` past ``SendOptions/timeLimit``, cancellation.
    public func send(
        _ attachment: Attachment, options: SendOptions = SendOptions(),
        progress: (@Sendable (PipelineProgress) -> Void)? = nil
    ) async throws -> UploadReceipt {
        guard telemetry.isOn else { return try await send(attachment, options: options, facts: nil, progress: progress) }
        return try await traced(attachment) { facts in
            try await send(attachment, options: options, facts: facts, progress: progress)
        }
    }

    /// `send`, telling `facts` what the send learns.
    private func send(
        _ attachment: Attachment, options: SendOptions, facts: SendFacts?,
        progress: (@Sendable (PipelineProgress) -> Void)?
    ) async throws -> UploadReceipt {
        do {
            let pipeline = try applying(options)
            guard let limit = options.timeLimit else {
                return try await pipeline.limited(attachment, facts: facts, progress: progress)
            }
            return try await pipeline.run(attachment, within: limit, facts: facts, progress: progress)
        } catch let error as AttacheError {
            throw error.concerning(attachment.path)
        } catch is CancellationError {
            throw AttacheError(.cancelled, stage: .upload, "cancelled", file: attachment.path)
        }
    }

    /// `run` within the pipeline's limit of concurrent sends.
    private func limited(
        _ attachment: Attachment, facts: SendFacts?, progress: (@Sendable (PipelineProgress) -> Void)?
    ) async throws -> UploadReceipt {
        if let index = configuration.contentIndex, configuration.contentReuse.reusesStoredUploads {
            return try await reusing(attachment, index: index) { try await limitedRun(attachment, facts: facts, progress: progress) }
        }
        return try await limitedRun(attachment, facts: facts, progress: progress)
    }

    private func limitedRun(
        _ attachment: Attachment, facts: SendFacts?, progress: (@Sendable (PipelineProgress) -> Void)?
    ) async throws -> UploadReceipt {
        guard let sendLimiter else { return try await run(attachment, facts: facts, progress: progress) }
        return try await sendLimiter.run { try await run(attachment, facts: facts, progress: progress) }
    }

    /// This pipeline with one send's options applied. Options that change what the configuration's
    /// check looks at (the answer profile, the fields) are checked here, for this send.
    private func applying(_ options: SendOptions) throws -> AttachmentPipeline {
        guard
            !options.headers.isEmpty || !options.fields.isEmpty || options.answers != nil || options.seal != nil
                || options.journal != nil || options.detection != nil || options.scannedAhead != nil
        else { return self }
        var copy = self
        copy.journal = options.journal
        copy.knownDetection = options.detection
        copy.knownScan = options.scannedAhead
        if !options.fields.isEmpty {
            let replaced = Set(options.fields.map(\.name))
            copy.configuration.fields = configuration.fields.filter { !replaced.contains($0.name) } + options.fields
        }
        if let seal = options.seal { copy.configuration.seal = seal }
        if let answers = options.answers {
            copy.configuration.answers = answers
            copy.uploader.answers = answers
        }
        if !options.headers.isEmpty {
            var connection = configuration.connection
            connection.headers = connection.headers.replacing(with: options.headers)
            if options.headers.contains(where: { $0.name.equalsIgnoringASCIICase("authorization") }) {
                connection.authorization = nil
            }
            copy.configuration.connection = connection
            copy.uploader.connection = connection
        }
        if options.answers != nil || !options.fields.isEmpty { try copy.configuration.validate() }
        return copy
    }

    /// `run` with a time limit: past `limit` the send is cancelled and `.timedOut` names the stage it
    /// was in.
    private func run(
        _ attachment: Attachment, within limit: Duration, facts: SendFacts?,
        progress: (@Sendable (PipelineProgress) -> Void)?
    ) async throws -> UploadReceipt {
        let stage = LockedValue(AttacheError.Stage.read)
        let tracking: @Sendable (PipelineProgress) -> Void = { update in
            if case .stage(let current) = update {
                stage.withLock { $0 = current }
            }
            progress?(update)
        }
        return try await withThrowingTaskGroup(of: UploadReceipt?.self) { group in
            group.addTask { try await self.limited(attachment, facts: facts, progress: tracking) }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            if let receipt = try await group.next() ?? nil { return receipt }
            throw AttacheError(
                .timedOut, stage: stage.withLock { $0 }, "the send did not finish within its time limit of \(limit)",
                file: attachment.path, isRetryable: true)
        }
    }

    /// The whole data path of one attachment: each stage a function from one typed hand-off to the
    /// next. A new stage is one more line here and one more function with its own input and output.
    /// Each stage is timed, and Detect, Transform, Scan and Seal are traced, when telemetry is on
    /// (`stage`; ``TraceDetail`` says how).
    private func run(
        _ attachment: Attachment, facts: SendFacts?, progress: (@Sendable (PipelineProgress) -> Void)?
    ) async throws -> UploadReceipt {
        let prepared = try await stage("prepare", traced: false) { try await prepare(attachment) }  // Attachment → PreparedAttachment (bytes ready)
        defer { prepared.remove() }
        progress?(.stage(.detect))
        let detected = try await stage("detect", traced: true) { try await detect(prepared) }  // → DetectedAttachment (type, kind, metadata)
        facts?.detected(detected.detection)
        progress?(.stage(.transform))
        let transformed = try await stage("transform", traced: true) { try await transform(detected) }  // → TransformedAttachment (payload, thumbnails)
        defer { transformed.remove() }
        progress?(.stage(.scan))
        // Scan is traced only where there is one: no scanner, no stage.
        let scanned = configuration.scan.scanner == nil
            ? try await scan(transformed) : try await stage("scan", traced: true) { try await scan(transformed) }  // → ScannedAttachment (clean, or unscanned by policy)
        progress?(.stage(.seal))
        let sealed = try await stage("seal", traced: true) { try await seal(scanned) }  // → SealedAttachment (streamed; nothing read yet)
        progress?(.stage(.upload))
        let forms = form(sealed)  // → AttachmentForms (the one form specification)
        let sent = try await stage("upload", traced: false) { try await send(forms, progress: progress) }  // → SentAttachment (the server's answers)
        return receipt(sent)  // → UploadReceipt
    }

    /// Runs the Detect stage on the file at `path` on the calling thread, for a caller that already reads
    /// the file in a blocking job of its own (the batch, with the file's identity) and hands the result
    /// on in ``SendOptions/detection``. Blocking file I/O: call it from a thread of your own or a pool job,
    /// never from a task of the cooperative pool.
    ///
    /// - Throws: ``AttacheCore/AttacheError`` of stage `read` (unreadable file) or `detect`.
    public func detect(fileAt path: String, declaredKind: MessageKind? = nil) throws -> Detection {
        try detector.detect(fileAt: path, declaredKind: declaredKind)
    }
}
