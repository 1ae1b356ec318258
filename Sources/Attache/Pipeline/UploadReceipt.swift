/// What the pipeline reports for one attachment the server stored.
///
/// Encodes to the JSON objects `attache upload --json` prints, one per line.
public struct UploadReceipt: Sendable, Codable, Equatable {
    /// The source file's path, as given.
    public var path: String
    /// The filename sent to the server.
    public var filename: String
    /// The message kind the attachment was sent as.
    public var kind: MessageKind
    /// The content type sent for the attachment part.
    public var mimeType: String
    /// The server's file id, when it named one.
    public var fileId: String?
    /// Where the server says the file can be fetched, when it said so: absolute, resolved against the
    /// upload URL when the server gave a path (`/files/7`), so ``Downloader`` can fetch it as it is.
    public var url: String?
    /// The source file's size in bytes.
    public var originalByteCount: Int64
    /// The attachment part's size as sent, in bytes.
    public var sentByteCount: Int64
    /// The whole multipart body's size, in bytes.
    public var bodyByteCount: Int64
    /// The `Idempotency-Key` sent with every attempt.
    public var idempotencyKey: String
    /// Attempts made.
    public var attempts: Int
    /// True when the server answered a receipt it had given before (a retried upload).
    public var replayed: Bool
    /// Seconds from the first stage's start to the server's answer.
    public var seconds: Double
    /// Every field of the server's `data` member.
    public var server: JSONValue
    /// How the attachment was sealed.
    public var seal: SealReceipt
    /// What the Detect stage found in the source file.
    public var detection: Detection
    /// What the Transform stage did.
    public var transform: TransformReceipt
    /// The receipts of the thumbnails sent as requests of their own (``ThumbnailPlacement/separate``), in
    /// the order sent; absent when thumbnails went inline, were not sent, or the attachment had none.
    public var thumbnailUploads: [ThumbnailReceipt]?
    /// Every thumbnail sent with the attachment, typed, however it was placed: name, type, dimensions,
    /// size, and the server's id and URL for it when the server named them. Empty when none were sent;
    /// nil only in receipts written before this field existed.
    public var thumbnails: [ReceiptThumbnail]?
    /// How the attachment went as a resumable upload; nil for a multipart POST.
    public var resumable: ResumableReceipt? = nil

    /// Creates a receipt.
    public init(
        path: String, filename: String, kind: MessageKind, mimeType: String, fileId: String?, url: String?,
        originalByteCount: Int64, sentByteCount: Int64, bodyByteCount: Int64, idempotencyKey: String,
        attempts: Int, replayed: Bool, seconds: Double, server: JSONValue, seal: SealReceipt,
        detection: Detection, transform: TransformReceipt, thumbnailUploads: [ThumbnailReceipt]? = nil,
        thumbnails: [ReceiptThumbnail]? = nil
    ) {
        self.path = path
        self.filename = filename
        self.kind = kind
        self.mimeType = mimeType
        self.fileId = fileId
        self.url = url
        self.originalByteCount = originalByteCount
        self.sentByteCount = sentByteCount
        self.bodyByteCount = bodyByteCount
        self.idempotencyKey = idempotencyKey
        self.attempts = attempts
        self.replayed = replayed
        self.seconds = seconds
        self.server = server
        self.seal = seal
        self.detection = detection
        self.transform = transform
        self.thumbnailUploads = thumbnailUploads
        self.thumbnails = thumbnails
    }
}

/// One thumbnail that went with an attachment (``UploadReceipt/thumbnails``).
///
/// A thumbnail is sealed with the attachment's key (``UploadReceipt/seal``) as part 1, 2, … of its
/// material, so the receiver opens it with the same key.
public struct ReceiptThumbnail: Sendable, Codable, Hashable {
    /// Which thumbnail: `thumbnail` (≤ 320 px) or `thumbnailTiny` (≈ 40 px); also its form name.
    public var name: String
    /// The filename sent (`photo.thumbnail.jpg`).
    public var filename: String
    /// Its own type, before sealing (`image/jpeg`).
    public var mimeType: String
    /// Its width in pixels.
    public var width: Int
    /// Its height in pixels.
    public var height: Int
    /// Its size before sealing, in bytes.
    public var byteCount: Int64
    /// How it was sent: a part of the attachment's request, or a request of its own.
    public var placement: ThumbnailPlacement
    /// The server's id for it, when the server named one.
    public var fileId: String?
    /// Where it can be fetched (absolute), when the server said so.
    public var url: String?

