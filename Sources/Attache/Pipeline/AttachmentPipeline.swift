public import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
public import Logging

/// One attachment to send: a file, bytes in memory, or a stream of byte chunks.
///
/// ```swift
/// let fromDisk = Attachment(path: "Samples/photo.jpg")
/// let fromMemory = Attachment(bytes: jpegBytes, filename: "photo.jpg")
/// let fromRequest = Attachment(stream: request.body.map { Array(buffer: $0) }, filename: "clip.mp4",
///                              byteCount: request.headers.contentLength)
/// ```
///
/// Bytes in memory are sent from memory; they touch the disk only when Transform needs a file (images to
/// recompress). A stream is read to its end before the upload starts: into memory up to
/// ``streamMemoryLimit``, into a private spool file (mode 0600, removed after the send) beyond it,
/// because every attempt of an upload must send the same bytes and a stream can be read only once.
public struct Attachment: Sendable {
    /// Where the bytes come from.
    public enum Content: Sendable {
        /// A file on disk (the path of ``Attachment/path``).
        case file
        /// Bytes in memory.
        case bytes([UInt8])
        /// Chunks from an asynchronous sequence, and how many bytes it will yield when known.
        case stream(AttachmentStream, byteCount: Int64?)
    }

    /// Streams up to this size are kept in memory; larger ones are spooled to a private file.
    public static let streamMemoryLimit = 8 * 1024 * 1024

    /// The file to send, or for bytes and streams the name they go by in receipts and errors (their
    /// filename).
    public var path: String
    /// Where the bytes come from.
    public var content: Content
    /// The kind the caller says it is; checked against the content, never trusted blindly.
    public var declaredKind: MessageKind?
    /// The filename to send; defaults to the last component of `path`.
    public var filename: String?
    /// Form fields for this attachment only, sent after the configuration's fields.
    public var fields: [UploadField]
    /// The idempotency key; a random one is made when nil. Give a stable key to make a re-run of the
    /// same attachment deduplicate on the server (the batch journal does).
    public var idempotencyKey: String?
    /// The key and nonce seed to seal with; fresh random ones are drawn when nil.
    ///
    /// Give material that was made durable before the first attempt (``SealMaterialStore``, a journal,
    /// a queue row) whenever the upload may be replayed: every attempt under one idempotency key, in any
    /// process, must send identical bytes, or the server keeps the first attempt's bytes and answers a
    /// later one with their receipt while the key in hand belongs to the later one.
    public var sealMaterial: SealMaterial?
    /// True when an earlier process may already have sent this attachment under the same idempotency
    /// key (a resumed batch entry, a key found in a ``SealMaterialStore``). The receipt is then checked
    /// against what is sent now whenever the server reports a digest (a `sha256` member).
    public var resumesEarlierSend: Bool
    /// A resumable upload an earlier process started for this attachment (the batch journal keeps it):
    /// continued at the server's offset when ``PipelineConfiguration/resumable`` applies.
    public var resumableState: ResumableState?
    /// Called with the resumable upload's resource and each offset the server confirms, and with nil
    /// when it is abandoned, so that the caller can make them durable (the batch journal does).
    public var onResumableState: (@Sendable (ResumableState?) -> Void)?
    /// What Detect found, when the caller already ran it in a blocking job of its own (the batch does, in
    /// the job that reads the file's identity): the pipeline then skips its own hand-off to the pool.
    package var detection: Detection?

    /// An attachment read from the file at `path`.
    public init(
        path: String, declaredKind: MessageKind? = nil, filename: String? = nil,
        fields: [UploadField] = [], idempotencyKey: String? = nil,
        sealMaterial: SealMaterial? = nil, resumesEarlierSend: Bool = false
    ) {
        self.path = path
        self.content = .file
        self.declaredKind = declaredKind
        self.filename = filename
        self.fields = fields
        self.idempotencyKey = idempotencyKey
        self.sealMaterial = sealMaterial
        self.resumesEarlierSend = resumesEarlierSend
    }

    /// An attachment read from a `file:` URL.
    /// - Throws: ``AttacheError`` `.invalidArgument` for a URL that is not a file URL.
    public init(
        fileURL: URL, declaredKind: MessageKind? = nil, filename: String? = nil, fields: [UploadField] = [],
        idempotencyKey: String? = nil, sealMaterial: SealMaterial? = nil
    ) throws {
        guard fileURL.isFileURL else {
            throw AttacheError(.invalidArgument, stage: .read, "not a file URL: \(fileURL.scheme ?? "no scheme")")
        }
        self.init(
            path: fileURL.path, declaredKind: declaredKind, filename: filename, fields: fields,
            idempotencyKey: idempotencyKey, sealMaterial: sealMaterial)
    }

