/// Encrypts attachments with one scheme, key and transfer encoding; a `Sendable` value holding only
/// its configuration.
///
/// `seal` does no I/O: it fixes the random header values (salt, nonce prefix, IV) and returns a
/// ``SealedPayload`` whose readers encrypt as they are pulled, in bounded memory. Every reader of one
/// payload produces the same bytes, so a retried upload is identical.
///
/// ```swift
/// let key = AttachmentKey.random(for: .streamGCM)
/// let sealer = Sealer(scheme: .streamGCM, key: key, transferEncoding: .base64)
/// let payload = try sealer.seal(try FileSource(path: "video.mp4"))
/// print(payload.byteCount)   // exact, before anything is read
/// ```
package struct Sealer: Sendable {
    /// The encryption scheme.
    package let scheme: SealScheme
    /// The key (its size must suit the scheme; checked by ``seal(_:)``).
    package let key: AttachmentKey
    /// How the sealed bytes are represented.
    package let transferEncoding: TransferEncoding

    /// Creates a sealer; nothing is checked until ``seal(_:)``.
    package init(scheme: SealScheme, key: AttachmentKey, transferEncoding: TransferEncoding = .binary) {
        self.scheme = scheme
        self.key = key
        self.transferEncoding = transferEncoding
    }

    /// The exact number of bytes a payload of `n` plaintext bytes has, encoding included.
    package func sealedByteCount(forPlaintextCount n: Int64) -> Int64 {
        let binary: Int64
        switch scheme {
        case .streamGCM: binary = StreamGCM.sealedCount(forPlaintextCount: n)
        case .signal: binary = SignalAttachment.sealedCount(forPlaintextCount: n)
        case .matrix: binary = n
        case .legacyCBC, .legacyECB: binary = LegacyAES.sealedCount(forPlaintextCount: n)
        case .none: binary = n
        }
        return transferEncoding.encodedCount(binary)
    }

    /// Wraps a plaintext source; nothing is read until the returned payload's reader is pulled.
    /// - Throws: ``AttacheError`` `.invalidKey` when the key does not suit the scheme (32 bytes for
    ///   `stream-gcm`, 64 for `signal`, non-empty for `legacy-*`).
    package func seal(_ plaintext: any ByteSource) throws -> SealedPayload {
        let plan: SealedPayload.Plan
        switch scheme {
        case .streamGCM: plan = .streamGCM(try StreamGCMSealPlan(key: key))
        case .signal:
            try SignalAttachment.checkKey(key)
            plan = .signal(iv: SecureRandom.bytes(SignalAttachment.ivCount))
        case .matrix:
            try MatrixAttachment.checkKey(key)
            plan = .matrix(iv: MatrixAttachment.counterBlock(SecureRandom.bytes(MatrixAttachment.ivRandomCount)))
        case .legacyCBC, .legacyECB:
            guard key.bytes.count > 0 else {
                throw AttacheError(.invalidKey, stage: .seal, "the legacy passphrase is empty")
            }
            plan = .legacy
        case .none: plan = .none
        }
        return SealedPayload(sealer: self, plaintext: plaintext, plan: plan)
    }

    /// Wraps a plaintext source as part `part` of an upload whose header values come from `material`'s
    /// seed: sealing the same plaintext with the same material and part gives the same bytes in any
    /// process, which is what a replayed or resumed upload needs. The sealer's own key is used (normally
    /// `material.key`, or a configured fixed key).
    /// - Throws: ``AttacheError`` `.invalidKey` when the key does not suit the scheme.
    package func seal(_ plaintext: any ByteSource, material: SealMaterial, part: Int) throws -> SealedPayload {
        let plan: SealedPayload.Plan
        switch scheme {
        case .streamGCM:
            let values = try material.headerValues(
                part: part, count: StreamGCM.saltCount + StreamGCM.noncePrefixCount)
            plan = .streamGCM(
                try StreamGCMSealPlan(
                    key: key, salt: Array(values[..<StreamGCM.saltCount]),
                    noncePrefix: Array(values[StreamGCM.saltCount...])))
        case .signal:
            try SignalAttachment.checkKey(key)
            plan = .signal(iv: try material.headerValues(part: part, count: SignalAttachment.ivCount))
        case .matrix:
            try MatrixAttachment.checkKey(key)
            plan = .matrix(
                iv: MatrixAttachment.counterBlock(
                    try material.headerValues(part: part, count: MatrixAttachment.ivRandomCount)))
        case .legacyCBC, .legacyECB, .none:
            // No random header values: the key alone fixes the bytes.
            return try seal(plaintext)
        }
        return SealedPayload(sealer: self, plaintext: plaintext, plan: plan)
    }

    /// For test vectors: `stream-gcm` with a fixed salt and nonce prefix, or `signal` with a fixed IV.
    func seal(_ plaintext: any ByteSource, salt: [UInt8], noncePrefix: [UInt8]) throws -> SealedPayload {
        SealedPayload(
            sealer: self, plaintext: plaintext,
            plan: .streamGCM(try StreamGCMSealPlan(key: key, salt: salt, noncePrefix: noncePrefix)))
    }

    func seal(_ plaintext: any ByteSource, matrixIV: [UInt8]) throws -> SealedPayload {
        try MatrixAttachment.checkKey(key)
        return SealedPayload(sealer: self, plaintext: plaintext, plan: .matrix(iv: matrixIV))
    }

    func seal(_ plaintext: any ByteSource, signalIV: [UInt8]) throws -> SealedPayload {
        try SignalAttachment.checkKey(key)
        return SealedPayload(sealer: self, plaintext: plaintext, plan: .signal(iv: signalIV))
    }
}

