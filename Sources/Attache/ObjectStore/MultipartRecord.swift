import FoundationEssentials

/// Where a multipart upload to an object store stands: its key, the store's upload id and the parts the
/// store confirmed (ETag and checksum), enough for another process to continue it. The batch journal,
/// the seal-material store of `attache upload --idempotency-key` and the queue row keep it (as `json`)
/// next to the seal material.
public struct MultipartRecord: Sendable, Hashable, Codable {
    /// A part the store took.
    public struct Part: Sendable, Hashable, Codable {
        /// The part's number, from 1.
        public var number: Int
        /// The `ETag` the store answered, unquoted.
        public var etag: String
        /// Its length in bytes.
        public var size: Int64
        /// The checksum sent with the part (base64), when parts carry one.
        public var checksum: String?
        /// The checksum the store answered when it took the part; nil when it named none (and in records
        /// written before it was kept).
        public var confirmed: String?

        /// Creates a part.
        public init(number: Int, etag: String, size: Int64, checksum: String?, confirmed: String? = nil) {
            self.number = number
            self.etag = etag
            self.size = size
            self.checksum = checksum
            self.confirmed = confirmed
        }
    }

    /// The object's key (prefix included).
    public var key: String
    /// The store's `UploadId`.
    public var uploadId: String
    /// Whether the upload was created taking per-part checksums.
    public var checksums: Bool
    /// Their algorithm as the store names it (`CRC32C`, `SHA256`) when ``checksums`` is true; nil in records
    /// written before it was kept. A run that asks for another algorithm continues with this one.
    public var checksumAlgorithm: String?
    /// The parts confirmed so far, by number.
    public var parts: [Part]

    /// Creates a record.
    public init(key: String, uploadId: String, checksums: Bool, checksumAlgorithm: String? = nil, parts: [Part] = []) {
        self.key = key
        self.uploadId = uploadId
        self.checksums = checksums
        self.checksumAlgorithm = checksumAlgorithm
        self.parts = parts
    }

    /// The record as one line of JSON.
    package var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// The record in `json`; nil when it is not one (a damaged or foreign value is ignored: the store is
    /// asked instead).
    package init?(json: String) {
        guard let record = try? JSONDecoder().decode(MultipartRecord.self, from: Data(json.utf8)) else { return nil }
        self = record
    }
}

/// The durable side of one multipart upload: the record an earlier run left (read once), and each change
/// of this run handed to the caller's sink (a journal row, a file) before the upload moves on.
final class MultipartJournal: Sendable {
    /// What an earlier run recorded, if anything.
    let journalled: MultipartRecord?
    private let sink: (@Sendable (MultipartRecord?) async -> Void)?
    private let current = LockedValue<MultipartRecord?>(nil)

    init(journalled: MultipartRecord?, sink: (@Sendable (MultipartRecord?) async -> Void)?) {
        self.journalled = journalled
        self.sink = sink
    }

    /// The upload this run continues or created, with the parts the store already holds.
    func begin(
        key: String, uploadId: String, checksums: Bool, algorithm: MultipartSettings.ChecksumAlgorithm,
        parts: [MultipartObjectUpload.Part]
    ) async {
        let record = MultipartRecord(
            key: key, uploadId: uploadId, checksums: checksums, checksumAlgorithm: checksums ? algorithm.s3Name : nil,
            parts: parts.sorted { $0.number < $1.number }.map(Self.recorded))
        current.withLock { $0 = record }
        await sink?(record)
    }

    /// One more part the store confirmed.
    func finished(_ part: MultipartObjectUpload.Part) async {
        let record = current.withLock { record -> MultipartRecord? in
            guard var updated = record else { return nil }
            updated.parts.removeAll { $0.number == part.number }
            updated.parts.append(Self.recorded(part))
            updated.parts.sort { $0.number < $1.number }
            record = updated
            return updated
        }
        if let record { await sink?(record) }
    }

    /// The upload is completed or aborted: nothing is left to continue.
    func forget() async {
        current.withLock { $0 = nil }
        await sink?(nil)
    }

    private static func recorded(_ part: MultipartObjectUpload.Part) -> MultipartRecord.Part {
        MultipartRecord.Part(
            number: part.number, etag: part.etag, size: part.size, checksum: part.checksum, confirmed: part.confirmed)
    }
}
