import Foundation
internal import COpenSSL

/// SHA-256 of a file's content, the hash in a journal row's identity.
///
/// The Seal stage brings its own digests; the batch keeps this small helper so that the journal does not
/// depend on how (or whether) an attachment is sealed.
final class ContentHasher {
    private let context: OpaquePointer

    /// Creates a SHA-256 context.
    /// - Throws: ``AttacheError`` `.nativeLibrary` when OpenSSL cannot set one up.
    init() throws {
        guard let context = EVP_MD_CTX_new() else {
            throw AttacheError(
                .nativeLibrary, stage: .batch, "cannot allocate a digest context",
                cause: NativeError(library: "openssl", code: Int(ERR_get_error()), text: "EVP_MD_CTX_new"))
        }
        self.context = context
        let status = EVP_DigestInit_ex(context, EVP_sha256(), nil)
        guard status == 1 else {
            EVP_MD_CTX_free(context)
            throw AttacheError(
                .nativeLibrary, stage: .batch, "cannot start a SHA-256 digest",
                cause: NativeError(library: "openssl", code: Int(ERR_get_error()), text: "EVP_DigestInit_ex"))
        }
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds bytes to the digest.
    func update(_ bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count > 0 else { return }
        let status = EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
        guard status == 1 else {
            throw AttacheError(
                .nativeLibrary, stage: .batch, "SHA-256 update failed",
                cause: NativeError(library: "openssl", code: Int(ERR_get_error()), text: "EVP_DigestUpdate"))
        }
    }

    /// Finishes the digest and returns it as lower-case hex.
    func finish() throws -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let status = EVP_DigestFinal_ex(context, &digest, &length)
        guard status == 1 else {
            throw AttacheError(
                .nativeLibrary, stage: .batch, "SHA-256 finish failed",
                cause: NativeError(library: "openssl", code: Int(ERR_get_error()), text: "EVP_DigestFinal_ex"))
        }
        return digest.prefix(Int(length)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// Reads `source` once, in 256 KiB chunks, and returns its SHA-256 as hex. Blocking: call it from a
    /// ``BlockingPool`` thread.
    /// - Throws: ``AttacheError`` from reading (`.fileNotFound`, `.fileUnreadable`, `.fileChanged`) or
    ///   `.nativeLibrary`.
    static func sha256(of source: any ByteSource) throws -> String {
        let hasher = try ContentHasher()
        let reader = try source.makeReader()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = try reader.read(into: buffer)
            if n == 0 { break }
            try hasher.update(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
        }
        return try hasher.finish()
    }
}
