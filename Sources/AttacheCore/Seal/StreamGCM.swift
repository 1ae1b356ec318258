/// The `stream-gcm` format, version 1; `docs/FORMAT.md` is its specification.
///
/// Layout: a 60-byte header (magic `ATSG`, version 1, 32-byte salt, 7-byte nonce prefix, 16-byte key
/// check), then segments of at most 64 KiB of plaintext, each AES-256-GCM ciphertext followed by its
/// 16-byte tag. The segment key and the key check come from HKDF-SHA256 over the attachment key and the
/// salt. The nonce of segment `i` is prefix ‖ big-endian UInt32 `i` ‖ `0x01` for the final segment,
/// `0x00` otherwise. Only an empty plaintext has an empty (final) segment.
package enum StreamGCM {
    static let magic: [UInt8] = Array("ATSG".utf8)
    static let version: UInt8 = 1
    static let saltCount = 32
    static let noncePrefixCount = 7
    static let keyCheckCount = 16
    static let headerCount = 4 + 1 + saltCount + noncePrefixCount + keyCheckCount
    static let keyCount = 32
    static let tagCount = 16
    static let segmentPlaintextCount = 1 << 16
    package static let segmentCount = segmentPlaintextCount + tagCount
    static let info: [UInt8] = Array("attache stream-gcm v1".utf8)

    /// The number of segments `n` plaintext bytes make.
    static func segments(forPlaintextCount n: Int64) -> Int64 {
        max(1, (n + Int64(segmentPlaintextCount) - 1) / Int64(segmentPlaintextCount))
    }

    static func sealedCount(forPlaintextCount n: Int64) -> Int64 {
        Int64(headerCount) + n + Int64(tagCount) * segments(forPlaintextCount: n)
    }

    /// The per-file secrets: segment key and key check.
    struct FileKeys: Sendable {
        let segmentKey: SecureBytes
        let keyCheck: [UInt8]
    }

    static func deriveKeys(from key: AttachmentKey, salt: [UInt8]) throws -> FileKeys {
        guard !key.isPassphrase, key.bytes.count == keyCount else {
            throw AttacheError(
                .invalidKey, stage: .seal,
                "stream-gcm needs a 32-byte key, got \(key.isPassphrase ? "a passphrase" : "\(key.bytes.count) bytes")")
        }
        let okm = try key.bytes.withUnsafeBytes {
            try HKDF.sha256(key: $0, salt: salt, info: info, count: keyCount + keyCheckCount)
        }
        return okm.withUnsafeBytes { bytes in
            FileKeys(
                segmentKey: SecureBytes(UnsafeRawBufferPointer(rebasing: bytes[..<keyCount])),
                keyCheck: Array(bytes[keyCount...]))
        }
    }

    static func header(salt: [UInt8], noncePrefix: [UInt8], keyCheck: [UInt8]) -> [UInt8] {
        var header = [UInt8]()
        header.reserveCapacity(headerCount)
        header += magic
        header.append(version)
        header += salt
        header += noncePrefix
        header += keyCheck
        return header
    }

    /// Writes the nonce of segment `counter` into `nonce` (12 bytes) after the prefix already there.
    static func setNonce(_ nonce: UnsafeMutableRawBufferPointer, counter: UInt32, last: Bool) {
        nonce.storeBytes(of: counter.bigEndian, toByteOffset: noncePrefixCount, as: UInt32.self)
        nonce[noncePrefixCount + 4] = last ? 1 : 0
    }

    static func nonce(prefix: [UInt8], counter: UInt32, last: Bool) -> [UInt8] {
        prefix + [
            UInt8(truncatingIfNeeded: counter >> 24), UInt8(truncatingIfNeeded: counter >> 16),
            UInt8(truncatingIfNeeded: counter >> 8), UInt8(truncatingIfNeeded: counter), last ? 1 : 0,
        ]
    }
}

/// Everything a `stream-gcm` reader needs, fixed when `seal` is called so every reader of one payload
/// writes identical bytes.
struct StreamGCMSealPlan: Sendable {
    let header: [UInt8]
    let noncePrefix: [UInt8]
    let keys: StreamGCM.FileKeys

