internal import COpenSSL

/// Owns one `EVP_CIPHER_CTX`: created in `init`, freed in `deinit`.
///
/// Used by one thread at a time. Lengths passed to OpenSSL are `Int32`; callers feed at most a few
/// hundred KiB per call.
package final class CipherContext {
    /// The ciphers the seal schemes use.
    enum Algorithm {
        case aes256GCM, aes256CBC, aes256CTR, aes128ECB

        var cipher: OpaquePointer {
            switch self {
            case .aes256GCM: attache_aes_256_gcm()
            case .aes256CBC: EVP_aes_256_cbc()
            case .aes256CTR: EVP_aes_256_ctr()
            case .aes128ECB: EVP_aes_128_ecb()
            }
        }
    }

    private let context: OpaquePointer

    package init() throws {
        guard let context = EVP_CIPHER_CTX_new() else { throw AttacheError.openSSL("EVP_CIPHER_CTX_new") }
        self.context = context
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// Selects the algorithm, key and IV; `key` or `iv` may be nil to keep the previous one, which is
    /// how a GCM stream changes only the nonce between segments.
    func start(
        _ algorithm: Algorithm?, encrypt: Bool, key: UnsafeRawBufferPointer?, iv: UnsafeRawBufferPointer?,
        padding: Bool = true
    ) throws {
        let status = EVP_CipherInit_ex(
            context, algorithm?.cipher, nil,
            key?.baseAddress?.assumingMemoryBound(to: UInt8.self),
            iv?.baseAddress?.assumingMemoryBound(to: UInt8.self), encrypt ? 1 : 0)
        guard status == 1 else { throw AttacheError.openSSL("EVP_CipherInit_ex") }
        if algorithm != nil {
            let status = EVP_CIPHER_CTX_set_padding(context, padding ? 1 : 0)
            guard status == 1 else { throw AttacheError.openSSL("EVP_CIPHER_CTX_set_padding") }
        }
    }

    /// Processes `count` bytes; `output` may equal `input`. Returns the bytes written, which for a
    /// padded block cipher may lag the input by up to one block.
    package func update(_ input: UnsafeRawPointer, count: Int, output: UnsafeMutableRawPointer) throws -> Int {
        var written: Int32 = 0
        let status = EVP_CipherUpdate(
            context, output.assumingMemoryBound(to: UInt8.self), &written,
            input.assumingMemoryBound(to: UInt8.self), Int32(count))
        guard status == 1 else { throw AttacheError.openSSL("EVP_CipherUpdate") }
        return Int(written)
    }

    /// Ends the message. Returns false (without throwing) when decryption fails its check: a GCM tag
    /// mismatch or bad PKCS#7 padding, both properties of the data rather than of OpenSSL.
    package func finish(output: UnsafeMutableRawPointer) -> (ok: Bool, written: Int) {
        var written: Int32 = 0
        let status = EVP_CipherFinal_ex(context, output.assumingMemoryBound(to: UInt8.self), &written)
        ERR_clear_error()
        return (status == 1, Int(written))
    }

    /// Copies the GCM tag after `finish` when encrypting.
    func tag(into output: UnsafeMutableRawPointer, count: Int) throws {
        let status = attache_cipher_get_tag(context, output.assumingMemoryBound(to: UInt8.self), Int32(count))
        guard status == 1 else { throw AttacheError.openSSL("EVP_CTRL_AEAD_GET_TAG") }
    }

    /// Sets the expected GCM tag before `finish` when decrypting.
    func expectTag(_ tag: UnsafeRawPointer, count: Int) throws {
        let status = attache_cipher_set_tag(context, tag.assumingMemoryBound(to: UInt8.self), Int32(count))
        guard status == 1 else { throw AttacheError.openSSL("EVP_CTRL_AEAD_SET_TAG") }
    }
}
