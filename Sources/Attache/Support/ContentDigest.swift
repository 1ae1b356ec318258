import FoundationEssentials
import Glibc

/// SHA-256 of a source's bytes: the hash in a journal row's identity, and the digest a replayed receipt
/// is checked against.
///
/// Uses the Seal stage's OpenSSL digest; the batch hashes the source bytes itself so that the journal's
/// identity does not depend on how (or whether) an attachment is sealed.
package enum ContentDigest {
    /// Reads `source` once, in 256 KiB chunks, and returns its SHA-256 as lower-case hex. Blocking: call
    /// it from a ``AttacheCore/BlockingPool`` thread.
    /// - Throws: ``AttacheCore/AttacheError`` from reading (`.fileNotFound`, `.fileUnreadable`, `.fileChanged`) or
    ///   from OpenSSL.
    package static func sha256Hex(of source: any ByteSource) throws -> String {
        let digest = try SHA256Digest()
        try forEachChunk(of: source) { try digest.update($0) }
        return try digest.finish().map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// Reads `source` once, in 256 KiB chunks, handing each to `body` (valid only during the call).
    /// Blocking.
    package static func forEachChunk(of source: any ByteSource, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let reader = try source.makeReader()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = try reader.read(into: buffer)
            if n == 0 { break }
            try body(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
        }
    }

    /// SHA-256 of bytes in memory, as lower-case hex.
    package static func sha256Hex(of bytes: [UInt8]) -> String {
        // Reading memory cannot fail, and OpenSSL's SHA-256 does not fail on valid input.
        try! sha256Hex(of: DataSource(bytes))
    }
}