    /// Creates a thumbnail entry.
    public init(
        name: String, filename: String, mimeType: String, width: Int, height: Int, byteCount: Int64,
        placement: ThumbnailPlacement, fileId: String? = nil, url: String? = nil
    ) {
        self.name = name
        self.filename = filename
        self.mimeType = mimeType
        self.width = width
        self.height = height
        self.byteCount = byteCount
        self.placement = placement
        self.fileId = fileId
        self.url = url
    }
}

/// The server's receipt for a thumbnail sent as a request of its own (``ThumbnailPlacement/separate``).
///
/// The thumbnail is sealed with the attachment's key (``UploadReceipt/seal``), as part 1, 2, … of the same
/// material, exactly as an inline thumbnail would be.
public struct ThumbnailReceipt: Sendable, Codable, Hashable {
    /// Which thumbnail: `thumbnail` (≤ 320 px) or `thumbnailTiny` (≈ 40 px).
    public var name: String
    /// The filename sent (`photo.thumbnail.jpg`).
    public var filename: String
    /// The thumbnail's own type, before sealing (`image/jpeg`).
    public var mimeType: String
    /// The thumbnail's width.
    public var width: Int
    /// The thumbnail's height.
    public var height: Int
    /// The server's file id for it, when it named one (with `s3-post`, the object key).
    public var fileId: String?
    /// Where the server says it can be fetched, when it said so.
    public var url: String?
    /// The file part's size as sent, in bytes.
    public var sentByteCount: Int64
    /// The seal scheme's digest of the sent bytes (`signal`: SHA-256 hex), when it has one.
    public var digest: String?
    /// The `Idempotency-Key` sent with it: the attachment's, with `.` and the thumbnail's name appended.
    public var idempotencyKey: String
    /// Attempts made.
    public var attempts: Int
    /// True when the server answered a receipt it had given before.
    public var replayed: Bool
    /// The server's answer, every field kept (``ServerReceipt/data``).
    public var server: JSONValue

    /// Creates a thumbnail receipt.
    public init(
        name: String, filename: String, mimeType: String, width: Int, height: Int, fileId: String?, url: String?,
        sentByteCount: Int64, digest: String? = nil, idempotencyKey: String, attempts: Int, replayed: Bool,
        server: JSONValue
    ) {
        self.name = name
        self.filename = filename
        self.mimeType = mimeType
        self.width = width
        self.height = height
        self.fileId = fileId
        self.url = url
        self.sentByteCount = sentByteCount
        self.digest = digest
        self.idempotencyKey = idempotencyKey
        self.attempts = attempts
        self.replayed = replayed
        self.server = server
    }
}

/// What the Transform stage did to one attachment.
public struct TransformReceipt: Sendable, Codable, Hashable {
    /// True when the file was recompressed (or made a sticker); false when it went as it was.
    public var recompressed: Bool
    /// The size after Transform, before sealing.
    public var byteCount: Int64
    /// The image's width after Transform, for images and stickers.
    public var width: Int?
    /// The image's height after Transform.
    public var height: Int?
    /// The form names of the thumbnail parts sent inline with the attachment (thumbnails sent in requests
    /// of their own are in ``UploadReceipt/thumbnailUploads``).
    public var thumbnails: [String]
    /// Set when an image was meant to be recompressed but went as it is, because the Transform stage
    /// could not read it (``TransformErrorPolicy/sendOriginal``): the error code and message. Absent
    /// otherwise (and in receipts written before this field existed).
    public var skipped: String?
    /// For video, voice and animations: what the converter did and found; absent for other kinds.
    public var media: MediaReceipt?

    /// Creates a transform receipt.
    public init(recompressed: Bool, byteCount: Int64, width: Int? = nil, height: Int? = nil, thumbnails: [String] = [],
                skipped: String? = nil, media: MediaReceipt? = nil) {
        self.recompressed = recompressed
        self.byteCount = byteCount
        self.width = width
        self.height = height
        self.thumbnails = thumbnails
        self.skipped = skipped
        self.media = media
    }
}

/// What the Transform stage did to a video, voice note or animation (``MediaConverter``).
public struct MediaReceipt: Sendable, Codable, Hashable {
    /// `keep` (already compliant), `remux` (index moved to the front) or `encode`.
    public var plan: MediaConverter.VideoPlan
    /// Seconds.
    public var duration: Double?
    /// For video and animations: the MP4's index comes first, so a player can start early.
    public var supportsStreaming: Bool?
    /// For voice: Telegram's 63-byte waveform, base64 (the `waveform` form field).
    public var waveform: String?
    /// True for a GIF or APNG sent as a silent MP4.
    public var animation: Bool?

