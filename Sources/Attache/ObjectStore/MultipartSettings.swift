/// How an object store endpoint sends large attachments: as a multipart upload of parts sent several at
/// once, each retried on its own, continued after a crash.
package struct MultipartSettings: Sendable, Hashable {
    /// Whether per-part checksums are sent.
    package enum ChecksumMode: String, Sendable, Hashable, Codable, CaseIterable {
        /// CRC-32C per part (and the composite for the object) when the store says, answering the upload's
        /// creation, that it takes `CRC32C` checksums; none otherwise. The default.
        case whenSupported = "when-supported"
        /// Only when the store requires one (it never does for uploads): none.
        case whenRequired = "when-required"
        /// Never.
        case off
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
    /// Abort or keep the store's upload when retries are spent.
    package var onGiveUp: GiveUp = .abort
    /// Send the completion with `If-None-Match: *`, so that a replay cannot overwrite an object already
    /// completed under the key (S3 answers 412); a store that answers 501 gets the completion without it.
    package var conditionalComplete = true

    /// The defaults.
    package init() {}
}
