/// How an attachment is encrypted before upload.
///
/// `streamGCM` is the default and the only scheme new code should pick unless a receiver demands
/// another: it is authenticated, streams in constant memory and is specified in `docs/FORMAT.md`.
/// `legacyCBC` and `legacyECB` are **insecure** (unauthenticated, fixed IV or ECB) and exist only to
/// talk to old servers.
public enum SealScheme: String, Sendable, CaseIterable, Codable, CustomStringConvertible {
    /// Chunked AES-256-GCM with a per-file HKDF key, 64 KiB segments; the default.
    case streamGCM = "stream-gcm"
    /// Signal's attachment layout: IV ‖ AES-256-CBC/PKCS#7 of the bucket-padded plaintext ‖ HMAC-SHA256.
    case signal
    /// Matrix's encrypted attachments: AES-256-CTR, the ciphertext's SHA-256 and the key in an
    /// `EncryptedFile` object (``MatrixEncryptedFile``) for the message.
    case matrix
    /// INSECURE: AES-256-CBC, zero IV, PKCS#7, key = passphrase bytes zero-padded or cut to 32.
    case legacyCBC = "legacy-cbc"
    /// INSECURE: AES-128-ECB on the first 16 passphrase bytes, PKCS#7.
    case legacyECB = "legacy-ecb"
    /// No encryption: the plaintext as it is.
    case none

    /// The scheme's name, as the CLI and receipts spell it (`stream-gcm`).
    public var description: String { rawValue }

    /// Whether the scheme detects modified ciphertext (`matrix`: by the SHA-256 the message carries).
    package var isAuthenticated: Bool { self == .streamGCM || self == .signal || self == .matrix }

    /// Whether keys for this scheme are passphrases (the old `NSData+AES256` string keys).
    package var usesPassphrase: Bool { self == .legacyCBC || self == .legacyECB }
}

/// How sealed bytes are represented on the wire.
public enum TransferEncoding: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// The bytes as they are.
    case binary
    /// RFC 4648 §4 base64, padded with `=`, no line breaks.
    case base64
    /// RFC 4648 §5 base64url, without padding, no line breaks.
    case base64URL = "base64url"

    /// The encoding's name, as the CLI and receipts spell it (`base64url`).
    public var description: String { rawValue }
}

extension AttacheError.Code {
    /// The sealed data does not start with a header this version can read.
    public static let sealedHeaderInvalid = Self("sealed-header-invalid")
    /// The sealed data ends early: a segment, the final segment, or the MAC is missing.
    public static let sealedDataTruncated = Self("sealed-data-truncated")
    /// A segment authenticates, but at another position: segments were reordered, duplicated, or data
    /// follows the final segment.
    public static let sealedSegmentMisplaced = Self("sealed-segment-misplaced")
    /// Block-cipher or bucket padding is malformed (for unauthenticated schemes, usually a wrong key).
    public static let sealedPaddingInvalid = Self("sealed-padding-invalid")
    /// Base64 text contains a character outside the alphabet, misplaced padding or non-zero spare bits.
    public static let base64Invalid = Self("base64-invalid")
}
