/// What the Seal stage did to one attachment: what a receiver needs to open it.
///
/// ``key`` is an ``AttacheCore/AttachmentKey``: printing or logging a receipt shows its size, never the
/// key; read it with ``AttacheCore/AttachmentKey/base64``. Encoded (`attache upload --json`, the batch
/// journal), the key is its text, because that is the receipt's purpose: the program that writes the chat
/// message needs it.
public struct SealReceipt: Sendable, Codable, Hashable {
    /// The scheme.
    public var scheme: SealScheme
    /// Binary or base64 on the wire.
    public var transferEncoding: TransferEncoding
    /// The size of what was sealed (after Transform).
    public var plaintextByteCount: Int64
    /// The scheme's digest of the sealed bytes (`signal`: SHA-256 hex), when it has one.
    public var digest: String?
    /// The attachment's fresh key, when the pipeline made one (no fixed key configured).
    /// It belongs in the message that carries the attachment; it is never sent to the upload server.
    public var key: AttachmentKey?
    /// `matrix`: the whole `EncryptedFile` object for the `m.room.message` (key as a JWK, IV, SHA-256 of
    /// the ciphertext, `v2`, and the URL the server answered); its `key.k` is present when ``key`` is.
    public var encryptedFile: MatrixEncryptedFile?

    /// Creates a seal receipt.
    package init(
        scheme: SealScheme, transferEncoding: TransferEncoding, plaintextByteCount: Int64, digest: String? = nil,
        key: AttachmentKey? = nil, encryptedFile: MatrixEncryptedFile? = nil
    ) {
        self.scheme = scheme
        self.transferEncoding = transferEncoding
        self.plaintextByteCount = plaintextByteCount
        self.digest = digest
        self.key = key
        self.encryptedFile = encryptedFile
    }

    private enum CodingKeys: String, CodingKey {
        case scheme, transferEncoding, plaintextByteCount, digest, key, encryptedFile
    }

    /// Reads a receipt; the key's text is read the way ``scheme`` uses keys (a `legacy-*` passphrase as
    /// it is, raw keys from base64).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        scheme = try container.decode(SealScheme.self, forKey: .scheme)
        transferEncoding = try container.decode(TransferEncoding.self, forKey: .transferEncoding)
        plaintextByteCount = try container.decode(Int64.self, forKey: .plaintextByteCount)
        digest = try container.decodeIfPresent(String.self, forKey: .digest)
        encryptedFile = try container.decodeIfPresent(MatrixEncryptedFile.self, forKey: .encryptedFile)
        if let text = try container.decodeIfPresent(String.self, forKey: .key) {
            if scheme.usesPassphrase {
                key = AttachmentKey(passphrase: text)
            } else {
                do { key = try AttachmentKey(base64: text) } catch {
                    throw DecodingError.dataCorruptedError(
                        forKey: .key, in: container, debugDescription: "not the base64 text of a 32- or 64-byte key")
                }
            }
        } else {
            key = nil
        }
    }

    /// Writes the receipt, the key as its text (see ``AttacheCore/AttachmentKey/base64``).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(scheme, forKey: .scheme)
        try container.encode(transferEncoding, forKey: .transferEncoding)
        try container.encode(plaintextByteCount, forKey: .plaintextByteCount)
        try container.encodeIfPresent(digest, forKey: .digest)
        try container.encodeIfPresent(key?.base64, forKey: .key)
        try container.encodeIfPresent(encryptedFile, forKey: .encryptedFile)
    }
}