/// Sealed bytes of one attachment, produced as they are read; `byteCount` is exact up front.
///
/// Re-opening gives identical bytes (same key, salt, nonces, IV), which is what makes a retried upload
/// the same upload.
package struct SealedPayload: ByteSource {
    enum Plan: Sendable {
        case streamGCM(StreamGCMSealPlan)
        case signal(iv: [UInt8])
        case matrix(iv: [UInt8])
        case legacy
        case none
    }

    /// The encryption scheme.
    package var scheme: SealScheme { sealer.scheme }
    /// The transfer encoding applied after encryption.
    package var transferEncoding: TransferEncoding { sealer.transferEncoding }
    /// The plaintext length, which `signal` receivers need to strip the bucket padding.
    package var plaintextByteCount: Int64 { plaintext.byteCount }
    /// The exact number of bytes every reader produces.
    package var byteCount: Int64 { sealer.sealedByteCount(forPlaintextCount: plaintext.byteCount) }

    /// The scheme's digest as lowercase hex, known once a reader has been read to the end, nil before.
    ///
    /// `signal`: SHA-256 of the whole encrypted blob (before any transfer encoding), as Signal puts in
    /// its attachment pointer. `matrix`: SHA-256 of the ciphertext (``matrixFile(url:key:)`` carries it
    /// as Matrix writes it). Other schemes have no digest (nil): `stream-gcm` authenticates every
    /// segment and a second hash pass would halve its throughput.
    package var digest: String? { digestBox.digest }

    /// `matrix`: the counter block this payload starts from; nil for other schemes.
    package var matrixIV: [UInt8]? {
        if case .matrix(let iv) = plan { return iv }
        return nil
    }

    /// `matrix`, once a reader has been read to the end: the message's `EncryptedFile` object, with
    /// `key` as its JWK (nil: `k` left out) and `url` where the ciphertext was stored. Nil for other
    /// schemes and before the digest is known.
    package func matrixFile(url: String?, key: AttachmentKey?) -> MatrixEncryptedFile? {
        guard let iv = matrixIV, let digest, let bytes = unhex(digest) else { return nil }
        return MatrixEncryptedFile(url: url, key: key, iv: iv, sha256: bytes)
    }

    let sealer: Sealer
    let plaintext: any ByteSource
    let plan: Plan
    let digestBox = DigestBox()

    init(sealer: Sealer, plaintext: any ByteSource, plan: Plan) {
        self.sealer = sealer
        self.plaintext = plaintext
        self.plan = plan
    }

    /// Opens a new reader positioned at the first sealed byte.
    /// - Throws: ``AttacheError`` when the plaintext cannot be opened.
    package func makeReader() throws -> any ByteReader {
        let binary = BinarySealedSource(payload: self)
        switch transferEncoding {
        case .binary: return try binary.makeReader()
        case .base64: return try Base64EncodedSource(base: binary, alphabet: .standard).makeReader()
        case .base64URL: return try Base64EncodedSource(base: binary, alphabet: .url).makeReader()
        }
    }
}

