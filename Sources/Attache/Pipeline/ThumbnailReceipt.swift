/// One thumbnail that went with an attachment, however it was placed (``UploadReceipt/thumbnails``).
///
/// A thumbnail is sealed with the attachment's key (``UploadReceipt/seal``) as part 1, 2, … of its
/// material, so the receiver opens it with the same key, inline or separate alike. A thumbnail sent as a
/// request of its own (``ThumbnailPlacement/separate``) also carries that request's facts: what was sent,
/// under which idempotency key, in how many attempts, and the server's answer.
///
/// Encoded, the request facts are present only for a separate thumbnail, so an inline entry reads as it
/// always did; a receipt written before the placement and size were recorded reads as a separate one.
public struct ThumbnailReceipt: Sendable, Codable, Hashable {
    /// Which thumbnail: `thumbnail` (≤ 320 px) or `thumbnailTiny` (≈ 40 px); also its form name inline.
    public var name: String
    /// The filename sent (`thumbnail.jpg` inline, `photo.thumbnail.jpg` separately).
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
    /// The server's id for it, when the server named one (with `s3-post`, the object key).
    public var fileId: String?
    /// Where it can be fetched (absolute), when the server said so.
    public var url: String?
    /// Separate only: the file part's size as sent (after sealing), in bytes; nil for an inline thumbnail,
    /// whose bytes are counted in the attachment's body.
    public var sentByteCount: Int64?
    /// Separate only: the seal scheme's digest of the sent bytes (`signal`: SHA-256 hex), when it has one.
    public var digest: String?
    /// Separate only: the `Idempotency-Key` sent with every attempt of its request: the attachment's key
    /// with `.` and ``name`` appended, so a retried send of the attachment stores the thumbnail once.
    public var idempotencyKey: String?
    /// Separate only: attempts its request took, the successful one included.
    public var attempts: Int?
    /// Separate only: true when the server answered a receipt it had given before for the same
    /// idempotency key (an earlier send had already stored the thumbnail).
    public var replayed: Bool?
    /// Separate only: the server's answer, every field kept (``ServerReceipt/data``).
    public var server: JSONValue?

    /// Creates a thumbnail entry; the request facts are for a thumbnail sent separately.
    package init(
        name: String, filename: String, mimeType: String, width: Int, height: Int, byteCount: Int64,
        placement: ThumbnailPlacement, fileId: String? = nil, url: String? = nil, sentByteCount: Int64? = nil,
        digest: String? = nil, idempotencyKey: String? = nil, attempts: Int? = nil, replayed: Bool? = nil,
        server: JSONValue? = nil
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
        self.sentByteCount = sentByteCount
        self.digest = digest
        self.idempotencyKey = idempotencyKey
        self.attempts = attempts
        self.replayed = replayed
        self.server = server
    }

    private enum CodingKeys: String, CodingKey {
        case name, filename, mimeType, width, height, byteCount, placement, fileId, url
        case sentByteCount, digest, idempotencyKey, attempts, replayed, server
    }

    /// Reads an entry; one written before ``byteCount`` and ``placement`` were recorded (the old
    /// `thumbnailUploads` entries) is a separate thumbnail, its size the size sent.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        filename = try container.decode(String.self, forKey: .filename)
        mimeType = try container.decode(String.self, forKey: .mimeType)
        width = try container.decode(Int.self, forKey: .width)
        height = try container.decode(Int.self, forKey: .height)
        fileId = try container.decodeIfPresent(String.self, forKey: .fileId)
        url = try container.decodeIfPresent(String.self, forKey: .url)
        sentByteCount = try container.decodeIfPresent(Int64.self, forKey: .sentByteCount)
        digest = try container.decodeIfPresent(String.self, forKey: .digest)
        idempotencyKey = try container.decodeIfPresent(String.self, forKey: .idempotencyKey)
        attempts = try container.decodeIfPresent(Int.self, forKey: .attempts)
        replayed = try container.decodeIfPresent(Bool.self, forKey: .replayed)
        server = try container.decodeIfPresent(JSONValue.self, forKey: .server)
        byteCount = try container.decodeIfPresent(Int64.self, forKey: .byteCount) ?? sentByteCount ?? 0
        placement =
            try container.decodeIfPresent(ThumbnailPlacement.self, forKey: .placement)
            ?? (idempotencyKey == nil ? .inline : .separate)
    }

    /// The facts of the request that carried it, taken from `other` (the same thumbnail's entry in an
    /// old receipt's `thumbnailUploads`).
    func merging(requestOf other: ThumbnailReceipt) -> ThumbnailReceipt {
        var merged = self
        merged.sentByteCount = sentByteCount ?? other.sentByteCount
        merged.digest = digest ?? other.digest
        merged.idempotencyKey = idempotencyKey ?? other.idempotencyKey
        merged.attempts = attempts ?? other.attempts
        merged.replayed = replayed ?? other.replayed
        merged.server = server ?? other.server
        return merged
    }
}
