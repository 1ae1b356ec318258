internal import AttacheCore
internal import COpenSSL

/// MD5 through OpenSSL's EVP, for one purpose: checking `ETag`s, a multipart upload's composite one (the MD5
/// of its parts' MD5s) and, on a doubt, a part's against the bytes sent. Not a security check; S3 defines
/// the ETag so.
enum MD5Digest {
    /// MD5 of `bytes`.
    ///
    /// - Throws: ``AttacheCore/AttacheError`` from OpenSSL.
    static func hash(_ bytes: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw failure("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestInit_ex(context, EVP_md5(), nil) == 1 else { throw failure("EVP_DigestInit_ex") }
        let updated = bytes.withUnsafeBytes { EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
        guard updated == 1 else { throw failure("EVP_DigestUpdate") }
        var out = [UInt8](repeating: 0, count: 16)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &out, &length) == 1 else { throw failure("EVP_DigestFinal_ex") }
        return out
    }

    /// MD5 of `source`'s bytes, read once, in lower-case hex: what S3 gives as the `ETag` of a part it took
    /// whole. Blocking: call it from a ``AttacheCore/BlockingPool`` thread.
    ///
    /// - Throws: what reading the source throws; ``AttacheCore/AttacheError`` from OpenSSL.
    static func hexDigest(of source: any ByteSource) throws -> String {
        guard let context = EVP_MD_CTX_new() else { throw failure("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestInit_ex(context, EVP_md5(), nil) == 1 else { throw failure("EVP_DigestInit_ex") }
        try ContentDigest.forEachChunk(of: source) { chunk in
            guard EVP_DigestUpdate(context, chunk.baseAddress, chunk.count) == 1 else { throw failure("EVP_DigestUpdate") }
        }
        var out = [UInt8](repeating: 0, count: 16)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &out, &length) == 1 else { throw failure("EVP_DigestFinal_ex") }
        return hex(out)
    }

    private static func failure(_ function: String) -> AttacheError {
        AttacheError(.nativeLibrary, stage: .upload, "OpenSSL's \(function) failed computing MD5")
    }
}