    /// An attachment of bytes in memory, sent as `filename` (also the name in receipts and errors).
    public init(
        bytes: [UInt8], filename: String, declaredKind: MessageKind? = nil, fields: [UploadField] = [],
        idempotencyKey: String? = nil, sealMaterial: SealMaterial? = nil
    ) {
        self.init(
            path: filename, declaredKind: declaredKind, filename: filename, fields: fields,
            idempotencyKey: idempotencyKey, sealMaterial: sealMaterial)
        self.content = .bytes(bytes)
    }

    /// An attachment whose bytes arrive as chunks (a request body being received, a download), sent as
    /// `filename`. `byteCount`, when given, is checked: a stream that yields more or fewer bytes fails
    /// the send with `.corruptInput` before anything is uploaded.
    public init<Chunks: AsyncSequence & Sendable>(
        stream: Chunks, filename: String, byteCount: Int64? = nil, declaredKind: MessageKind? = nil,
        fields: [UploadField] = [], idempotencyKey: String? = nil, sealMaterial: SealMaterial? = nil
    ) where Chunks.Element == [UInt8] {
        self.init(
            path: filename, declaredKind: declaredKind, filename: filename, fields: fields,
            idempotencyKey: idempotencyKey, sealMaterial: sealMaterial)
        self.content = .stream(AttachmentStream(stream), byteCount: byteCount)
    }
}

/// An asynchronous sequence of byte chunks, type-erased so that an ``Attachment`` can hold any.
public struct AttachmentStream: Sendable {
    private let drain: @Sendable (_ consume: ([UInt8]) throws -> Void) async throws -> Void

    /// Wraps `chunks`; it is iterated once, when the attachment is sent, in the sending task (so the
    /// producer is asked for the next chunk only when the last one was stored: no buffering between).
    public init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) where Chunks.Element == [UInt8] {
        drain = { consume in
            for try await chunk in chunks { try consume(chunk) }
        }
    }

    /// Hands every chunk to `consume`, in order.
    func forEachChunk(_ consume: ([UInt8]) throws -> Void) async throws {
        try await drain(consume)
    }
}

/// Everything the pipeline needs to know, fixed for many attachments.
public struct PipelineConfiguration: Sendable {
    /// The upload endpoint.
    public var url: String
    /// The form name of the attachment part.
    public var fileFieldName = "file"
    /// "System parameters": form fields sent with every upload, before the attachment's own.
    public var fields: [UploadField] = []
    /// Send the detected type and metadata as form fields (`mimeType`, `kind`, `width`, `height`,
    /// `duration`, … see ``Detection/uploadFields``). `nil` (the default): yes, except with an answer
    /// profile whose endpoint checks every field against a signed policy (`s3-post`: S3 refuses a form with
    /// a field its policy does not list). See ``sendsMetadataFields``.
    public var sendMetadataFields: Bool?
    /// Send how a sealed attachment was sealed as form fields (`scheme`, `encoding`, `plaintextSize`; the
    /// key never). `nil` (the default): yes, except with `s3-post`, for the same reason as
    /// ``sendMetadataFields``; the receipt carries the same facts either way. See ``sendsSealFields``.
    public var sendSealFields: Bool?
    /// Where an image's thumbnails go. `nil` (the default): in the attachment's request (`inline`), except
    /// with an answer profile whose endpoint takes one file per request (`s3-post`), where they are not
    /// sent (`omitted`). See ``thumbnailPlacement``.
    public var thumbnails: ThumbnailPlacement?
    /// How content is detected and classified.
    public var detection = MIMEDetector.Configuration()
    /// What is recompressed, and how; thumbnails.
    public var transform = Transformer.Configuration()
    /// Image transforms running at once across all the sends of one pipeline (default: one per core).
    /// Uploads beyond that wait for a slot before decoding, which keeps a batch's memory bounded.
    public var transformConcurrency = ProcessInfo.processInfo.activeProcessorCount
    /// Sends of this pipeline running at once; more wait for a slot, first come first served. Nil (the
    /// default): no limit beyond the transforms' and the transport's own. A send waiting for a slot holds
    /// no thread; its ``SendOptions/timeLimit`` counts from the call.
    public var maximumConcurrentSends: Int?
    /// How attachments are encrypted on their way to the server.
    public var seal = SealConfiguration()
    /// How to talk to the server: timeouts, retries, TLS, headers, credentials.
    public var connection = ConnectionConfiguration()
    /// How the server's answers are read.
    public var answers = ResponseInterpreter.Configuration()
    /// Resumable uploads (tus 1.0, the IETF draft) for large attachments; off by default. A resumable
    /// upload sends the sealed attachment alone (fields as `Upload-Metadata`, no inline thumbnails).
    public var resumable = ResumableConfiguration()

    /// Creates a configuration for `url` with the defaults (HEIC/AVIF photos decoded by libheif).
    public init(url: String) {
        self.url = url
        transform.heifDecoder = LibHEIFDecoder()
    }

