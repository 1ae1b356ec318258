internal import COpenSSL

/// Owns one `EVP_MD_CTX` computing SHA-256: created in `init`, freed in `deinit`.
package final class SHA256Digest {
    static let byteCount = 32
    private let context: OpaquePointer

    package init() throws {
        guard let context = EVP_MD_CTX_new() else { throw AttacheError.openSSL("EVP_MD_CTX_new") }
        self.context = context
        try restart()
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Forgets everything hashed so far, so one context serves many short hashes.
    package func restart() throws {
        let status = EVP_DigestInit_ex(context, attache_sha256(), nil)
        guard status == 1 else { throw AttacheError.openSSL("EVP_DigestInit_ex") }
    }

    package func update(_ bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count > 0 else { return }
        let status = EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
        guard status == 1 else { throw AttacheError.openSSL("EVP_DigestUpdate") }
    }

    package func finish() throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.byteCount)
        try out.withUnsafeMutableBytes { try finish(into: $0.baseAddress!) }
        return out
    }

    /// Writes the 32-byte digest to `output`.
    package func finish(into output: UnsafeMutableRawPointer) throws {
        var length: UInt32 = 0
        let status = EVP_DigestFinal_ex(context, output.assumingMemoryBound(to: UInt8.self), &length)
        guard status == 1 else { throw AttacheError.openSSL("EVP_DigestFinal_ex") }
    }

    /// SHA-256 of `bytes` in one call.
    package static func hash(_ bytes: [UInt8]) throws -> [UInt8] {
        let digest = try SHA256Digest()
        try bytes.withUnsafeBytes { try digest.update($0) }
        return try digest.finish()
    }
}

/// Owns one `EVP_MAC_CTX` computing HMAC-SHA256: created in `init`, freed in `deinit`.
package final class HMACSHA256 {
    static let byteCount = 32
    private let mac: OpaquePointer
    private let context: OpaquePointer

    package init(key: UnsafeRawBufferPointer) throws {
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

    package func update(_ bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count > 0 else { return }
        let status = EVP_MAC_update(context, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        guard status == 1 else { throw AttacheError.openSSL("EVP_MAC_update") }
    }

    package func finish() throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.byteCount)
        var length = 0
        let status = EVP_MAC_final(context, &out, &length, out.count)
        guard status == 1 else { throw AttacheError.openSSL("EVP_MAC_final") }
        return out
    }
}

/// HKDF-SHA256 (RFC 5869), with HMAC written over one reused SHA-256 context.
///
/// OpenSSL's `EVP_PKEY_HKDF` costs about 10 µs per derivation here (a context, provider lookups,
/// parameter copies), half the budget for sealing a 1 KiB attachment; the six or seven SHA-256
/// compressions HKDF actually needs take about 1 µs.
package enum HKDF {
    static let hashCount = 32
    static let blockCount = 64

    /// Extracts and expands `count` bytes (at most 255 × 32) from `key` with `salt` and `info`.
    package static func sha256(
        key: UnsafeRawBufferPointer, salt: [UInt8], info: [UInt8], count: Int
    ) throws -> SecureBytes {
        precondition(count <= 255 * hashCount, "HKDF-SHA256 output is limited to 8160 bytes")
        let digest = try SHA256Digest()
        let out = SecureBytes(zeroedCount: count)
        let prk = SecureBytes(zeroedCount: hashCount)
        // An empty salt means "HashLen zero bytes" in RFC 5869.
        let extractKey = salt.isEmpty ? [UInt8](repeating: 0, count: hashCount) : salt
        try extractKey.withUnsafeBytes { saltBytes in
            try hmac(digest, key: saltBytes, [key], into: prk.mutableBytes.baseAddress!)
        }
        try withUnsafeTemporaryAllocation(byteCount: hashCount, alignment: 16) { block in
            defer { block.initializeMemory(as: UInt8.self, repeating: 0) }
            var produced = 0
            var counter: UInt8 = 1
            try info.withUnsafeBytes { infoBytes in
                while produced < count {
                    let previous = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(block)[..<(counter == 1 ? 0 : hashCount)])
                    try withUnsafeBytes(of: counter) { counterByte in
                        try hmac(digest, key: UnsafeRawBufferPointer(prk.mutableBytes), [previous, infoBytes, counterByte], into: block.baseAddress!)
                    }
                    let n = min(hashCount, count - produced)
                    (out.mutableBytes.baseAddress! + produced).copyMemory(from: block.baseAddress!, byteCount: n)
                    produced += n
                    counter &+= 1
                }
            }
        }
        return out
    }

    /// HMAC-SHA256 (RFC 2104) of the concatenated `parts`, written to `output` (32 bytes).
    private static func hmac(
        _ digest: SHA256Digest, key: UnsafeRawBufferPointer, _ parts: [UnsafeRawBufferPointer],
        into output: UnsafeMutableRawPointer
    ) throws {
        try withUnsafeTemporaryAllocation(byteCount: blockCount, alignment: 16) { pad in
            defer { pad.initializeMemory(as: UInt8.self, repeating: 0) }
            pad.initializeMemory(as: UInt8.self, repeating: 0)
            if key.count > blockCount {
                try digest.restart()
                try digest.update(key)
                try digest.finish(into: pad.baseAddress!)
            } else if key.count > 0 {
                pad.baseAddress!.copyMemory(from: key.baseAddress!, byteCount: key.count)
            }
            for index in 0..<blockCount { pad[index] ^= 0x36 }
            try digest.restart()
            try digest.update(UnsafeRawBufferPointer(pad))
            for part in parts { try digest.update(part) }
            try digest.finish(into: output)
            // 0x36 ^ 0x5c turns the inner pad into the outer pad.
            for index in 0..<blockCount { pad[index] ^= 0x36 ^ 0x5C }
            try digest.restart()
            try digest.update(UnsafeRawBufferPointer(pad))
            try digest.update(UnsafeRawBufferPointer(start: output, count: hashCount))
            try digest.finish(into: output)
        }
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

/// Owns one `EVP_MD_CTX` computing the digest a tus `Upload-Checksum` names: `sha1`, `sha256` or
/// `sha512` (one hash per chunk, so OpenSSL's implicit fetch per init is negligible).
package final class ChecksumDigest {
    private let context: OpaquePointer

    /// The algorithms this digest computes, strongest first.
    package static let algorithms = ["sha512", "sha256", "sha1"]

    /// - Throws: ``AttacheError`` `.invalidArgument` for another algorithm; OpenSSL failures.
    package init(algorithm: String) throws {
        let md: OpaquePointer?
        switch algorithm {
        case "sha1": md = EVP_sha1()
        case "sha256": md = EVP_sha256()
        case "sha512": md = EVP_sha512()
        default: throw AttacheError(.invalidArgument, stage: .upload, "unsupported checksum algorithm \(algorithm)")
        }
        guard let context = EVP_MD_CTX_new() else { throw AttacheError.openSSL("EVP_MD_CTX_new") }
        self.context = context
        guard EVP_DigestInit_ex(context, md, nil) == 1 else { throw AttacheError.openSSL("EVP_DigestInit_ex") }
    }

    deinit { EVP_MD_CTX_free(context) }

    package func update(_ bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count > 0 else { return }
        guard EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1 else {
            throw AttacheError.openSSL("EVP_DigestUpdate")
        }
    }

    package func finish() throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &out, &length) == 1 else { throw AttacheError.openSSL("EVP_DigestFinal_ex") }
        return Array(out.prefix(Int(length)))
    }
}
