internal import COpenSSL

/// Owns one `EVP_MD_CTX` computing SHA-256: created in `init`, freed in `deinit`.
final class SHA256Digest {
    static let byteCount = 32
    private let context: OpaquePointer

    init() throws {
        guard let context = EVP_MD_CTX_new() else { throw AttacheError.openSSL("EVP_MD_CTX_new") }
        self.context = context
        let status = EVP_DigestInit_ex(context, EVP_sha256(), nil)
        guard status == 1 else { throw AttacheError.openSSL("EVP_DigestInit_ex") }
    }

    deinit { EVP_MD_CTX_free(context) }

    func update(_ bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count > 0 else { return }
        let status = EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
        guard status == 1 else { throw AttacheError.openSSL("EVP_DigestUpdate") }
    }

    func finish() throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.byteCount)
        var length: UInt32 = 0
        let status = EVP_DigestFinal_ex(context, &out, &length)
        guard status == 1 else { throw AttacheError.openSSL("EVP_DigestFinal_ex") }
        return out
    }

    /// SHA-256 of `bytes` in one call.
    static func hash(_ bytes: [UInt8]) throws -> [UInt8] {
        let digest = try SHA256Digest()
        try bytes.withUnsafeBytes { try digest.update($0) }
        return try digest.finish()
    }
}

/// Owns one `EVP_MAC_CTX` computing HMAC-SHA256: created in `init`, freed in `deinit`.
final class HMACSHA256 {
    static let byteCount = 32
    private let mac: OpaquePointer
    private let context: OpaquePointer

    init(key: UnsafeRawBufferPointer) throws {
        guard let mac = EVP_MAC_fetch(nil, "HMAC", nil) else { throw AttacheError.openSSL("EVP_MAC_fetch") }
        guard let context = EVP_MAC_CTX_new(mac) else {
            EVP_MAC_free(mac)
            throw AttacheError.openSSL("EVP_MAC_CTX_new")
        }
        self.mac = mac
        self.context = context
        let status = attache_hmac_sha256_init(
            context, key.baseAddress?.assumingMemoryBound(to: UInt8.self), key.count)
        guard status == 1 else { throw AttacheError.openSSL("EVP_MAC_init") }
    }

    deinit {
        EVP_MAC_CTX_free(context)
        EVP_MAC_free(mac)
    }

    func update(_ bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count > 0 else { return }
        let status = EVP_MAC_update(context, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        guard status == 1 else { throw AttacheError.openSSL("EVP_MAC_update") }
    }

    func finish() throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.byteCount)
        var length = 0
        let status = EVP_MAC_final(context, &out, &length, out.count)
        guard status == 1 else { throw AttacheError.openSSL("EVP_MAC_final") }
        return out
    }
}

/// HKDF-SHA256 (RFC 5869) through OpenSSL's `EVP_PKEY_HKDF`.
enum HKDF {
    /// Extracts and expands `count` bytes from `key` with `salt` and `info`.
    static func sha256(
        key: UnsafeRawBufferPointer, salt: [UInt8], info: [UInt8], count: Int
    ) throws -> SecureBytes {
        let context = try PKeyContext()
        let out = SecureBytes(zeroedCount: count)
        try context.deriveHKDF(key: key, salt: salt, info: info, into: out.mutableBytes)
        return out
    }
}

/// Owns one `EVP_PKEY_CTX` for HKDF: created in `init`, freed in `deinit`.
private final class PKeyContext {
    let context: OpaquePointer

    init() throws {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else {
            throw AttacheError.openSSL("EVP_PKEY_CTX_new_id")
        }
        self.context = context
    }

    deinit { EVP_PKEY_CTX_free(context) }

    func deriveHKDF(
        key: UnsafeRawBufferPointer, salt: [UInt8], info: [UInt8], into out: UnsafeMutableRawBufferPointer
    ) throws {
        var status = EVP_PKEY_derive_init(context)
        guard status == 1 else { throw AttacheError.openSSL("EVP_PKEY_derive_init") }
        status = EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha256())
        guard status == 1 else { throw AttacheError.openSSL("EVP_PKEY_CTX_set_hkdf_md") }
        // An empty salt means "HashLen zero bytes" in RFC 5869, which is also OpenSSL's default.
        if !salt.isEmpty {
            status = EVP_PKEY_CTX_set1_hkdf_salt(context, salt, Int32(salt.count))
            guard status == 1 else { throw AttacheError.openSSL("EVP_PKEY_CTX_set1_hkdf_salt") }
        }
        status = EVP_PKEY_CTX_set1_hkdf_key(
            context, key.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(key.count))
        guard status == 1 else { throw AttacheError.openSSL("EVP_PKEY_CTX_set1_hkdf_key") }
        if !info.isEmpty {
            status = EVP_PKEY_CTX_add1_hkdf_info(context, info, Int32(info.count))
            guard status == 1 else { throw AttacheError.openSSL("EVP_PKEY_CTX_add1_hkdf_info") }
        }
        var length = out.count
        status = EVP_PKEY_derive(context, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
        guard status == 1, length == out.count else { throw AttacheError.openSSL("EVP_PKEY_derive") }
    }
}

/// OpenSSL's CSPRNG.
enum SecureRandom {
    /// Fills `buffer` with random bytes; a CSPRNG failure is unrecoverable for key generation.
    static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard buffer.count > 0 else { return }
        let status = RAND_bytes(buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(buffer.count))
        precondition(status == 1, "OpenSSL's random generator failed: \(NativeError.openSSL("RAND_bytes"))")
    }

    static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { fill($0) }
        return out
    }
}

/// Compares in time independent of where the bytes differ.
func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    guard a.count > 0 else { return true }
    return CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0
}
