internal import COpenSSL
import Attache

/// An incremental SHA-256 over OpenSSL's EVP interface, so a part can be hashed chunk by chunk while
/// it is written to disk.
///
/// Owns one `EVP_MD_CTX`; not thread-safe (each spooled part has its own hasher).
final class SHA256Hasher {
    private let context: OpaquePointer

    /// - Throws: ``AttacheError/Code/nativeLibrary`` when OpenSSL cannot set up the digest.
    convenience init() throws {
        try self.init(algorithm: "sha256")
    }

    /// A hasher for `sha1`, `sha256` or `sha512` (tus `Upload-Checksum`); other names are SHA-256.
    init(algorithm: String) throws {
        guard let context = EVP_MD_CTX_new() else {
            throw Self.failure("EVP_MD_CTX_new failed")
        }
        self.context = context
        let digest: OpaquePointer? =
            switch algorithm {
            case "sha1": EVP_sha1()
            case "sha512": EVP_sha512()
            default: EVP_sha256()
            }
        let status = EVP_DigestInit_ex(context, digest, nil)
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

    /// Finishes the digest and returns its bytes.
    func finalizeBytes() throws -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let status = EVP_DigestFinal_ex(context, &digest, &length)
        guard status == 1 else { throw Self.failure("EVP_DigestFinal_ex failed") }
        return Array(digest.prefix(Int(length)))
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

    /// Reads `reader` to its end through a hasher; returns the byte count and the lowercase hex
    /// digest. Blocking.
    /// - Throws: whatever the reader throws (for a decrypting reader: why the data did not verify).
    static func hexAndCount(of reader: any ByteReader) throws -> (count: Int64, hex: String) {
        let hasher = try SHA256Hasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 18, alignment: 16)
        defer { buffer.deallocate() }
        var count: Int64 = 0
        while true {
            let n = try reader.read(into: buffer)
            if n == 0 { break }
            count += Int64(n)
            try hasher.update(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
        }
        return (count, try hasher.finalizeHex())
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