    init(key: AttachmentKey) throws {
        // One call to the CSPRNG for both: each call takes the DRBG's lock, about 1 µs.
        let random = SecureRandom.bytes(StreamGCM.saltCount + StreamGCM.noncePrefixCount)
        let salt = Array(random[..<StreamGCM.saltCount])
        noncePrefix = Array(random[StreamGCM.saltCount...])
        keys = try StreamGCM.deriveKeys(from: key, salt: salt)
        header = StreamGCM.header(salt: salt, noncePrefix: noncePrefix, keyCheck: keys.keyCheck)
    }

    /// Fixed salt and prefix: derived from durable seal material, or test vectors.
    init(key: AttachmentKey, salt: [UInt8], noncePrefix: [UInt8]) throws {
        self.noncePrefix = noncePrefix
        keys = try StreamGCM.deriveKeys(from: key, salt: salt)
        header = StreamGCM.header(salt: salt, noncePrefix: noncePrefix, keyCheck: keys.keyCheck)
    }
}

/// Encrypts as many whole segments per call as the caller's buffer holds (the header goes in front of
/// the first), with one cipher context whose key is set once and whose nonce changes per segment.
/// Per segment: one `read` into the output buffer, in-place encryption, no allocation.
final class StreamGCMSealProducer: ChunkProducer {
    private let plan: StreamGCMSealPlan
    private let plaintext: any ByteReader
    private let cipher: CipherContext
    /// The 12-byte nonce, prefix written once, counter and flag rewritten per segment.
    private let nonce: UnsafeMutableRawBufferPointer
    private var remaining: Int64
    private let segmentTotal: Int64
    private var counter: Int64 = 0
    private var headerWritten = false

    /// - Parameter firstSegment: the segment to start at, for a resumed upload: `plaintext` must then
    ///   be positioned at that segment's first byte, and the header is not written (it went out with
    ///   segment 0). Every segment's nonce depends only on its index, so the output from there is
    ///   byte-identical to the corresponding part of a reader from the start.
    init(plan: StreamGCMSealPlan, plaintext: any ByteReader, plaintextCount: Int64, firstSegment: Int64 = 0) throws {
        self.plan = plan
        self.plaintext = plaintext
        remaining = plaintextCount - firstSegment * Int64(StreamGCM.segmentPlaintextCount)
        counter = firstSegment
        headerWritten = firstSegment > 0
        segmentTotal = StreamGCM.segments(forPlaintextCount: plaintextCount)
        guard segmentTotal <= Int64(UInt32.max) + 1 else {
            throw AttacheError(.limitExceeded, stage: .seal, "the plaintext is too large for stream-gcm (256 TiB)")
        }
        maximumChunkSize = StreamGCM.headerCount + Int(min(plaintextCount, Int64(StreamGCM.segmentPlaintextCount)))
            + StreamGCM.tagCount
        let cipher = try CipherContext()
        try plan.keys.segmentKey.withUnsafeBytes { key in
            try cipher.start(.aes256GCM, encrypt: true, key: key, iv: nil)
        }
        self.cipher = cipher
        // Allocated after everything that can throw, so a failed init leaks nothing.
        nonce = .allocate(byteCount: StreamGCM.noncePrefixCount + 5, alignment: 8)
        plan.noncePrefix.withUnsafeBytes { nonce.copyMemory(from: $0) }
    }

    deinit { nonce.deallocate() }

