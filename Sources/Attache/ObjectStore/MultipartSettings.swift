/// How an object store endpoint sends large attachments: as a multipart upload of parts sent several at
/// once, each retried on its own, continued after a crash.
package struct MultipartSettings: Sendable, Hashable {
    /// Whether per-part checksums are sent.
    package enum ChecksumMode: String, Sendable, Hashable, Codable, CaseIterable {
        /// A checksum per part (``MultipartSettings/checksumAlgorithm``, and the composite for the object)
        /// when the store says, answering the upload's creation, that it takes that algorithm; none
        /// otherwise. The default.
        case whenSupported = "when-supported"
        /// Only when the store requires one (it never does for uploads): none.
        case whenRequired = "when-required"
        /// Never.
        case off
    }

    /// The checksum of each part (`x-amz-checksum-crc32c` or `x-amz-checksum-sha256`) and, composite, of
    /// the object.
    package enum ChecksumAlgorithm: String, Sendable, Hashable, Codable, CaseIterable {
        /// CRC-32C, in hardware where the CPU has it. The default.
        case crc32c
        /// SHA-256 (OpenSSL).
        case sha256
    }

    /// How a part's checksum goes to the store. An endpoint whose requests the client's adapters sign
    /// (``ObjectStoreSigning/adapters``) sends it as a header whatever this says: a presigned URL signs no
    /// payload, so no `aws-chunked` body.
    package enum ChecksumDelivery: String, Sendable, Hashable, Codable, CaseIterable {
        /// As a trailer, then as a header from the first part a store refuses in `aws-chunked` form on: the
        /// default.
        case auto
        /// As a trailer of an `aws-chunked` body (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`), summed while the part
        /// streams.
        case trailer
        /// As a header, summed over the part just before it goes (one more read of the part).
        case header
    }

    /// What happens to the store's multipart upload when Attache gives up on it.
    package enum GiveUp: String, Sendable, Hashable, Codable, CaseIterable {
        /// `AbortMultipartUpload`: the parts sent are deleted. The default.
        case abort
        /// Left in place, so that a later run under the same idempotency key continues it (`ListParts`);
        /// `attache s3 abort-stale` removes the ones nobody continues.
        case keep
    }

    /// Sealed attachments of at least this many bytes go in parts (default 64 MiB).
    package var threshold: Int64 = 64 << 20
    /// The part size; nil plans one (16 MiB, raised to keep within 10,000 parts).
    package var partSize: Int64?
    /// Parts sent at once (default 4).
    package var partsInFlight = 4
    /// Per-part checksums.
    package var checksum: ChecksumMode = .whenSupported
    /// The per-part checksum's algorithm (default CRC-32C).
    package var checksumAlgorithm: ChecksumAlgorithm = .crc32c
    /// How the per-part checksum goes: a trailer where the store takes one, else a header (default auto).
    package var checksumDelivery: ChecksumDelivery = .auto
    /// Abort or keep the store's upload when retries are spent.
    package var onGiveUp: GiveUp = .abort
    /// Send the completion with `If-None-Match: *`, so that a replay cannot overwrite an object already
    /// completed under the key (S3 answers 412); a store that answers 501 gets the completion without it.
    package var conditionalComplete = true

    /// The defaults.
    package init() {}
}
