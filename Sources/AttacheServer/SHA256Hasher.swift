internal import COpenSSL
import Attache

/// An incremental SHA-256 over OpenSSL's EVP interface, so a part can be hashed chunk by chunk while
/// it is written to disk.
///
/// Owns one `EVP_MD_CTX`; not thread-safe (each spooled part has its own hasher).
final class SHA256Hasher {
    private let context: OpaquePointer

    /// - Throws: ``AttacheError/Code/nativeLibrary`` when OpenSSL cannot set up the digest.
    init() throws {
        guard let context = EVP_MD_CTX_new() else {
            throw Self.failure("EVP_MD_CTX_new failed")
        }
        self.context = context
        let status = EVP_DigestInit_ex(context, EVP_sha256(), nil)
        guard status == 1 else {
            EVP_MD_CTX_free(context)
            throw Self.failure("EVP_DigestInit_ex failed")
        }
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds `bytes` to the digest.
    func update(_ bytes: UnsafeRawBufferPointer) throws {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        let status = EVP_DigestUpdate(context, base, bytes.count)
        guard status == 1 else { throw Self.failure("EVP_DigestUpdate failed") }
    }

    /// Finishes the digest and returns it as lowercase hex.
    func finalizeHex() throws -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let status = EVP_DigestFinal_ex(context, &digest, &length)
        guard status == 1 else { throw Self.failure("EVP_DigestFinal_ex failed") }
        return hexString(digest.prefix(Int(length)))
    }

    /// The SHA-256 of a small in-memory value (idempotency keys), as lowercase hex.
    static func hex(of bytes: some Sequence<UInt8>) throws -> String {
        let hasher = try SHA256Hasher()
        let array = Array(bytes)
        try array.withUnsafeBytes { try hasher.update($0) }
        return try hasher.finalizeHex()
    }

    private static func failure(_ text: String) -> AttacheError {
        let code = ERR_get_error()
        return AttacheError(
            .nativeLibrary, stage: .upload, "SHA-256 digest failed",
            cause: NativeError(library: "openssl", code: Int(code), text: text))
    }
}

/// Lowercase hex of `bytes`.
func hexString(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
}