    /// The header and the first segment, so that a small payload is one chunk.
    let maximumChunkSize: Int

    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var written = 0
        if !headerWritten {
            headerWritten = true
            plan.header.withUnsafeBytes { buffer.copyMemory(from: $0) }
            written = plan.header.count
        }
        while counter < segmentTotal {
            let count = Int(min(remaining, Int64(StreamGCM.segmentPlaintextCount)))
            guard buffer.count - written >= count + StreamGCM.tagCount else { break }
            written += try sealSegment(count: count, at: buffer.baseAddress! + written)
        }
        return written
    }

    /// Reads `count` plaintext bytes to `output`, encrypts them in place and appends the tag.
    private func sealSegment(count: Int, at output: UnsafeMutableRawPointer) throws -> Int {
        let last = counter == segmentTotal - 1
        try plaintext.readExactly(into: UnsafeMutableRawBufferPointer(start: output, count: count))
        remaining -= Int64(count)
        if last { try plaintext.expectEnd() }
        StreamGCM.setNonce(nonce, counter: UInt32(counter), last: last)
        try cipher.start(nil, encrypt: true, key: nil, iv: UnsafeRawBufferPointer(nonce))
        var written = count > 0 ? try cipher.update(output, count: count, output: output) : 0
        let final = cipher.finish(output: output + written)
        guard final.ok else { throw AttacheError.openSSL("EVP_CipherFinal_ex") }
        written += final.written
        try cipher.tag(into: output + written, count: StreamGCM.tagCount)
        counter += 1
        return written + StreamGCM.tagCount
    }
}

/// Decrypts `stream-gcm`, releasing a segment's plaintext only after its tag has been verified.
final class StreamGCMOpenProducer: ChunkProducer {
    private let key: AttachmentKey
    private let sealed: any ByteReader
    /// An upper bound on the number of segments, for finding where a misplaced segment belongs.
    private let segmentBound: Int64
    private let cipher: CipherContext
    /// One ciphertext segment plus one byte of look-ahead, which tells whether the segment is final.
    private let input: UnsafeMutableRawBufferPointer
    private var noncePrefix: [UInt8] = []
    private var counter: Int64 = 0
    private var lookahead: UInt8?
    private var started = false
    private var done = false

    init(key: AttachmentKey, sealed: any ByteReader, sealedCountBound: Int64) throws {
        self.key = key
        self.sealed = sealed
        segmentBound = max(1, (sealedCountBound - Int64(StreamGCM.headerCount)) / Int64(StreamGCM.segmentCount) + 1)
        cipher = try CipherContext()
        input = .allocate(byteCount: StreamGCM.segmentCount + 1, alignment: 16)
    }

    deinit { input.deallocate() }