extension SealedPayload {
    /// A reader from sealed byte `offset`, for a resumed upload. Binary `stream-gcm` starts at the
    /// segment holding `offset` (the plaintext reader seeks there) and seals only from there; binary
    /// `none` is the plaintext, which seeks; other schemes and transfer encodings seal from the start
    /// and discard the bytes before `offset` (their output does not split into independent pieces).
    /// - Throws: ``AttacheError`` when the plaintext cannot be opened or read.
    package func makeReader(startingAt offset: Int64) throws -> any ByteReader {
        guard offset > 0 else { return try makeReader() }
        if case .none = plan, transferEncoding == .binary {
            // Each S3 part and resumed chunk of a plaintext upload opens here: reading the bytes before
            // it made a multipart upload read the file over and over (quadratic in its parts).
            return try plaintext.makeReader(startingAt: offset)
        }
        guard transferEncoding == .binary, case .streamGCM(let plan) = plan,
            // Within the header and the first segment, sealing from the start costs at most one segment.
            offset >= Int64(StreamGCM.headerCount + StreamGCM.segmentCount)
        else {
            let reader = try makeReader()
            try reader.skip(offset)
            return reader
        }
        let count = plaintextByteCount
        let segments = StreamGCM.segments(forPlaintextCount: count)
        let into = offset - Int64(StreamGCM.headerCount)
        let segment = min(into / Int64(StreamGCM.segmentCount), segments - 1)
        let plaintextReader = try plaintext.makeReader(
            startingAt: segment * Int64(StreamGCM.segmentPlaintextCount))
        let reader = ProducingReader(
            try StreamGCMSealProducer(
                plan: plan, plaintext: plaintextReader, plaintextCount: count, firstSegment: segment))
        try reader.skip(into - segment * Int64(StreamGCM.segmentCount))
        return reader
    }
}

/// The sealed bytes before transfer encoding.
private struct BinarySealedSource: ByteSource {
    let payload: SealedPayload

    var byteCount: Int64 { payload.sealer.withTransferEncoding(.binary).sealedByteCount(forPlaintextCount: payload.plaintextByteCount) }

    func makeReader() throws -> any ByteReader {
        let plaintext = try payload.plaintext.makeReader()
        let count = payload.plaintextByteCount
        let sealer = payload.sealer
        switch payload.plan {
        case .streamGCM(let plan):
            return ProducingReader(try StreamGCMSealProducer(plan: plan, plaintext: plaintext, plaintextCount: count))
        case .signal(let iv):
            return ProducingReader(
                try SignalSealProducer(
                    key: sealer.key, iv: iv, plaintext: plaintext, plaintextCount: count, digestBox: payload.digestBox))
        case .matrix(let iv):
            return ProducingReader(
                try MatrixSealProducer(
                    key: sealer.key, iv: iv, plaintext: plaintext, plaintextCount: count, digestBox: payload.digestBox))
        case .legacy:
            return ProducingReader(
                try LegacyAESProducer(
                    scheme: sealer.scheme, key: sealer.key, source: plaintext, encrypt: true, plaintextCount: count))
        case .none:
            return plaintext
        }
    }
}

extension Sealer {
    func withTransferEncoding(_ encoding: TransferEncoding) -> Sealer {
        Sealer(scheme: scheme, key: key, transferEncoding: encoding)
    }
}

extension TransferEncoding {
    /// The encoded length of `n` bytes.
    func encodedCount(_ n: Int64) -> Int64 {
        switch self {
        case .binary: n
        case .base64: Base64.encodedCount(n, padded: true)
        case .base64URL: Base64.encodedCount(n, padded: false)
        }
    }

    var alphabet: Base64.Alphabet? {
        switch self {
        case .binary: nil
        case .base64: .standard
        case .base64URL: .url
        }
    }
}
