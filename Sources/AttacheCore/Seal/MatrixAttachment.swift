/// Matrix's encrypted attachments (client-server API, "Sending encrypted attachments"): AES-256-CTR over
/// the plaintext, nothing added, and the SHA-256 of the ciphertext in the message's `EncryptedFile`.
///
/// The 16-byte counter block starts as 8 random bytes and 8 zero bytes, as Matrix clients make it, so
/// the low 64 bits count blocks and never wrap for any real file. CTR needs no padding: the ciphertext
/// is as long as the plaintext, and sealing streams in constant memory (one chunk at a time, encrypted
/// in place and hashed while it is still in the cache).
package enum MatrixAttachment {
    static let keyCount = 32
    static let ivCount = 16
    /// The random part of the counter block; the rest is zero.
    static let ivRandomCount = 8
    static let chunkCount = 1 << 16

    static func checkKey(_ key: AttachmentKey) throws {
        guard !key.isPassphrase, key.bytes.count == keyCount else {
            throw AttacheError(
                .invalidKey, stage: .seal,
                "matrix needs a 32-byte AES-256 key, got \(key.isPassphrase ? "a passphrase" : "\(key.bytes.count) bytes")")
        }
    }

    /// A counter block from `random` (at least 8 bytes): its first 8 bytes, then 8 zero bytes.
    static func counterBlock(_ random: [UInt8]) -> [UInt8] {
        Array(random.prefix(ivRandomCount)) + [UInt8](repeating: 0, count: ivCount - ivRandomCount)
    }

    /// Decodes Matrix's base64 fields, which are unpadded and either standard (`iv`, `hashes`) or
    /// URL-safe (the JWK's `k`); padding is accepted too.
    package static func decodeBase64(_ text: String) throws -> [UInt8] {
        var normal = ""
        normal.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars where scalar != "=" {
            normal.unicodeScalars.append(scalar == "+" ? "-" : scalar == "/" ? "_" : scalar)
        }
        return try Base64.decode(normal, alphabet: .url)
    }

    /// Standard base64 without padding, as Matrix writes `iv` and `hashes.sha256`.
    package static func unpaddedBase64(_ bytes: [UInt8]) -> String {
        var text = Base64.encode(bytes, alphabet: .standard)
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}

/// Encrypts with AES-256-CTR and hashes the ciphertext; the digest (hex) goes to the payload's box when
/// the plaintext ends.
final class MatrixSealProducer: ChunkProducer {
    private let plaintext: any ByteReader
    private let digestBox: DigestBox
    private let cipher: CipherContext
    private let sha: SHA256Digest
    private var remaining: Int64
    private var done = false

    init(key: AttachmentKey, iv: [UInt8], plaintext: any ByteReader, plaintextCount: Int64, digestBox: DigestBox) throws {
        try MatrixAttachment.checkKey(key)
        self.plaintext = plaintext
        self.digestBox = digestBox
        remaining = plaintextCount
        cipher = try CipherContext()
        sha = try SHA256Digest()
        try key.bytes.withUnsafeBytes { keyBytes in
            try iv.withUnsafeBytes { try cipher.start(.aes256CTR, encrypt: true, key: keyBytes, iv: $0, padding: false) }
        }
    }

    var maximumChunkSize: Int { MatrixAttachment.chunkCount }

    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !done else { return 0 }
        let count = Int(min(remaining, Int64(MatrixAttachment.chunkCount)))
        if count > 0 {
            let chunk = UnsafeMutableRawBufferPointer(rebasing: buffer[..<count])
            try plaintext.readExactly(into: chunk)
            remaining -= Int64(count)
            // CTR is a stream cipher: encrypting in place is allowed and saves a copy.
            _ = try cipher.update(chunk.baseAddress!, count: count, output: chunk.baseAddress!)
            try sha.update(UnsafeRawBufferPointer(chunk))
        }
        if remaining == 0 {
            try plaintext.expectEnd()
            digestBox.set(hex(try sha.finish()))
            done = true
        }
        return count
    }
}

/// Opens a Matrix attachment in two passes over the (re-openable) ciphertext: its SHA-256 is checked
/// against `hashes.sha256` first, so no plaintext is released from data that fails it.
final class MatrixOpenProducer: ChunkProducer {
    private let key: AttachmentKey
    private let iv: [UInt8]
    private let expectedSHA256: [UInt8]
    private let openSealed: () throws -> any ByteReader
    private let cipher: CipherContext
    private var reader: (any ByteReader)?
    private var verifiedCount: Int64 = 0
    private var emitted: Int64 = 0
    private var done = false

    init(key: AttachmentKey, iv: [UInt8], sha256: [UInt8], openSealed: @escaping () throws -> any ByteReader) throws {
        try MatrixAttachment.checkKey(key)
        guard iv.count == MatrixAttachment.ivCount else {
            throw AttacheError(.sealedHeaderInvalid, stage: .seal, "a matrix iv must be 16 bytes, got \(iv.count)")
        }
        guard sha256.count == SHA256Digest.byteCount else {
            throw AttacheError(
                .sealedHeaderInvalid, stage: .seal, "a matrix hashes.sha256 must be 32 bytes, got \(sha256.count)")
        }
        self.key = key
        self.iv = iv
        expectedSHA256 = sha256
        self.openSealed = openSealed
        cipher = try CipherContext()
    }

    var maximumChunkSize: Int { MatrixAttachment.chunkCount }

    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if reader == nil { try verifyAndStart(buffer) }
        guard !done, let reader else { return 0 }
        let chunk = UnsafeMutableRawBufferPointer(rebasing: buffer[..<MatrixAttachment.chunkCount])
        let n = try reader.readFully(into: chunk)
        emitted += Int64(n)
        guard emitted <= verifiedCount, n > 0 || emitted == verifiedCount else {
            throw AttacheError(.fileChanged, stage: .seal, "the sealed data changed between passes", isRetryable: true)
        }
        if n == 0 {
            done = true
            return 0
        }
        _ = try cipher.update(chunk.baseAddress!, count: n, output: chunk.baseAddress!)
        return n
    }

    private func verifyAndStart(_ buffer: UnsafeMutableRawBufferPointer) throws {
        let first = try openSealed()
        let sha = try SHA256Digest()
        while true {
            let n = try first.read(into: buffer)
            if n == 0 { break }
            verifiedCount += Int64(n)
            try sha.update(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
        }
        let digest = try sha.finish()
        let matches = digest.withUnsafeBytes { d in expectedSHA256.withUnsafeBytes { constantTimeEqual(d, $0) } }
        guard matches else {
            throw AttacheError(
                .authenticationFailed, stage: .seal,
                "the SHA-256 of the ciphertext does not match hashes.sha256: the data was modified or truncated")
        }
        try key.bytes.withUnsafeBytes { keyBytes in
            try iv.withUnsafeBytes { try cipher.start(.aes256CTR, encrypt: false, key: keyBytes, iv: $0, padding: false) }
        }
        reader = try openSealed()
    }
}
