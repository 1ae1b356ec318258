/// Where an attachment sent to an object store is: its bucket and key, what the store said about it, and
/// how it went.
public struct ObjectReceipt: Sendable, Codable, Equatable {
    /// The bucket; nil for a presigned URL (whose host or path names it).
    public var bucket: String?
    /// The object's key; nil for a presigned URL.
    public var key: String?
    /// The store's `ETag` for the object, quotes removed (a multipart upload's is `HEX-PARTS`).
    public var etag: String?
    /// `x-amz-version-id`, in a versioned bucket.
    public var versionId: String?
    /// The object's size in bytes: the sealed bytes.
    public var byteCount: Int64
    /// The object's checksum as the store confirmed it (`crc32c:BASE64`, `sha256:BASE64`), when one was sent;
    /// the composite of the parts sent when the store's could not be explained (see ``checksumWarning``).
    public var checksum: String?
    /// Set when the store's checksum of the multipart object disagreed with the parts sent in a way that
    /// shows no wrong byte (a store that sums wrongly): the object was kept, and the sentence says what
    /// the store answered and what was checked instead (each part's checksum confirmed by the store, each
    /// part's `ETag` the MD5 of the bytes sent). Nil when the store's checksum was explained or not checked.
    public var checksumWarning: String?
    /// The object's URL (`s3://BUCKET/KEY` for a signed upload, the presigned URL without its query otherwise).
    public var url: String
    /// The parts of a multipart upload; nil for a single `PUT`.
    public var parts: Int?
    /// Bytes of a multipart upload the store held from an earlier run, not sent again; nil for a single `PUT`.
    public var resumedBytes: Int64?
    /// Body bytes this run sent for a multipart upload, failed attempts included; nil for a single `PUT`.
    public var bytesSent: Int64?

    /// Creates a receipt.
    package init(
        bucket: String?, key: String?, etag: String?, versionId: String?, byteCount: Int64, checksum: String? = nil,
        url: String, parts: Int? = nil
    ) {
        self.bucket = bucket
        self.key = key
        self.etag = etag
        self.versionId = versionId
        self.byteCount = byteCount
        self.checksum = checksum
        self.url = url
        self.parts = parts
    }

    /// An `ETag` header's value without its quotes.
    static func unquoted(_ etag: String?) -> String? {
        guard var etag else { return nil }
        if etag.hasPrefix("W/") { etag.removeFirst(2) }
        if etag.count >= 2, etag.hasPrefix("\""), etag.hasSuffix("\"") { etag = String(etag.dropFirst().dropLast()) }
        return etag
    }
}