    /// Where thumbnails go: ``thumbnails``, or the answer profile's default.
    public var thumbnailPlacement: ThumbnailPlacement {
        thumbnails ?? (answers.profile.sendsOneFilePerRequest ? .omitted : .inline)
    }

    /// Whether metadata fields are sent: ``sendMetadataFields``, or the answer profile's default.
    public var sendsMetadataFields: Bool { sendMetadataFields ?? !answers.profile.checksFormFields }

    /// Whether seal fields are sent: ``sendSealFields``, or the answer profile's default.
    public var sendsSealFields: Bool { sendSealFields ?? !answers.profile.checksFormFields }

    /// Checks the combinations no server could take.
    /// - Throws: ``AttacheError`` `.invalidArgument` (stage `configuration`): thumbnails inline with a
    ///   profile that takes one file per request; separate thumbnails to a presigned POST whose `key` field
    ///   names one fixed object (each thumbnail would replace the attachment).
    public func validate() throws {
        let profile = answers.profile
        if profile.sendsOneFilePerRequest, thumbnailPlacement == .inline {
            throw AttacheError(
                .invalidArgument, stage: .configuration,
                "the \(profile) profile takes exactly one file part per request: thumbnails cannot go inline "
                    + "(use none or separate)")
        }
        if profile == .s3Post, thumbnailPlacement == .separate,
            let key = fields.last(where: { $0.name == "key" })?.value, !key.contains("${filename}")
        {
            throw AttacheError(
                .invalidArgument, stage: .configuration,
                "the form's key names one object, so each separate thumbnail would replace the attachment: "
                    + "use a key with ${filename} or no thumbnails")
        }
    }
}

/// Where an image's thumbnails go.
public enum ThumbnailPlacement: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// As extra parts of the attachment's own request (`thumbnail`, `thumbnailTiny`), after its file part.
    case inline
    /// Each in a request of its own, after the attachment was stored, with the attachment's form fields and
    /// the thumbnail as the one file part (named like the attachment's), under an idempotency key derived
    /// from the attachment's. Each gets its own receipt (``UploadReceipt/thumbnailUploads``).
    case separate
    /// Not made, not sent (`none` on the command line).
    case omitted = "none"

    /// The name used on the command line.
    public var description: String { rawValue }
}

/// How the Seal stage encrypts attachments.
///
/// The default is `stream-gcm` with a fresh random key per attachment, returned in the receipt
/// (``UploadReceipt/key``) for the message that carries the attachment, as Signal and Telegram do. With a
/// fixed `key`, every attachment is sealed with it and no key is put in receipts.
public struct SealConfiguration: Sendable {
    /// The encryption scheme; `.none` sends the bytes as they are.
    public var scheme: SealScheme = .streamGCM
    /// Binary or base64 on the wire.
    public var transferEncoding: TransferEncoding = .binary
    /// One key for every attachment; `nil` makes a fresh random key per attachment.
    public var key: AttachmentKey?

    /// `stream-gcm`, binary, a fresh key per attachment.
    public init() {}

    /// No encryption, binary.
    public static var none: SealConfiguration {
        var configuration = SealConfiguration()
        configuration.scheme = .none
        return configuration
    }
}

/// Progress of one attachment through the pipeline.
public enum PipelineProgress: Sendable {
    /// A stage began.
    case stage(AttacheError.Stage)
    /// Upload progress.
    case upload(UploadProgress)
}

/// Sends attachments through Detect → Transform → Seal → Upload → Interpret.
///
/// This file is the whole data path; each stage is a `Sendable` value holding only its configuration.
///
/// ```swift
/// let pipeline = AttachmentPipeline(configuration: PipelineConfiguration(url: "http://127.0.0.1:8080/upload"))
/// let receipt = try await pipeline.send(Attachment(path: "Samples/photo.jpg"))
/// print(receipt.fileId ?? "-", receipt.kind, receipt.mimeType)
/// ```
public struct AttachmentPipeline: Sendable {
    /// The configuration in use.
    public private(set) var configuration: PipelineConfiguration
    /// Where the pipeline logs.
    public let logger: Logger
    private let detector: MIMEDetector
    private let transformer: Transformer
    private let transformLimiter: AsyncLimiter
    private let sendLimiter: AsyncLimiter?
    private var uploader: Uploader

    /// Creates a pipeline.
    public init(configuration: PipelineConfiguration, logger: Logger = Logger(label: "attache")) {
        self.configuration = configuration
        self.logger = logger
        self.detector = MIMEDetector(configuration: configuration.detection)
        var transform = configuration.transform
        if configuration.thumbnailPlacement == .omitted { transform.makeThumbnails = false }
        self.transformer = Transformer(configuration: transform)
        self.transformLimiter = AsyncLimiter(limit: configuration.transformConcurrency)
        self.sendLimiter = configuration.maximumConcurrentSends.map { AsyncLimiter(limit: max(1, $0)) }
        self.uploader = Uploader(connection: configuration.connection, answers: configuration.answers, logger: logger)
    }