    /// Creates a media receipt.
    public init(plan: MediaConverter.VideoPlan, duration: Double? = nil, supportsStreaming: Bool? = nil,
                waveform: String? = nil, animation: Bool? = nil) {
        self.plan = plan
        self.duration = duration
        self.supportsStreaming = supportsStreaming
        self.waveform = waveform
        self.animation = animation
    }

    /// The facts of `output`, or nil when it was not converted media.
    init?(_ output: TransformOutput) {
        guard let plan = output.mediaPlan else { return nil }
        self.init(plan: plan, duration: output.duration, supportsStreaming: output.supportsStreaming,
                  waveform: output.waveform.map { Base64.encode($0) }, animation: output.isAnimation ? true : nil)
    }
}

/// What the Seal stage did to one attachment: what a receiver needs to open it.
///
/// ``key`` is an ``AttachmentKey``: printing or logging a receipt shows its size, never the key; read it
/// with ``AttachmentKey/base64``. Encoded (`attache upload --json`, the batch journal), the key is its
/// text, because that is the receipt's purpose: the program that writes the chat message needs it.
public struct SealReceipt: Sendable, Codable, Hashable {
    /// The scheme.
    public var scheme: SealScheme
    /// Binary or base64 on the wire.
    public var transferEncoding: TransferEncoding
    /// The size of what was sealed (after Transform).
    public var plaintextByteCount: Int64
    /// The scheme's digest of the sealed bytes (`signal`: SHA-256 hex), when it has one.
    public var digest: String?
    /// The attachment's fresh key, when the pipeline made one (no fixed key configured).
    /// It belongs in the message that carries the attachment; it is never sent to the upload server.
    public var key: AttachmentKey?

    /// Creates a seal receipt.
    public init(
        scheme: SealScheme, transferEncoding: TransferEncoding, plaintextByteCount: Int64, digest: String? = nil,
        key: AttachmentKey? = nil
    ) {
        self.scheme = scheme
        self.transferEncoding = transferEncoding
        self.plaintextByteCount = plaintextByteCount
        self.digest = digest
        self.key = key
    }

    private enum CodingKeys: String, CodingKey {
        case scheme, transferEncoding, plaintextByteCount, digest, key
    }

    /// Reads a receipt; the key's text is read the way ``scheme`` uses keys (a `legacy-*` passphrase as
    /// it is, raw keys from base64).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        scheme = try container.decode(SealScheme.self, forKey: .scheme)
        transferEncoding = try container.decode(TransferEncoding.self, forKey: .transferEncoding)
        plaintextByteCount = try container.decode(Int64.self, forKey: .plaintextByteCount)
        digest = try container.decodeIfPresent(String.self, forKey: .digest)
        if let text = try container.decodeIfPresent(String.self, forKey: .key) {
            if scheme.usesPassphrase {
                key = AttachmentKey(passphrase: text)
            } else {
                do { key = try AttachmentKey(base64: text) } catch {
                    throw DecodingError.dataCorruptedError(
                        forKey: .key, in: container, debugDescription: "not the base64 text of a 32- or 64-byte key")
                }
            }
        } else {
            key = nil
        }
    }

    /// Writes the receipt, the key as its text (see ``AttachmentKey/base64``).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(scheme, forKey: .scheme)
        try container.encode(transferEncoding, forKey: .transferEncoding)
        try container.encode(plaintextByteCount, forKey: .plaintextByteCount)
        try container.encodeIfPresent(digest, forKey: .digest)
        try container.encodeIfPresent(key?.base64, forKey: .key)
    }
}

/// How an attachment was sent as a resumable upload (tus 1.0 or the IETF draft).
public struct ResumableReceipt: Sendable, Codable, Hashable {
    /// `tus` or `ietf`.
    public var protocolName: ResumableProtocol
    /// The upload resource.
    public var uploadURL: String
    /// Bytes the server already had when this send started (an earlier process's upload).
    public var resumedBytes: Int64
    /// Body bytes this send handed to the network, over all its requests.
    public var bytesSent: Int64
    /// Requests this send made.
    public var requests: Int

    /// Creates a receipt.
    public init(protocolName: ResumableProtocol, uploadURL: String, resumedBytes: Int64, bytesSent: Int64, requests: Int) {
        self.protocolName = protocolName
        self.uploadURL = uploadURL
        self.resumedBytes = resumedBytes
        self.bytesSent = bytesSent
        self.requests = requests
    }
}
