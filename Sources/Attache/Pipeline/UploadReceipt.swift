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
    /// The size of the body one attempt sends, in bytes: for a multipart POST the whole body (the
    /// attachment part with the form fields and inline thumbnails around it), for an object-store or
    /// resumable upload the object itself. Compare it with ``sentByteCount`` to see what the framing cost.
    public var bodyByteCount: Int64
    /// The `Idempotency-Key` sent with every attempt.
    public var idempotencyKey: String
    /// Attempts made.
    public var attempts: Int
    /// True when the server answered a receipt it had given before (a retried upload).
    public var replayed: Bool
    /// Seconds from the start of the first stage (Detect) to the server's final answer: the whole send as
    /// the caller waited for it, retries and separate thumbnails included.
    public var seconds: Double
    /// Every field of the server's `data` member.
    public var server: JSONValue
    /// How the attachment was sealed.
    public var seal: SealReceipt
    /// What the Detect stage found in the source file.
    public var detection: Detection
    /// What the Transform stage did.
    public var transform: TransformReceipt
    /// Every thumbnail sent with the attachment, however it was placed: name, type, dimensions, size,
    /// the server's id and URL for it when the server named them, and for one sent as a request of its
    /// own (``ThumbnailPlacement/separate``) that request's facts. Empty when none were sent; nil only in
    /// receipts written before this field existed.
    public var thumbnails: [ThumbnailReceipt]?
    /// How the attachment went as a resumable upload; nil for a multipart POST.
    public var resumable: ResumableReceipt? = nil
    /// What the Scan stage found; nil when no scanner is configured.
    public var scan: ScanReceipt? = nil
    /// What a chat client draws before the attachment arrives (BlurHash, ThumbHash, Telegram's stripped
    /// thumbnail), for images, stickers, videos and animations; nil for other kinds or with placeholders off.
    public var placeholders: Placeholders? = nil
    /// Where the attachment is in an object store (a presigned or signed `PUT`, a multipart upload); nil
    /// for other uploads.
    public var object: ObjectReceipt? = nil
    /// For a Matrix homeserver (``PipelineConfiguration/matrix``): the event type and the content a client
    /// sends for the file; nil for other uploads.
    public var matrix: MatrixReceipt? = nil
    /// When the file was not sent because an upload of the same content was stored before
    /// (``ContentReuse``): that upload's idempotency key and the source's SHA-256. Nil for a file sent.
    public var dedup: DedupReceipt? = nil

    /// Creates a receipt.
    package init(
        path: String, filename: String, kind: MessageKind, mimeType: String, fileId: String?, url: String?,
        originalByteCount: Int64, sentByteCount: Int64, bodyByteCount: Int64, idempotencyKey: String,
        attempts: Int, replayed: Bool, seconds: Double, server: JSONValue, seal: SealReceipt,
        detection: Detection, transform: TransformReceipt, thumbnails: [ThumbnailReceipt]? = nil
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
        self.thumbnails = thumbnails
    }

    /// The thumbnails sent as requests of their own (``ThumbnailPlacement/separate``), in the order sent;
    /// nil when thumbnails went inline, were not sent, or the attachment had none. Encoded as
    /// `thumbnailUploads`, as receipts always were.
    package var thumbnailUploads: [ThumbnailReceipt]? {
        let separate = thumbnails?.filter { $0.placement == .separate } ?? []
        return separate.isEmpty ? nil : separate
    }

    private enum CodingKeys: String, CodingKey {
        case path, filename, kind, mimeType, fileId, url, originalByteCount, sentByteCount, bodyByteCount
        case idempotencyKey, attempts, replayed, seconds, server, seal, detection, transform
        case thumbnailUploads, thumbnails, resumable, scan, placeholders, object, matrix, dedup
    }

    /// Reads a receipt, also one written before ``thumbnails`` held the separate thumbnails' request
    /// facts (they were only in `thumbnailUploads` then) or existed at all.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        path = try container.decode(String.self, forKey: .path)
        filename = try container.decode(String.self, forKey: .filename)
        kind = try container.decode(MessageKind.self, forKey: .kind)
        mimeType = try container.decode(String.self, forKey: .mimeType)
        fileId = try container.decodeIfPresent(String.self, forKey: .fileId)
        url = try container.decodeIfPresent(String.self, forKey: .url)
        originalByteCount = try container.decode(Int64.self, forKey: .originalByteCount)
        sentByteCount = try container.decode(Int64.self, forKey: .sentByteCount)
        bodyByteCount = try container.decode(Int64.self, forKey: .bodyByteCount)
        idempotencyKey = try container.decode(String.self, forKey: .idempotencyKey)
        attempts = try container.decode(Int.self, forKey: .attempts)
        replayed = try container.decode(Bool.self, forKey: .replayed)
        seconds = try container.decode(Double.self, forKey: .seconds)
        server = try container.decode(JSONValue.self, forKey: .server)
        seal = try container.decode(SealReceipt.self, forKey: .seal)
        detection = try container.decode(Detection.self, forKey: .detection)
        transform = try container.decode(TransformReceipt.self, forKey: .transform)
        resumable = try container.decodeIfPresent(ResumableReceipt.self, forKey: .resumable)
        scan = try container.decodeIfPresent(ScanReceipt.self, forKey: .scan)
        placeholders = try container.decodeIfPresent(Placeholders.self, forKey: .placeholders)
        object = try container.decodeIfPresent(ObjectReceipt.self, forKey: .object)
        matrix = try container.decodeIfPresent(MatrixReceipt.self, forKey: .matrix)
        dedup = try container.decodeIfPresent(DedupReceipt.self, forKey: .dedup)
        let uploads = try container.decodeIfPresent([ThumbnailReceipt].self, forKey: .thumbnailUploads) ?? []
        if let listed = try container.decodeIfPresent([ThumbnailReceipt].self, forKey: .thumbnails) {
            thumbnails = listed.map { entry in
                guard entry.placement == .separate, let upload = uploads.first(where: { $0.name == entry.name })
                else { return entry }
                return entry.merging(requestOf: upload)
            }
        } else {
            thumbnails = uploads.isEmpty ? nil : uploads
        }
    }

    /// Writes the receipt; the separate thumbnails also as `thumbnailUploads`, where readers of earlier
    /// receipts look for them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(path, forKey: .path)
        try container.encode(filename, forKey: .filename)
        try container.encode(kind, forKey: .kind)
        try container.encode(mimeType, forKey: .mimeType)
        try container.encodeIfPresent(fileId, forKey: .fileId)
        try container.encodeIfPresent(url, forKey: .url)
        try container.encode(originalByteCount, forKey: .originalByteCount)
        try container.encode(sentByteCount, forKey: .sentByteCount)
        try container.encode(bodyByteCount, forKey: .bodyByteCount)
        try container.encode(idempotencyKey, forKey: .idempotencyKey)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(replayed, forKey: .replayed)
        try container.encode(seconds, forKey: .seconds)
        try container.encode(server, forKey: .server)
        try container.encode(seal, forKey: .seal)
        try container.encode(detection, forKey: .detection)
        try container.encode(transform, forKey: .transform)
        try container.encodeIfPresent(thumbnailUploads, forKey: .thumbnailUploads)
        try container.encodeIfPresent(thumbnails, forKey: .thumbnails)
        try container.encodeIfPresent(resumable, forKey: .resumable)
        try container.encodeIfPresent(scan, forKey: .scan)
        try container.encodeIfPresent(placeholders, forKey: .placeholders)
        try container.encodeIfPresent(object, forKey: .object)
        try container.encodeIfPresent(matrix, forKey: .matrix)
        try container.encodeIfPresent(dedup, forKey: .dedup)
    }
}
