internal import AttacheCore
import FoundationEssentials

extension MultipartSettings.ChecksumAlgorithm {
    /// The name S3 gives it (`x-amz-checksum-algorithm`, `ChecksumAlgorithm`).
    var s3Name: String {
        switch self {
        case .crc32c: return "CRC32C"
        case .sha256: return "SHA256"
        }
    }

    /// The request and answer header that carries a part's checksum, also the trailer's name.
    var headerName: String { "x-amz-checksum-" + rawValue }

    /// The XML element of `ListParts`, `CompleteMultipartUpload` and answers (`ChecksumCRC32C`).
    var element: String { "Checksum" + s3Name }

    /// How long the digest is in bytes.
    var digestByteCount: Int {
        switch self {
        case .crc32c: return 4
        case .sha256: return 32
        }
    }

    /// The name a person reads (`CRC-32C`, `SHA-256`).
    var displayName: String {
        switch self {
        case .crc32c: return "CRC-32C"
        case .sha256: return "SHA-256"
        }
    }
}

/// One part's checksum, summed as its bytes pass.
struct PartChecksummer {
    private var crc: CRC32C?
    private let sha: SHA256Digest?

    /// A fresh checksum of `algorithm`.
    /// - Throws: ``AttacheCore/AttacheError`` from OpenSSL.
    init(_ algorithm: MultipartSettings.ChecksumAlgorithm) throws {
        switch algorithm {
        case .crc32c:
            crc = CRC32C()
            sha = nil
        case .sha256:
            crc = nil
            sha = try SHA256Digest()
        }
    }

    /// Adds `bytes`.
    mutating func update(_ bytes: UnsafeRawBufferPointer) throws {
        if crc != nil { crc!.update(bytes) } else { try sha?.update(bytes) }
    }

    /// The digest, as S3 takes it before base64 (CRC-32C big-endian).
    func finish() throws -> [UInt8] {
        if let crc {
            let value = crc.value
            return [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
        }
        return try sha!.finish()
    }

    /// The base64 checksum of `source`, read once.
    /// - Throws: what reading the source throws; ``AttacheCore/AttacheError`` from OpenSSL.
    static func base64(of source: any ByteSource, _ algorithm: MultipartSettings.ChecksumAlgorithm) throws -> String {
        var summer = try PartChecksummer(algorithm)
        try ContentDigest.forEachChunk(of: source) { try summer.update($0) }
        return Base64.encode(try summer.finish())
    }

    /// S3's composite checksum of a multipart object: the checksum of the parts' digests one after the
    /// other, in base64, then `-N`; nil when a part has none.
    static func composite(_ checksums: [String?], _ algorithm: MultipartSettings.ChecksumAlgorithm) -> String? {
        var digests: [UInt8] = []
        for checksum in checksums {
            guard let checksum, let decoded = try? Base64.decode(checksum), decoded.count == algorithm.digestByteCount else {
                return nil
            }
            digests += decoded
        }
        guard var summer = try? PartChecksummer(algorithm) else { return nil }
        guard (try? digests.withUnsafeBytes({ try summer.update($0) })) != nil, let digest = try? summer.finish() else {
            return nil
        }
        return Base64.encode(digest) + "-\(checksums.count)"
    }
}

/// The checksum a part's `aws-chunked` body put in its trailer, for the part's record once the store
/// took it: every attempt sums the same bytes, so the last one's is the part's.
final class StreamedChecksum: Sendable {
    private let value = LockedValue<String?>(nil)

    func set(_ checksum: String) { value.withLock { $0 = checksum } }

    var checksum: String? { value.withLock { $0 } }
}

/// Whether this upload still sends part checksums as trailers: the first part a store refuses in
/// `aws-chunked` form (``MultipartSettings/ChecksumDelivery/auto``) turns it off for the parts after it.
final class TrailerChoice: Sendable {
    private let usesTrailers: LockedValue<Bool>

    init(_ usesTrailers: Bool) { self.usesTrailers = LockedValue(usesTrailers) }

    var current: Bool { usesTrailers.withLock { $0 } }

    func refuse() { usesTrailers.withLock { $0 = false } }
}
