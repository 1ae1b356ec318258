/// How an object is cut into the parts of a multipart upload, within S3's limits: every part but the last
/// at least 5 MiB, at most 5 GiB, at most 10,000 parts.
///
/// Parts are byte ranges of the sealed payload. They need not fall on `stream-gcm` segment boundaries: a
/// part's reader starts sealing at the segment holding its first byte (docs/FORMAT.md, Sealed parts and S3
/// parts), so every part re-seals to the same bytes in any process.
struct PartPlan: Sendable, Equatable {
    static let minimumPartSize: Int64 = 5 << 20
    static let maximumPartSize: Int64 = 5 << 30
    static let maximumParts: Int64 = 10_000
    /// The part size used when none is asked for.
    static let defaultPartSize: Int64 = 16 << 20

    /// The object's size.
    let totalByteCount: Int64
    /// Every part's size but the last one's.
    let partSize: Int64
    /// How many parts.
    let count: Int

    /// The plan for `total` bytes: `preferred` (default 16 MiB), raised to 5 MiB and to what keeps the count
    /// within 10,000, rounded up to a whole MiB.
    init(total: Int64, preferred: Int64? = nil) {
        let mebibyte: Int64 = 1 << 20
        var size = max(preferred ?? Self.defaultPartSize, Self.minimumPartSize)
        size = max(size, (total + Self.maximumParts - 1) / Self.maximumParts)
        size = min((size + mebibyte - 1) / mebibyte * mebibyte, Self.maximumPartSize)
        totalByteCount = total
        partSize = size
        count = max(1, Int((total + size - 1) / size))
    }

    /// Part `number` (from 1): where it starts in the payload and how long it is.
    func range(ofPart number: Int) -> (offset: Int64, length: Int64) {
        let offset = Int64(number - 1) * partSize
        guard number < count else { return (offset, totalByteCount - offset) }
        return (offset, min(partSize, totalByteCount - offset))
    }
}
