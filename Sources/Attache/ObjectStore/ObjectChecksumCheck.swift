internal import AttacheCore
import FoundationEssentials

/// What the store's checksum of a completed multipart object says about the bytes it holds, judged
/// against the parts sent. Pure: the upload gathers the evidence (``MultipartObjectUpload``), this decides.
///
/// S3 gives a multipart object one of two checksums. `COMPOSITE` (the default for CRC-32C and SHA-256) is
/// the checksum of the parts' digests one after the other, written `BASE64-N`. `FULL_OBJECT` (CRC only)
/// is the checksum of the whole object's bytes, written without `-N`; for CRC-32C it follows from the parts'
/// CRCs and sizes alone (``CRC32C/combine(_:_:secondLength:)``). Either one agreeing proves the store
/// holds the bytes sent.
///
/// Stores differ, and some sum wrongly: moto without its optional `crc32c` module sums CRC-32 where it
/// was asked for CRC-32C, so its object checksum matches neither form while every byte is right. A
/// disagreement alone therefore proves nothing, and the object is never removed for one. Only positive
/// evidence that the store holds other bytes fails the upload: a part whose checksum the store answered
/// differently, a part whose `ETag` (an MD5 of the bytes the store took, where ETags are MD5s) is not the
/// MD5 of the bytes sent, or an object of another size.
struct ObjectChecksumCheck: Sendable, Equatable {
    /// What is known of one part.
    struct Part: Sendable, Equatable {
        var number: Int
        var size: Int64
        /// The checksum summed here over the bytes sent (base64); nil when none was.
        var sent: String?
        /// The checksum the store answered for the part (the `UploadPart` answer, or a journalled one);
        /// nil when it named none.
        var confirmed: String?
        /// The store's `ETag` of the part, quotes removed.
        var etag: String
        /// The MD5 of the bytes sent, in hex; nil when it was not summed (only a doubt sums it).
        var digest: String?
    }

    /// What the check concludes.
    enum Verdict: Sendable, Equatable {
        /// The store's checksum is the composite of the parts sent.
        case composite
        /// The store's checksum is the CRC-32C of the whole object sent.
        case fullObject
        /// The store's checksum is neither, and nothing shows that the bytes differ: the object is kept.
        /// The flags say what was checked instead.
        case unexplained(partChecksumsConfirmed: Bool, partDigestsMatched: Bool)
        /// The store holds other bytes than the ones sent; the reason names the part or the size.
        case differs(String)
    }

    let algorithm: MultipartSettings.ChecksumAlgorithm
    /// The store's checksum of the object, as it wrote it (`BASE64` or `BASE64-N`).
    let reported: String
    /// `ChecksumType` (`COMPOSITE`, `FULL_OBJECT`) when the store named it.
    let type: String?
    var parts: [Part]
    /// The payload's size, and the object's as the store gave it (`Content-Length` of a `HEAD`).
    let expectedSize: Int64
    var storedSize: Int64? = nil

    /// The composite checksum of the parts sent, `BASE64-N`; nil when a part has none.
    var composite: String? { PartChecksummer.composite(parts.map(\.sent), algorithm) }

    /// The CRC-32C of the whole object sent, combined from the parts'; nil for another algorithm or when a
    /// part has none.
    var fullObject: String? {
        guard algorithm == .crc32c, !parts.isEmpty else { return nil }
        var whole: UInt32?
        for part in parts {
            guard let sent = part.sent, let bytes = try? Base64.decode(sent), bytes.count == 4 else { return nil }
            let crc = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            whole = whole.map { CRC32C.combine($0, crc, secondLength: part.size) } ?? crc
        }
        return whole.map { CRC32C.base64($0) }
    }

    /// The verdict from what the store said of the object alone: ``Verdict/composite`` or
    /// ``Verdict/fullObject``; nil when neither explains it (a doubt, to be judged with ``verdict``).
    var explanation: Verdict? {
        let digest = Self.digest(reported)
        if type?.uppercased() != "FULL_OBJECT", let composite, Self.digest(composite) == digest { return .composite }
        if type?.uppercased() != "COMPOSITE", let fullObject, fullObject == digest { return .fullObject }
        return nil
    }

    /// The verdict from everything known.
    var verdict: Verdict {
        if let explanation { return explanation }
        if let storedSize, storedSize != expectedSize {
            return .differs("the object holds \(storedSize) bytes where \(expectedSize) were sent")
        }
        for part in parts {
            if let sent = part.sent, let confirmed = part.confirmed, confirmed != sent {
                return .differs(
                    "the store answered part \(part.number) with another \(algorithm.displayName) (\(confirmed)) than the one "
                        + "summed over the bytes sent (\(sent))")
            }
        }
        for part in parts {
            if let digest = part.digest, Self.isMD5(part.etag), part.etag.lowercased() != digest.lowercased() {
                return .differs(
                    "the store's ETag of part \(part.number) (\(part.etag)) is not the MD5 of the bytes sent (\(digest))")
            }
        }
        let confirmed = parts.allSatisfy { $0.sent != nil && $0.confirmed == $0.sent }
        let matched = parts.allSatisfy { $0.digest != nil && Self.isMD5($0.etag) }
        return .unexplained(partChecksumsConfirmed: confirmed, partDigestsMatched: matched)
    }

    /// The sentence for a receipt and a warning when the verdict is ``Verdict/unexplained(partChecksumsConfirmed:partDigestsMatched:)``.
    func note(_ verdict: Verdict) -> String? {
        guard case .unexplained(let confirmed, let matched) = verdict else { return nil }
        var sentence = "the store's object checksum could not be explained: its \(algorithm.displayName) of the object is "
            + "\(reported), where the \(parts.count) parts sent give \(composite ?? "none")"
        if let fullObject { sentence += " (the whole object \(fullObject))" }
        switch (confirmed, matched) {
        case (true, true):
            sentence += "; each part's checksum was confirmed by the store, and each part's ETag is the MD5 of the bytes sent"
        case (true, false): sentence += "; each part's checksum was confirmed by the store"
        case (false, true): sentence += "; each part's ETag is the MD5 of the bytes sent"
        case (false, false):
            sentence += "; the store confirmed no part's checksum and its ETags are not MD5s, so nothing shows that the bytes differ"
        }
        return sentence + ": the object was kept"
    }

    /// Whether an ETag can be the MD5 of a part's bytes: 32 hex digits. S3's are, except under SSE-KMS and
    /// SSE-C (which the upload tells from the object's headers).
    static func isMD5(_ etag: String) -> Bool {
        etag.utf8.count == 32 && etag.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0 | 0x20) }
    }

    /// A checksum without the `-N` of a composite.
    static func digest(_ value: String) -> Substring {
        value.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).first ?? Substring(value)
    }
}
