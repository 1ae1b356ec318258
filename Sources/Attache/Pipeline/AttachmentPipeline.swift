import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
public import Logging

/// One attachment to send.
public struct Attachment: Sendable {
    /// The file to send.
    public var path: String
    /// The kind the caller says it is; checked against the content, never trusted blindly.
    public var declaredKind: MessageKind?
    /// The filename to send; defaults to the last component of `path`.
    public var filename: String?
    /// Form fields for this attachment only, sent after the configuration's fields.
    public var fields: [(name: String, value: String)]
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
    /// What Detect found, when the caller already ran it in a blocking job of its own (the batch does, in
    /// the job that reads the file's identity): the pipeline then skips its own hand-off to the pool.
    package var detection: Detection?

    /// Creates an attachment.
    public init(
        path: String, declaredKind: MessageKind? = nil, filename: String? = nil,
        fields: [(name: String, value: String)] = [], idempotencyKey: String? = nil,
        sealMaterial: SealMaterial? = nil, resumesEarlierSend: Bool = false
    ) {
        self.path = path
        self.declaredKind = declaredKind
        self.filename = filename
        self.fields = fields
        self.idempotencyKey = idempotencyKey
        self.sealMaterial = sealMaterial
        self.resumesEarlierSend = resumesEarlierSend
    }
}

/// Everything the pipeline needs to know, fixed for many attachments.
public struct PipelineConfiguration: Sendable {
    /// The upload endpoint.
    public var url: String
    /// The form name of the attachment part.
    public var fileFieldName = "file"
    /// "System parameters": form fields sent with every upload, before the attachment's own.
    public var fields: [(name: String, value: String)] = []
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
    /// How attachments are encrypted on their way to the server.
    public var seal = SealConfiguration()
    /// How to talk to the server: timeouts, retries, TLS, headers, credentials.
    public var connection = ConnectionConfiguration()
    /// How the server's answers are read.
    public var answers = ResponseInterpreter.Configuration()

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
    public let configuration: PipelineConfiguration
    /// Where the pipeline logs.
    public let logger: Logger
    private let detector: MIMEDetector
    private let transformer: Transformer
    private let transformLimiter: AsyncLimiter
    private let uploader: Uploader

    /// Creates a pipeline.
    public init(configuration: PipelineConfiguration, logger: Logger = Logger(label: "attache")) {
        self.configuration = configuration
        self.logger = logger
        self.detector = MIMEDetector(configuration: configuration.detection)
        var transform = configuration.transform
        if configuration.thumbnailPlacement == .omitted { transform.makeThumbnails = false }
        self.transformer = Transformer(configuration: transform)
        self.transformLimiter = AsyncLimiter(limit: configuration.transformConcurrency)
        self.uploader = Uploader(connection: configuration.connection, answers: configuration.answers, logger: logger)
    }

    /// Sends one attachment and returns the server's receipt.
    ///
    /// - Parameter progress: stage changes and upload progress, from any thread.
    /// - Throws: ``AttacheError`` naming the file and the stage: unreadable input, a refusal by the
    ///   server (`.rejected`, `.badResponse`), retries exhausted, cancellation.
    public func send(
        _ attachment: Attachment, progress: (@Sendable (PipelineProgress) -> Void)? = nil
    ) async throws -> UploadReceipt {
        do {
            return try await run(attachment, progress: progress)
        } catch let error as AttacheError {
            throw error.concerning(attachment.path)
        } catch is CancellationError {
            throw AttacheError(.cancelled, stage: .upload, "cancelled", file: attachment.path)
        }
    }

    private func run(
        _ attachment: Attachment, progress: (@Sendable (PipelineProgress) -> Void)?
    ) async throws -> UploadReceipt {
        try configuration.validate()
        let clock = ContinuousClock()
        let start = clock.now
        // A guarded source: a reader that finds the bytes changed while it read them (whatever the size
        // and modification time say) fails before handing out the last bytes, so a torn file never
        // completes on the server.
        let original = try FileSource(path: attachment.path, verifiesContent: true)
        // A name whose bytes are not UTF-8 goes out with U+FFFD for each such byte (PlatformPath).
        var filename = PlatformPath.displayName(attachment.filename ?? PathText.lastComponent(attachment.path))

        // Detect: type, kind and metadata from the content (the caller's declared kind is checked).
        progress?(.stage(.detect))
        let detection =
            if let known = attachment.detection {
                known
            } else {
                try await detector.detect(fileAt: attachment.path, declaredKind: attachment.declaredKind, on: .shared)
            }
        if detection.mismatch {
            logger.notice(
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
        let transform = {
            try await transformer.transform(
                fileAt: attachment.path, mimeType: detection.mimeType, kind: detection.kind, isAnimated: isAnimated,
                workDirectory: workDirectory ?? PathText.temporaryDirectory)
        }
        // The transform reads the source on its own; a change while it reads shows in a second
        // fingerprint of the (small) image file.
        let before = transforms ? try await BlockingPool.shared.run { try original.contentFingerprint() } : 0
        // A kind this stage leaves alone needs no job on the pool: the guarded source already knows the
        // size, and a batch of small files feels every hand-off between threads.
        let transformed =
            transforms
            ? try await transformLimiter.run(transform) : Transformer.passThrough(original, mimeType: detection.mimeType)
        if transforms, transformed.didTransform {
            let after = try await BlockingPool.shared.run { try original.contentFingerprint() }
            guard after == before else {
                throw AttacheError(
                    .fileChanged, stage: .transform, "the file changed while it was being recompressed",
                    file: attachment.path, isRetryable: true)
            }
        }
        if let reason = transformed.skipReason {
            logger.notice(
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
        let request = UploadRequest(
            url: configuration.url, body: body, idempotencyKey: attachment.idempotencyKey)
        let result = try await uploader.upload(request) { update in progress?(.upload(update)) }

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
            return UploadReceipt(
                path: attachment.path, filename: filename, kind: detection.kind, mimeType: transformed.mimeType,
                fileId: receipt.fileId ?? presignedKey(attachment: attachment, filename: filename),
                url: receipt.url, originalByteCount: original.byteCount,
                sentByteCount: sealed.byteCount, bodyByteCount: result.bodyByteCount,
                idempotencyKey: result.idempotencyKey, attempts: result.attempts, replayed: receipt.replayed,
                seconds: (clock.now - start).seconds, server: receipt.data,
                seal: SealReceipt(
                    scheme: seal.scheme, transferEncoding: seal.transferEncoding,
                    plaintextByteCount: sealed.plaintextByteCount, digest: sealed.digest,
                    key: seal.key == nil && seal.scheme != .none ? key.base64EncodedString : nil),
                detection: detection,
                transform: TransformReceipt(
                    recompressed: transformed.didTransform, byteCount: transformed.outputByteCount,
                    width: transformed.width, height: transformed.height,
                    thumbnails: placement == .inline ? transformed.thumbnails.map(\.name) : [],
                    skipped: transformed.skipReason, media: MediaReceipt(transformed)),
                thumbnailUploads: thumbnailUploads)
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
                url: receipt.url, sentByteCount: sealed.byteCount, digest: sealed.digest,
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