    /// Sends one attachment and returns the server's receipt.
    ///
    /// - Parameters:
    ///   - options: what this send changes of the configuration (headers, fields, a time limit, the
    ///     answer profile, the seal); nothing by default.
    ///   - progress: stage changes and upload progress, from any thread.
    /// - Throws: ``AttacheError`` naming the file and the stage: unreadable input, a refusal by the
    ///   server (`.rejected`, `.badResponse`, with ``AttacheError/rejection``), retries exhausted,
    ///   `.timedOut` past ``SendOptions/timeLimit``, cancellation.
    public func send(
        _ attachment: Attachment, options: SendOptions = SendOptions(),
        progress: (@Sendable (PipelineProgress) -> Void)? = nil
    ) async throws -> UploadReceipt {
        let pipeline = applying(options)
        do {
            guard let limit = options.timeLimit else { return try await pipeline.limited(attachment, progress: progress) }
            return try await pipeline.run(attachment, within: limit, progress: progress)
        } catch let error as AttacheError {
            throw error.concerning(attachment.path)
        } catch is CancellationError {
            throw AttacheError(.cancelled, stage: .upload, "cancelled", file: attachment.path)
        }
    }

    /// `run` within the pipeline's limit of concurrent sends.
    private func limited(
        _ attachment: Attachment, progress: (@Sendable (PipelineProgress) -> Void)?
    ) async throws -> UploadReceipt {
        guard let sendLimiter else { return try await run(attachment, progress: progress) }
        return try await sendLimiter.run { try await run(attachment, progress: progress) }
    }

    /// This pipeline with one send's options applied.
    private func applying(_ options: SendOptions) -> AttachmentPipeline {
        guard !options.headers.isEmpty || !options.fields.isEmpty || options.answers != nil || options.seal != nil
        else { return self }
        var copy = self
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
        return copy
    }

