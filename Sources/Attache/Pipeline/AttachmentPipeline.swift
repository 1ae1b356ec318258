import Foundation
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

    /// Creates an attachment.
    public init(
        path: String, declaredKind: MessageKind? = nil, filename: String? = nil,
        fields: [(name: String, value: String)] = [], idempotencyKey: String? = nil
    ) {
        self.path = path
        self.declaredKind = declaredKind
        self.filename = filename
        self.fields = fields
        self.idempotencyKey = idempotencyKey
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
    /// Send the message kind as a form field named `kind`.
    public var sendKindField = true
    /// How attachments are encrypted on their way to the server.
    public var seal = SealConfiguration()
    /// How to talk to the server.
    public var upload = UploadConfiguration()

    /// Creates a configuration for `url` with the defaults.
    public init(url: String) {
        self.url = url
    }
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
    private let uploader: Uploader

    /// Creates a pipeline.
    public init(configuration: PipelineConfiguration, logger: Logger = Logger(label: "attache")) {
        self.configuration = configuration
        self.logger = logger
        self.uploader = Uploader(configuration: configuration.upload, logger: logger)
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
        let clock = ContinuousClock()
        let start = clock.now
        let original = try FileSource(path: attachment.path)
        let filename = attachment.filename ?? (attachment.path as NSString).lastPathComponent

        // Detect: content type and message kind. (Content-based detection plugs in here.)
        progress?(.stage(.detect))
        let mimeType = "application/octet-stream"
        let kind = attachment.declaredKind ?? .file

        // Transform: recompression of images and stickers plugs in here; other kinds pass through.
        progress?(.stage(.transform))
        let payload: any ByteSource = original

        // Seal: encryption and transfer encoding, streamed (nothing is read until the upload pulls).
        progress?(.stage(.seal))
        let seal = configuration.seal
        let key = seal.key ?? (seal.scheme == .none ? nil : AttachmentKey.random(for: seal.scheme))
        let sealer = Sealer(
            scheme: seal.scheme, key: key ?? AttachmentKey.random(for: .none), transferEncoding: seal.transferEncoding)
        let sealed = try sealer.seal(payload)
        let isPlain = seal.scheme == .none && seal.transferEncoding == .binary

        // Upload + Interpret.
        progress?(.stage(.upload))
        var body = MultipartBody()
        for field in configuration.fields + attachment.fields {
            try body.addField(name: field.name, value: field.value)
        }
        if configuration.sendKindField {
            try body.addField(name: "kind", value: kind.rawValue)
        }
        if !isPlain {
            // What the receiver needs to open the part; the key itself never goes to the server.
            try body.addField(name: "scheme", value: seal.scheme.rawValue)
            try body.addField(name: "encoding", value: seal.transferEncoding.rawValue)
            try body.addField(name: "mimeType", value: mimeType)
            try body.addField(name: "plaintextSize", value: String(sealed.plaintextByteCount))
        }
        try body.addFile(
            name: configuration.fileFieldName, filename: filename,
            contentType: isPlain ? mimeType : (seal.transferEncoding == .binary ? "application/octet-stream" : "text/plain"),
            source: sealed)
        let request = UploadRequest(
            url: configuration.url, body: body, idempotencyKey: attachment.idempotencyKey)
        let result = try await uploader.upload(request) { update in progress?(.upload(update)) }

        switch result.outcome {
        case .stored(let receipt):
            return UploadReceipt(
                path: attachment.path, filename: filename, kind: kind, mimeType: mimeType,
                fileId: receipt.fileId, url: receipt.url, originalByteCount: original.byteCount,
                sentByteCount: sealed.byteCount, bodyByteCount: result.bodyByteCount,
                idempotencyKey: result.idempotencyKey, attempts: result.attempts, replayed: receipt.replayed,
                seconds: (clock.now - start).seconds, server: receipt.data,
                seal: SealReceipt(
                    scheme: seal.scheme, transferEncoding: seal.transferEncoding,
                    plaintextByteCount: sealed.plaintextByteCount, digest: sealed.digest,
                    key: seal.key == nil ? key?.base64EncodedString : nil))
        case .rejected(let rejection):
            throw AttacheError(
                rejection.reason == .badResponse ? .badResponse : .rejected, stage: .interpret,
                "the server refused the upload: \(rejection)", file: attachment.path,
                cause: RejectionError(rejection: rejection))
        }
    }
}

/// A server's refusal, carried as the `cause` of an ``AttacheError``.
public struct RejectionError: Error, Sendable, CustomStringConvertible {
    /// The refusal.
    public let rejection: Rejection
    public var description: String { rejection.description }
}
