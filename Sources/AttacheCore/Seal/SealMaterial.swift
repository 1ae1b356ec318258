/// Everything random about sealing one upload, drawn once and kept: the key and a seed for the header
/// values (salt and nonce prefix of `stream-gcm`, the IV of `signal`, the counter block's random half of
/// `matrix`).
///
/// Sealing the same plaintext with the same material gives the same bytes, in any process. That is what
/// makes an upload that may be replayed safe: a server that deduplicates by the idempotency key keeps the
/// bytes of the first attempt, so every later attempt must send those same bytes, or the key in its
/// receipt would not open what the server holds. Make the material durable (the batch journal, a queue
/// row, `SealMaterialStore`) before the first byte leaves, and hand it back on every attempt.
///
/// The parts of one upload (the attachment, then each thumbnail) each get their own header values,
/// derived from the seed with HKDF-SHA256 and the part's index, so no two parts ever share a nonce.
///
/// ```swift
/// let material = SealMaterial.random(for: .streamGCM)
/// let text = material.encoded            // keep it where keys may be kept (0600)
/// let again = try SealMaterial(encoded: text)
/// ```
public struct SealMaterial: Sendable, Equatable, CustomStringConvertible {
    /// The key the attachment is sealed with (returned in the receipt).
    public let key: AttachmentKey
    /// 32 random bytes from which every part's salt, nonce prefix or IV is derived.
    package let nonceSeed: SecureBytes

    static let seedCount = 32
    private static let prefix = "attache-seal-v1:"

    /// Wraps a key and a seed of 32 bytes.
    /// - Throws: ``AttacheError`` `.invalidKey` when the seed is not 32 bytes.
    package init(key: AttachmentKey, nonceSeed: SecureBytes) throws {
        guard nonceSeed.count == Self.seedCount else {
            throw AttacheError(.invalidKey, stage: .seal, "a seal nonce seed must be \(Self.seedCount) bytes")
        }
        self.key = key
        self.nonceSeed = nonceSeed
    }

    /// A fresh key for `scheme` and a fresh seed, from OpenSSL's CSPRNG.
    public static func random(for scheme: SealScheme) -> SealMaterial {
        // The seed is 32 bytes by construction; the throwing initialiser cannot fail here.
        try! SealMaterial(key: AttachmentKey.random(for: scheme), nonceSeed: SecureBytes(randomCount: seedCount))
    }

    /// The material as one line of text: `attache-seal-v1:` then `k` (raw key) or `p` (passphrase), the
    /// key in base64, `:`, and the seed in base64. It holds the key: store it only where keys may be
    /// stored.
    package var encoded: String {
        let keyText = key.bytes.withUnsafeBytes { Base64.encode($0, alphabet: .standard) }
        let seedText = nonceSeed.withUnsafeBytes { Base64.encode($0, alphabet: .standard) }
        return Self.prefix + (key.isPassphrase ? "p" : "k") + keyText + ":" + seedText
    }

    /// Reads the text form written by ``encoded``.
    /// - Throws: ``AttacheError`` `.invalidKey` when the text is not seal material.
    package init(encoded text: String) throws {
        let invalid = AttacheError(.invalidKey, stage: .seal, "not attache seal material")
        guard text.hasPrefix(Self.prefix) else { throw invalid }
        let body = text.dropFirst(Self.prefix.count)
        guard let kind = body.first, kind == "k" || kind == "p" else { throw invalid }
        let fields = body.dropFirst().split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 2,
            let keyBytes = try? Base64.decode(String(fields[0]), alphabet: .standard),
            let seedBytes = try? Base64.decode(String(fields[1]), alphabet: .standard),
            !keyBytes.isEmpty
        else { throw invalid }
        try self.init(
            key: AttachmentKey(bytes: SecureBytes(keyBytes), isPassphrase: kind == "p"),
            nonceSeed: SecureBytes(seedBytes))
    }

    /// Whether the key is of the kind `scheme` takes (32 bytes, 64 bytes, a passphrase); material made
    /// for one scheme is not reused for another.
    package func suits(_ scheme: SealScheme) -> Bool {
        switch scheme {
        case .streamGCM, .matrix, .none: !key.isPassphrase && key.bytes.count == 32
        case .signal: !key.isPassphrase && key.bytes.count == 64
        case .legacyCBC, .legacyECB: key.isPassphrase && key.bytes.count > 0
        }
    }

    /// A 32-byte key of its own for part `part` (a Matrix thumbnail, which a client opens with the key in
    /// its `thumbnail_file`): HKDF-SHA256 of the seed with an info of its own, so neither the attachment's
    /// key nor any header value tells anything of it, and a replay derives it again.
    package func partKey(part: Int) throws -> AttachmentKey {
        let info = Array("attache seal part key v1, part \(part)".utf8)
        let derived = try nonceSeed.withUnsafeBytes { seed in
            try HKDF.sha256(key: seed, salt: [], info: info, count: 32)
        }
        return AttachmentKey(bytes: SecureBytes(derived.withUnsafeBytes { Array($0) }))
    }

    /// `count` bytes of header values for part `part` of the upload.
    func headerValues(part: Int, count: Int) throws -> [UInt8] {
        let info = Array("attache seal header values v1, part \(part)".utf8)
        let derived = try nonceSeed.withUnsafeBytes { seed in
            try HKDF.sha256(key: seed, salt: [], info: info, count: count)
        }
        return derived.withUnsafeBytes { Array($0) }
    }

    /// Compares in constant time.
    public static func == (lhs: SealMaterial, rhs: SealMaterial) -> Bool {
        lhs.key.isPassphrase == rhs.key.isPassphrase
            && lhs.key.bytes.withUnsafeBytes { a in rhs.key.bytes.withUnsafeBytes { b in constantTimeEqual(a, b) } }
            && lhs.nonceSeed.withUnsafeBytes { a in rhs.nonceSeed.withUnsafeBytes { b in constantTimeEqual(a, b) } }
    }

    /// Never the key or the seed.
    public var description: String { "SealMaterial(\(key))" }
}
