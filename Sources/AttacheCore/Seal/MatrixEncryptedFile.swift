/// Matrix's `EncryptedFile` object: what an `m.room.message` carries (as `file`, or `info.thumbnail_file`)
/// so that a receiving client can fetch, check and decrypt an attachment sealed with the `matrix` scheme.
///
/// It holds the key (the JWK's `k`), so it belongs in the (end-to-end encrypted) message only; its
/// `description` never shows the key. Encoded with `JSONEncoder` it is the object Matrix specifies:
///
/// ```json
/// {"url": "mxc://example.org/abc", "v": "v2", "iv": "<unpadded base64 of 16 bytes>",
///  "key": {"kty": "oct", "alg": "A256CTR", "ext": true, "key_ops": ["encrypt", "decrypt"],
///          "k": "<unpadded base64url of 32 bytes>"},
///  "hashes": {"sha256": "<unpadded base64 of the ciphertext's SHA-256>"}}
/// ```
public struct MatrixEncryptedFile: Sendable, Codable, Hashable, CustomStringConvertible {
    /// The key as a JSON Web Key (RFC 7517) of type `oct` for `A256CTR`.
    public struct JSONWebKey: Sendable, Codable, Hashable {
        /// Always `oct`.
        public var kty: String
        /// Always `["encrypt", "decrypt"]`.
        public var keyOps: [String]
        /// Always `A256CTR`.
        public var alg: String
        /// The 32-byte key as unpadded base64url; nil when the key was configured rather than drawn for
        /// this attachment (the caller then fills in its own).
        public var k: String?
        /// Always true.
        public var ext: Bool

        /// A JWK for `key`, or without `k` when `key` is nil.
        package init(key: AttachmentKey?) {
            kty = "oct"
            keyOps = ["encrypt", "decrypt"]
            alg = "A256CTR"
            k = key.map { key in
                key.bytes.withUnsafeBytes { Base64.encode($0, alphabet: .url) }
            }
            ext = true
        }

        private enum CodingKeys: String, CodingKey {
            case kty, keyOps = "key_ops", alg, k, ext
        }
    }

    /// The content URI of the uploaded ciphertext (an `mxc://` URI on Matrix; otherwise the URL the upload
    /// server answered); nil when the server named none.
    public var url: String?
    /// The key.
    public var key: JSONWebKey
    /// The 16-byte AES-CTR counter block as unpadded base64.
    public var iv: String
    /// `sha256`: the SHA-256 of the ciphertext as unpadded base64.
    public var hashes: [String: String]
    /// The format version: `v2`.
    public var v: String

    /// Creates the object for a ciphertext sealed with `key` (nil: leave `k` out), `iv` (16 bytes) and
    /// whose SHA-256 is `sha256` (32 bytes).
    package init(url: String?, key: AttachmentKey?, iv: [UInt8], sha256: [UInt8]) {
        self.url = url
        self.key = JSONWebKey(key: key)
        self.iv = MatrixAttachment.unpaddedBase64(iv)
        hashes = ["sha256": MatrixAttachment.unpaddedBase64(sha256)]
        v = "v2"
    }

    /// The key, IV and expected SHA-256 as bytes, checked: what ``Unsealer`` needs to open the file.
    /// - Throws: ``AttacheError`` `.invalidKey` when `k` is missing or not 32 bytes, or the JWK is not
    ///   `A256CTR`; `.sealedHeaderInvalid` when `iv` or `hashes.sha256` is missing or malformed, or `v`
    ///   is not `v2`.
    package func openingValues() throws -> (key: AttachmentKey, iv: [UInt8], sha256: [UInt8]) {
        guard key.alg == "A256CTR", key.kty == "oct" else {
            throw AttacheError(.invalidKey, stage: .seal, "the file info's key is not an oct JWK for A256CTR")
        }
        guard v == "v2" else {
            throw AttacheError(.sealedHeaderInvalid, stage: .seal, "the file info's version is \(v), not v2")
        }
        guard let k = key.k, let keyBytes = try? MatrixAttachment.decodeBase64(k), keyBytes.count == 32 else {
            throw AttacheError(.invalidKey, stage: .seal, "the file info's key.k is not the base64url of 32 bytes")
        }
        guard let ivBytes = try? MatrixAttachment.decodeBase64(iv), ivBytes.count == MatrixAttachment.ivCount else {
            throw AttacheError(.sealedHeaderInvalid, stage: .seal, "the file info's iv is not the base64 of 16 bytes")
        }
        guard let text = hashes["sha256"], let digest = try? MatrixAttachment.decodeBase64(text), digest.count == 32
        else {
            throw AttacheError(
                .sealedHeaderInvalid, stage: .seal, "the file info's hashes.sha256 is not the base64 of 32 bytes")
        }
        return (AttachmentKey(bytes: SecureBytes(keyBytes)), ivBytes, digest)
    }

    /// Never the key.
    public var description: String {
        "MatrixEncryptedFile(url: \(url ?? "nil"), iv: \(iv), sha256: \(hashes["sha256"] ?? "nil"), v: \(v))"
    }
}