    var maximumChunkSize: Int { StreamGCM.segmentPlaintextCount }

    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if !started {
            try readHeader()
            started = true
        }
        guard !done else { return 0 }
        var filled = 0
        if let lookahead {
            input[0] = lookahead
            filled = 1
        }
        filled += try sealed.readFully(into: UnsafeMutableRawBufferPointer(rebasing: input[filled...]))
        let last = filled <= StreamGCM.segmentCount
        let count = last ? filled : StreamGCM.segmentCount
        lookahead = last ? nil : input[StreamGCM.segmentCount]
        guard count >= StreamGCM.tagCount else {
            throw AttacheError(
                .sealedDataTruncated, stage: .seal,
                counter == 0 && count == 0
                    ? "the sealed data ends after its header"
                    : "the sealed data ends inside segment \(counter)")
        }
        guard counter <= Int64(UInt32.max) else {
            throw AttacheError(.sealedSegmentMisplaced, stage: .seal, "more segments than the format allows")
        }
        let ciphertext = UnsafeRawBufferPointer(rebasing: input[..<count])
        guard let n = try open(ciphertext, counter: counter, last: last, into: buffer) else {
            throw diagnose(ciphertext, last: last)
        }
        if last {
            done = true
            if n == 0 && counter > 0 {
                throw AttacheError(
                    .corruptInput, stage: .seal, "an empty final segment follows data (not a canonical stream)")
            }
        }
        counter += 1
        return n
    }

    private func readHeader() throws {
        var header = [UInt8](repeating: 0, count: StreamGCM.headerCount)
        let n = try header.withUnsafeMutableBytes { try sealed.readFully(into: $0) }
        let known = min(n, 5)
        guard Array(header[..<min(known, 4)]) == Array(StreamGCM.magic[..<min(known, 4)]) else {
            throw AttacheError(.sealedHeaderInvalid, stage: .seal, "the data is not stream-gcm (wrong magic bytes)")
        }
        if known == 5, header[4] != StreamGCM.version {
            throw AttacheError(
                .sealedHeaderInvalid, stage: .seal, "unsupported stream-gcm version \(header[4])")
        }
        // docs/FORMAT.md: fewer than the 5 bytes of magic and version cannot be told from other data
        // (header invalid); with those 5 bytes right, a shorter header is a truncated stream.
        guard n == StreamGCM.headerCount else {
            throw AttacheError(
                n < 5 ? .sealedHeaderInvalid : .sealedDataTruncated, stage: .seal,
                n == 0
                    ? "the sealed data is empty"
                    : n < 5 ? "the data is not stream-gcm (\(n) bytes, shorter than its magic and version)"
                    : "the sealed data ends inside its header")
        }
        let saltEnd = 5 + StreamGCM.saltCount
        let prefixEnd = saltEnd + StreamGCM.noncePrefixCount
        let salt = Array(header[5..<saltEnd])
        noncePrefix = Array(header[saltEnd..<prefixEnd])
        let keys = try StreamGCM.deriveKeys(from: key, salt: salt)
        let matches = keys.keyCheck.withUnsafeBytes { expected in
            header[prefixEnd...].withUnsafeBytes { constantTimeEqual(expected, $0) }
        }
        guard matches else {
            throw AttacheError(
                .invalidKey, stage: .seal, "wrong key: the key check in the header does not match (or the header was modified)")
        }
        try keys.segmentKey.withUnsafeBytes { try cipher.start(.aes256GCM, encrypt: false, key: $0, iv: nil) }
    }

    /// Decrypts one segment as number `counter`; nil when its tag does not verify.
    private func open(
        _ ciphertext: UnsafeRawBufferPointer, counter: Int64, last: Bool, into output: UnsafeMutableRawBufferPointer
    ) throws -> Int? {
        let body = ciphertext.count - StreamGCM.tagCount
        let nonce = StreamGCM.nonce(prefix: noncePrefix, counter: UInt32(truncatingIfNeeded: counter), last: last)
        try nonce.withUnsafeBytes { try cipher.start(nil, encrypt: false, key: nil, iv: $0) }
        var written = body > 0 ? try cipher.update(ciphertext.baseAddress!, count: body, output: output.baseAddress!) : 0
        try cipher.expectTag(ciphertext.baseAddress! + body, count: StreamGCM.tagCount)
        let final = cipher.finish(output: output.baseAddress! + written)
        guard final.ok else { return nil }
        written += final.written
        return written
    }

    /// Works out why segment `counter` failed, so the error says what happened to the data. Only runs
    /// on failure; the search over other positions is bounded by the input's length.
    private func diagnose(_ ciphertext: UnsafeRawBufferPointer, last: Bool) -> AttacheError {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: StreamGCM.segmentPlaintextCount, alignment: 16)
        defer { scratch.deallocate() }
        func opens(_ position: Int64, _ final: Bool) -> Bool {
            ((try? open(ciphertext, counter: position, last: final, into: scratch)) ?? nil) != nil
        }
        if last, opens(counter, false) {
            return AttacheError(
                .sealedDataTruncated, stage: .seal,
                "the sealed data is truncated: segment \(counter) is not the final segment")
        }
        if !last, opens(counter, true) {
            return AttacheError(
                .sealedSegmentMisplaced, stage: .seal, "data follows the final segment (segment \(counter))")
        }
        for position in 0..<min(segmentBound, Int64(UInt32.max) + 1) where position != counter {
            for final in [false, true] where opens(position, final) {
                return AttacheError(
                    .sealedSegmentMisplaced, stage: .seal,
                    "segment \(counter) is segment \(position)\(final ? " (the final one)" : "") of this file: segments were reordered, duplicated or removed")
            }
        }
        return AttacheError(
            .authenticationFailed, stage: .seal,
            "segment \(counter) failed authentication: it was modified or does not come from this file")
    }
}