    /// `run` with a time limit: past `limit` the send is cancelled and `.timedOut` names the stage it
    /// was in.
    private func run(
        _ attachment: Attachment, within limit: Duration, progress: (@Sendable (PipelineProgress) -> Void)?
    ) async throws -> UploadReceipt {
        let stage = LockedValue(AttacheError.Stage.read)
        let tracking: @Sendable (PipelineProgress) -> Void = { update in
            if case .stage(let current) = update {
                stage.withLock { $0 = current }
            }
            progress?(update)
        }
        return try await withThrowingTaskGroup(of: UploadReceipt?.self) { group in
            group.addTask { try await self.limited(attachment, progress: tracking) }
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

    private func run(
        _ attachment: Attachment, progress: (@Sendable (PipelineProgress) -> Void)?
    ) async throws -> UploadReceipt {
        try configuration.validate()
        let clock = ContinuousClock()
        let start = clock.now
        // A name whose bytes are not UTF-8 goes out with U+FFFD for each such byte (PlatformPath).
        var filename = PlatformPath.displayName(attachment.filename ?? PathText.lastComponent(attachment.path))
        // Input: a file is read where it is, bytes from memory; a stream is read to its end first (into
        // memory, or a private spool file when large), because every attempt must send the same bytes.
        let input = try await PreparedInput(attachment, filename: filename)
        defer { input.remove() }
        // A guarded source: a reader that finds the bytes changed while it read them (whatever the size
        // and modification time say) fails before handing out the last bytes, so a torn file never
        // completes on the server. Bytes in memory cannot change under us.
        let original: any ByteSource
        let guarded: FileSource?
        switch input.content {
        case .file(let path):
            guarded = try FileSource(path: path, verifiesContent: true)
            original = guarded!
        case .memory(let bytes):
            guarded = nil
            original = DataSource(bytes)
        }

        // Detect: type, kind and metadata from the content (the caller's declared kind is checked).
        progress?(.stage(.detect))
        let detection: Detection
        if let known = attachment.detection {
            detection = known
        } else {
            switch input.content {
            case .file(let path):
                detection = try await detector.detect(fileAt: path, declaredKind: attachment.declaredKind, on: .shared)
            case .memory(let bytes):
                detection = try detector.detect(contents: bytes, filename: filename, declaredKind: attachment.declaredKind)
            }
        }
        if detection.mismatch {
            logger.debug(
                "extension and content disagree",
                metadata: [
                    "file": "\(attachment.path)", "content": "\(detection.mimeType)",
                    "extension": "\(detection.extensionMIMEType ?? "-")",
                ])
        }

        // Transform: images and stickers recompressed, videos, voice notes and animations converted,
        // thumbnails made; files pass through.
        progress?(.stage(.transform))
        // A work directory only for files that will be transformed: most of a batch (voice, video, files)
        // never touches the disk here.
        let isAnimated = detection.metadata.isAnimated == true
        let transforms = transformer.configuration.transforms(
            mimeType: detection.mimeType, kind: detection.kind, isAnimated: isAnimated)
        let workDirectory = transforms ? try Self.makeWorkDirectory() : nil
        defer { if let workDirectory { try? FileManager.default.removeItem(atPath: workDirectory) } }
        let transformer = self.transformer
        // The codecs read a file: bytes in memory that need recompressing are written to the private
        // work directory first.
        let sourcePath: String
        switch input.content {
        case .file(let path): sourcePath = path
        case .memory(let bytes):
            // Named with the attachment's extension, which some decoders go by.
            let dot = filename.lastIndex(of: ".").map { String(filename[$0...]) } ?? ""
            let name = "input" + (dot.count <= 12 && !dot.contains("/") ? dot : "")
            sourcePath = transforms ? try PreparedInput.write(bytes, into: workDirectory!, name: name) : attachment.path
        }
        let transform = {
            try await transformer.transform(
                fileAt: sourcePath, mimeType: detection.mimeType, kind: detection.kind, isAnimated: isAnimated,
                workDirectory: workDirectory ?? PathText.temporaryDirectory)
        }
        // The transform reads the source on its own; a change while it reads shows in a second
        // fingerprint of the (small) image file.
        let before = transforms ? try await BlockingPool.shared.run { try guarded?.contentFingerprint() ?? 0 } : 0
        // A kind this stage leaves alone needs no job on the pool: the guarded source already knows the
        // size, and a batch of small files feels every hand-off between threads.
        let transformed =
            transforms
            ? try await transformLimiter.run(transform)
            : Transformer.passThrough(original, path: sourcePath, mimeType: detection.mimeType)
        if transforms, transformed.didTransform, let guarded {
            let after = try await BlockingPool.shared.run { try guarded.contentFingerprint() }
            guard after == before else {
                throw AttacheError(
                    .fileChanged, stage: .transform, "the file changed while it was being recompressed",
                    file: attachment.path, isRetryable: true)
            }
        }
        if let reason = transformed.skipReason {
            logger.debug(
                "sending the original: it cannot be transformed",
                metadata: ["file": "\(attachment.path)", "reason": "\(reason)"])
        }
        let payload: any ByteSource = transformed.didTransform ? try FileSource(path: transformed.path) : original
        if let newExtension = transformed.filenameExtension {
            filename = Self.replacingExtension(of: filename, with: newExtension)
        }

        // Seal: encryption and transfer encoding, streamed (nothing is read until the upload pulls).
        progress?(.stage(.seal))
        let seal = configuration.seal
        let material = attachment.sealMaterial ?? SealMaterial.random(for: seal.scheme)
        let key = seal.key ?? material.key
        let sealer = Sealer(scheme: seal.scheme, key: key, transferEncoding: seal.transferEncoding)
        // Part 0 is the attachment, 1... the thumbnails: each its own header values from the one seed.
        let sealed = try sealer.seal(payload, material: material, part: 0)
        let isPlain = seal.scheme == .none && seal.transferEncoding == .binary
        let sealedContentType =
            isPlain ? transformed.mimeType : (seal.transferEncoding == .binary ? "application/octet-stream" : "text/plain")

        // Upload + Interpret: system fields, the attachment's fields, metadata, the part, thumbnails. Every
        // field comes before the first file part: a presigned POST (S3) reads fields only up to its one file
        // part and ignores or refuses what follows.
        progress?(.stage(.upload))
        var body = MultipartBody()
        for field in configuration.fields + attachment.fields {
            try body.addField(name: field.name, value: field.value)
        }
        if configuration.sendsMetadataFields {
            for field in Self.metadataFields(detection: detection, transformed: transformed) {
                try body.addField(name: field.name, value: field.value)
            }
        }
        if !isPlain, configuration.sendsSealFields {
            // What the receiver needs to open the part; the key itself never goes to the server.
            try body.addField(name: "scheme", value: seal.scheme.rawValue)
            try body.addField(name: "encoding", value: seal.transferEncoding.rawValue)
            try body.addField(name: "plaintextSize", value: String(sealed.plaintextByteCount))
        }
        try body.addFile(
            name: configuration.fileFieldName, filename: filename, contentType: sealedContentType, source: sealed)
        let placement = configuration.thumbnailPlacement
        if placement == .inline {
            for (index, thumbnail) in transformed.thumbnails.enumerated() {
                let thumbnailSource = try sealer.seal(DataSource(thumbnail.bytes), material: material, part: index + 1)
                try body.addFile(
                    name: thumbnail.name, filename: thumbnail.filename,
                    contentType: isPlain ? thumbnail.mimeType : sealedContentType, source: thumbnailSource)
            }
        }
        let idempotencyKey = attachment.idempotencyKey ?? Uploader.makeIdempotencyKey()
        var resumed: ResumableUploadResult?
        if configuration.resumable.applies(toByteCount: sealed.byteCount) {
            // The same fields as the multipart form, as Upload-Metadata; the sealed bytes as the body.
            var fields = configuration.fields + attachment.fields
            if configuration.sendsMetadataFields {
                fields += Self.metadataFields(detection: detection, transformed: transformed)
            }
            if !isPlain, configuration.sendsSealFields {
                fields += [
                    UploadField(name: "scheme", value: seal.scheme.rawValue),
                    UploadField(name: "encoding", value: seal.transferEncoding.rawValue),
                    UploadField(name: "plaintextSize", value: String(sealed.plaintextByteCount)),
                ]
            }
            let resumableUploader = ResumableUploader(
                connection: configuration.connection, answers: configuration.answers,
                configuration: configuration.resumable, logger: logger)
            resumed = try await resumableUploader.upload(
                ResumableUploadRequest(
                    url: configuration.url, body: sealed, contentType: sealedContentType, filename: filename,
                    fields: fields, idempotencyKey: idempotencyKey, resumeFrom: attachment.resumableState),
                onState: attachment.onResumableState
            ) { update in progress?(.upload(update)) }
            if resumed == nil {
                logger.debug("the server takes no resumable uploads; sending multipart", metadata: ["file": "\(attachment.path)"])
            }
        }
        let result: UploadResult
        if let resumed {
            result = resumed.upload
        } else {
            let request = UploadRequest(url: configuration.url, body: body, idempotencyKey: idempotencyKey)
            result = try await uploader.upload(request) { update in progress?(.upload(update)) }
        }

        switch result.outcome {
        case .stored(let receipt):
            try await checkReplay(
                receipt, sent: sealed, attachment: attachment, attempts: result.attempts,
                freshMaterial: attachment.sealMaterial == nil && seal.key == nil && seal.scheme != .none)
            var thumbnailUploads: [ThumbnailReceipt]?
            if placement == .separate, !transformed.thumbnails.isEmpty {
                thumbnailUploads = []
                for (index, thumbnail) in transformed.thumbnails.enumerated() {
                    let sealedThumbnail = try sealer.seal(DataSource(thumbnail.bytes), material: material, part: index + 1)
                    thumbnailUploads?.append(
                        try await sendSeparately(
                            thumbnail, sealed: sealedThumbnail, attachment: attachment, filename: filename,
                            contentType: isPlain ? thumbnail.mimeType : sealedContentType, isPlain: isPlain,
                            idempotencyKey: result.idempotencyKey + "." + thumbnail.name))
                }
            }
            var uploadReceipt = UploadReceipt(
                path: attachment.path, filename: filename, kind: detection.kind, mimeType: transformed.mimeType,
                fileId: receipt.fileId ?? presignedKey(attachment: attachment, filename: filename),
                url: absoluteURL(receipt.url), originalByteCount: original.byteCount,
                sentByteCount: sealed.byteCount, bodyByteCount: result.bodyByteCount,
                idempotencyKey: result.idempotencyKey, attempts: result.attempts, replayed: receipt.replayed,
                seconds: (clock.now - start).seconds, server: receipt.data,
                seal: SealReceipt(
                    scheme: seal.scheme, transferEncoding: seal.transferEncoding,
                    plaintextByteCount: sealed.plaintextByteCount, digest: sealed.digest,
                    key: seal.key == nil && seal.scheme != .none ? key : nil),
                detection: detection,
                transform: TransformReceipt(
                    recompressed: transformed.didTransform, byteCount: transformed.outputByteCount,
                    width: transformed.width, height: transformed.height,
                    thumbnails: placement == .inline ? transformed.thumbnails.map(\.name) : [],
                    skipped: transformed.skipReason, media: MediaReceipt(transformed)),
                thumbnailUploads: thumbnailUploads,
                thumbnails: Self.thumbnailSummaries(
                    transformed.thumbnails, placement: placement, server: receipt.data, separate: thumbnailUploads,
                    resolve: absoluteURL))
            uploadReceipt.resumable = resumed.map {
                ResumableReceipt(
                    protocolName: $0.protocolName, uploadURL: $0.uploadURL, resumedBytes: $0.resumedFrom,
                    bytesSent: $0.bytesSent, requests: $0.requests)
            }
            return uploadReceipt
        case .rejected(let rejection):
            throw AttacheError(
                rejection.reason == .badResponse ? .badResponse : .rejected, stage: .interpret,
                "the server refused the upload: \(rejection)", file: attachment.path,
                cause: RejectionError(rejection: rejection))
        }
    }

    /// Runs the Detect stage on the calling thread (blocking file I/O: call it from a pool job), for a
    /// caller that hands the result on in ``Attachment/detection``.
    package func detectBlocking(fileAt path: String, declaredKind: MessageKind?) throws -> Detection {
        try detector.detect(fileAt: path, declaredKind: declaredKind)
    }

    /// Sends one thumbnail as a request of its own (``ThumbnailPlacement/separate``): the attachment's form
    /// fields, the thumbnail's own metadata and seal fields where those are sent, and the thumbnail as the
    /// one file part, under the attachment's file field, named after the attachment
    /// (`photo.thumbnail.jpg`) so that a presigned POST's `${filename}` key gives it an object of its own.
    private func sendSeparately(
        _ thumbnail: Thumbnail, sealed: SealedPayload, attachment: Attachment, filename: String,
        contentType: String, isPlain: Bool, idempotencyKey: String
    ) async throws -> ThumbnailReceipt {
        var body = MultipartBody()
        for field in configuration.fields + attachment.fields {
            try body.addField(name: field.name, value: field.value)
        }
        if configuration.sendsMetadataFields {
            try body.addField(name: "mimeType", value: thumbnail.mimeType)
            try body.addField(name: "width", value: String(thumbnail.width))
            try body.addField(name: "height", value: String(thumbnail.height))
        }
        if !isPlain, configuration.sendsSealFields {
            try body.addField(name: "scheme", value: configuration.seal.scheme.rawValue)
            try body.addField(name: "encoding", value: configuration.seal.transferEncoding.rawValue)
            try body.addField(name: "plaintextSize", value: String(sealed.plaintextByteCount))
        }
        let stem = PathText.deletingExtension(filename)
        let thumbnailFilename = (stem.isEmpty ? filename : stem) + "." + thumbnail.filename
        try body.addFile(
            name: configuration.fileFieldName, filename: thumbnailFilename, contentType: contentType, source: sealed)
        let result = try await uploader.upload(
            UploadRequest(url: configuration.url, body: body, idempotencyKey: idempotencyKey))
        switch result.outcome {
        case .stored(let receipt):
            try await checkReplay(
                receipt, sent: sealed, attachment: attachment, attempts: result.attempts, freshMaterial: false)
            return ThumbnailReceipt(
                name: thumbnail.name, filename: thumbnailFilename, mimeType: thumbnail.mimeType,
                width: thumbnail.width, height: thumbnail.height,
                fileId: receipt.fileId ?? presignedKey(attachment: attachment, filename: thumbnailFilename),
                url: absoluteURL(receipt.url), sentByteCount: sealed.byteCount, digest: sealed.digest,
                idempotencyKey: result.idempotencyKey, attempts: result.attempts, replayed: receipt.replayed,
                server: receipt.data)
        case .rejected(let rejection):
            throw AttacheError(
                rejection.reason == .badResponse ? .badResponse : .rejected, stage: .interpret,
                "the attachment was stored, but the server refused its \(thumbnail.name): \(rejection)",
                file: attachment.path, cause: RejectionError(rejection: rejection))
        }
    }

    /// With `s3-post`, the object's key when the answer did not name it (S3's `204`): the form's `key`
    /// field, with `${filename}` replaced by the filename sent, as S3 does.
    private func presignedKey(attachment: Attachment, filename: String) -> String? {
        guard configuration.answers.profile == .s3Post,
            let key = (configuration.fields + attachment.fields).last(where: { $0.name == "key" })?.value
        else { return nil }
        return key.replacing("${filename}", with: filename)
    }

    /// One typed entry per thumbnail sent: its own receipt's id and URL when it went separately; when it
    /// went inline, the id and URL of the part of that name in the server's `parts` list, if the server
    /// lists its parts (the reference server does).
    static func thumbnailSummaries(
        _ thumbnails: [Thumbnail], placement: ThumbnailPlacement, server: JSONValue, separate: [ThumbnailReceipt]?,
        resolve: (String?) -> String?
    ) -> [ReceiptThumbnail] {
        guard placement != .omitted else { return [] }
        return thumbnails.map { thumbnail in
            var fileId: String?
            var url: String?
            if placement == .separate, let own = separate?.first(where: { $0.name == thumbnail.name }) {
                fileId = own.fileId
                url = own.url
            } else if case .array(let parts)? = server["parts"],
                let part = parts.first(where: { $0["name"]?.stringValue == thumbnail.name })
            {
                fileId = part["fileId"]?.stringValue
                url = resolve(part["url"]?.stringValue)
            }
            return ReceiptThumbnail(
                name: thumbnail.name, filename: thumbnail.filename, mimeType: thumbnail.mimeType, width: thumbnail.width,
                height: thumbnail.height, byteCount: Int64(thumbnail.bytes.count), placement: placement,
                fileId: fileId, url: url)
        }
    }

    /// The server's file URL made absolute against the upload URL (`/files/7` → `http://host:port/files/7`),
    /// so that a receipt leads to the file without knowing where it was uploaded; as given when it is
    /// absolute already or cannot be resolved.
    func absoluteURL(_ url: String?) -> String? {
        guard let url, !url.isEmpty else { return url }
        guard let base = URL(string: configuration.url), let resolved = URL(string: url, relativeTo: base),
              let scheme = resolved.scheme, !scheme.isEmpty
        else { return url }
        return resolved.absoluteString
    }

    /// Makes sure a receipt that may belong to an earlier upload under the same idempotency key is a
    /// receipt for the bytes sent now, so that the key it is returned with opens what the server holds.
    ///
    /// When the server says it replayed (`Idempotent-Replayed: true`) or this send resumes an earlier one,
    /// and the answer carries a `sha256` of the stored part, the part is sealed again (identical bytes)
    /// and hashed; a different digest is an error. A replay of an upload made with other material, and
    /// without a digest to compare, is an error too: this process cannot know that upload's key.
    private func checkReplay(
        _ receipt: ServerReceipt, sent: SealedPayload, attachment: Attachment, attempts: Int, freshMaterial: Bool
    ) async throws {
        guard receipt.replayed || attachment.resumesEarlierSend else { return }
        let reported = receipt.data["sha256"]?.stringValue?.lowercased()
        guard let reported, reported.count == 64 else {
            if receipt.replayed, attempts == 1, freshMaterial {
                throw AttacheError(
                    .replayMismatch, stage: .interpret,
                    "the server replayed an earlier upload made under this idempotency key with another seal key, "
                        + "and gave no digest to check it against", file: attachment.path)
            }
            return
        }
        let actual = try await BlockingPool.shared.run { try ContentDigest.sha256Hex(of: sent) }
        guard actual == reported else {
            throw AttacheError(
                .replayMismatch, stage: .interpret,
                "the server answered with the receipt of other bytes stored under this idempotency key "
                    + "(sha256 \(reported.prefix(16))…, sent \(actual.prefix(16))…); its key would not open them",
                file: attachment.path)
        }
    }

    /// The detected metadata as form fields, with what Transform changed (type, size, orientation).
    static func metadataFields(detection: Detection, transformed: TransformOutput) -> [UploadField] {
        var fields = detection.uploadFields.filter { field in
            switch field.name {
            case "mimeType": return false
            case "width", "height", "orientation", "rotation": return !transformed.didTransform
            default: return true
            }
        }
        fields.insert(UploadField(name: "mimeType", value: transformed.mimeType), at: 0)
        // A converted video or animation says what was sent; a video that went as it is (already compliant)
        // has the detected size, which the converter knows from its probe too.
        let media = transformed.mediaPlan != nil
        if media { fields.removeAll { ["width", "height", "duration", "rotation"].contains($0.name) } }
        if transformed.didTransform || media {
            if let width = transformed.width { fields.append(UploadField(name: "width", value: String(width))) }
            if let height = transformed.height { fields.append(UploadField(name: "height", value: String(height))) }
        }
        if media, let duration = transformed.duration {
            fields.append(UploadField(name: "duration", value: MediaMetadata.format(duration)))
        }
        if let streaming = transformed.supportsStreaming {
            fields.append(UploadField(name: "supportsStreaming", value: String(streaming)))
        }
        if transformed.isAnimation { fields.append(UploadField(name: "animation", value: "true")) }
        if let waveform = transformed.waveform {
            fields.append(UploadField(name: "waveform", value: Base64.encode(waveform)))
        }
        return fields
    }

    static func replacingExtension(of filename: String, with newExtension: String) -> String {
        let stem = PathText.deletingExtension(filename)
        return (stem.isEmpty ? filename : stem) + "." + newExtension
    }

    /// A private directory for this attachment's transformed files, removed when it is sent.
    static func makeWorkDirectory() throws -> String {
        var template = Array((PathText.temporaryDirectory + "/attache-XXXXXX").utf8CString)
        guard let created = mkdtemp(&template) else {
            throw AttacheError(
                .fileUnwritable, stage: .transform, "cannot create a temporary directory",
                cause: NativeError.posix())
        }
        return String(cString: created)
    }
}

/// A server's refusal, carried as the `cause` of an ``AttacheError``.
public struct RejectionError: Error, Sendable, CustomStringConvertible {
    /// The refusal.
    public let rejection: Rejection
    public var description: String { rejection.description }
}

extension AttacheError {
    /// The server's refusal (status, business code, server message) when this error, or one in its
    /// chain of causes, is a `rejected` answer; nil otherwise.
    ///
    /// ```swift
    /// catch let error as AttacheError {
    ///     if let rejection = error.rejection, rejection.status == 413 { … }
    /// }
    /// ```
    public var rejection: Rejection? {
        var current: AttacheError? = self
        while let error = current {
            if let refusal = error.cause as? RejectionError { return refusal.rejection }
            current = error.cause as? AttacheError
        }
        return nil
    }
}
