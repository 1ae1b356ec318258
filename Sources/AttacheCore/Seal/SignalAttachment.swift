import Glibc

/// Signal's attachment format: IV ‖ AES-256-CBC/PKCS#7(plaintext ‖ zero padding) ‖ HMAC-SHA256.
///
/// The 64-byte key is the AES key followed by the HMAC key. The MAC covers IV ‖ ciphertext. The
/// plaintext is padded with zeros to Signal's bucket size so that the length leaks only its bucket; the
/// real length travels beside the attachment (in the receipt), and the digest is SHA-256 of the blob.
package enum SignalAttachment {
    static let keyCount = 64
    static let ivCount = 16
    static let macCount = 32
    static let chunkCount = 1 << 16

    /// Signal's bucket: `max(541, floor(1.05^ceil(log_1.05(n))))`, never less than `n` itself
    /// (Signal's padding stream adds nothing when rounding makes the bucket smaller).
    package static func paddedCount(forPlaintextCount n: Int64) -> Int64 {
        guard n > 0 else { return 541 }
        let bucket = Int64(floor(pow(1.05, ceil(log(Double(n)) / log(1.05)))))
        return max(541, bucket, n)
    }

    static func sealedCount(forPlaintextCount n: Int64) -> Int64 {
        let padded = paddedCount(forPlaintextCount: n)
        return Int64(ivCount) + (padded / 16 + 1) * 16 + Int64(macCount)
    }

    static func checkKey(_ key: AttachmentKey) throws {
        guard !key.isPassphrase, key.bytes.count == keyCount else {
            throw AttacheError(
                .invalidKey, stage: .seal,
                "signal needs a 64-byte key (AES key ‖ HMAC key), got \(key.isPassphrase ? "a passphrase" : "\(key.bytes.count) bytes")")
        }
    }
}

/// The payload's digest, set by whichever reader first reaches the end; shared by all readers.
final class DigestBox: Sendable {
    private let value = LockedValue<String?>(nil)
    var digest: String? { value.withLock { $0 } }
    func set(_ digest: String) { value.withLock { $0 = digest } }
}

final class SignalSealProducer: ChunkProducer {
    private let key: AttachmentKey
    private let iv: [UInt8]
    private let plaintext: any ByteReader
    private let digestBox: DigestBox
    private let cipher: CipherContext
    private let mac: HMACSHA256
    private let sha: SHA256Digest
    private let input: UnsafeMutableRawBufferPointer
    private var plaintextRemaining: Int64
    private var paddingRemaining: Int64
    private var started = false
    private var endChecked = false
    private var done = false

    init(key: AttachmentKey, iv: [UInt8], plaintext: any ByteReader, plaintextCount: Int64, digestBox: DigestBox) throws {
        try SignalAttachment.checkKey(key)
        self.key = key
        self.iv = iv
        self.plaintext = plaintext
        self.digestBox = digestBox
        plaintextRemaining = plaintextCount
        paddingRemaining = SignalAttachment.paddedCount(forPlaintextCount: plaintextCount) - plaintextCount
        cipher = try CipherContext()
        mac = try key.bytes.withUnsafeBytes { try HMACSHA256(key: UnsafeRawBufferPointer(rebasing: $0[32...])) }
        sha = try SHA256Digest()
        input = .allocate(byteCount: SignalAttachment.chunkCount, alignment: 16)
        try key.bytes.withUnsafeBytes { keyBytes in
            try iv.withUnsafeBytes { ivBytes in
                try cipher.start(
                    .aes256CBC, encrypt: true, key: UnsafeRawBufferPointer(rebasing: keyBytes[..<32]), iv: ivBytes)
            }
        }
    }

    deinit { input.deallocate() }

    var maximumChunkSize: Int {
        SignalAttachment.ivCount + SignalAttachment.chunkCount + 32 + SignalAttachment.macCount
    }

    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !done else { return 0 }
        let base = buffer.baseAddress!
        var o = 0
        if !started {
            started = true
            iv.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            o = iv.count
        }
        let plainCount = Int(min(plaintextRemaining, Int64(input.count)))
        if plainCount > 0 {
            try plaintext.readExactly(into: UnsafeMutableRawBufferPointer(rebasing: input[..<plainCount]))
            plaintextRemaining -= Int64(plainCount)
        }
        if plaintextRemaining == 0, !endChecked {
            try plaintext.expectEnd()
            endChecked = true
        }
        let padCount = Int(min(paddingRemaining, Int64(input.count - plainCount)))
        if padCount > 0 {
            UnsafeMutableRawBufferPointer(rebasing: input[plainCount..<(plainCount + padCount)])
                .initializeMemory(as: UInt8.self, repeating: 0)
            paddingRemaining -= Int64(padCount)
        }
        let count = plainCount + padCount
        if count > 0 { o += try cipher.update(input.baseAddress!, count: count, output: base + o) }
        let finished = plaintextRemaining == 0 && paddingRemaining == 0
        if finished {
            let final = cipher.finish(output: base + o)
            guard final.ok else { throw AttacheError.openSSL("EVP_CipherFinal_ex") }
            o += final.written
        }
        try mac.update(UnsafeRawBufferPointer(start: base, count: o))
        if finished {
            let tag = try mac.finish()
            tag.withUnsafeBytes { (base + o).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            o += tag.count
            done = true
        }
        try sha.update(UnsafeRawBufferPointer(start: base, count: o))
        if done { digestBox.set(hex(try sha.finish())) }
        return o
    }
}

/// Opens a Signal attachment in two passes over the (re-openable) sealed data: the MAC is verified
/// over the whole blob first, so no plaintext is released from data that fails it.
final class SignalOpenProducer: ChunkProducer {
    private let key: AttachmentKey
    private let openSealed: () throws -> any ByteReader
    private let plaintextLimit: Int64?
    private let cipher: CipherContext
    private let input: UnsafeMutableRawBufferPointer
    private let output: UnsafeMutableRawBufferPointer
    private var reader: (any ByteReader)?
    private var bodyRemaining: Int64 = 0
    private var emitted: Int64 = 0
    private var done = false

    init(key: AttachmentKey, plaintextCount: Int64?, openSealed: @escaping () throws -> any ByteReader) throws {
        try SignalAttachment.checkKey(key)
        self.key = key
        self.openSealed = openSealed
        plaintextLimit = plaintextCount
        cipher = try CipherContext()
        input = .allocate(byteCount: SignalAttachment.chunkCount, alignment: 16)
        output = .allocate(byteCount: SignalAttachment.chunkCount + 32, alignment: 16)
    }

    deinit {
        input.deallocate()
        output.deallocate()
    }

    var maximumChunkSize: Int { SignalAttachment.chunkCount + 32 }

    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if reader == nil { try verifyAndStart() }
        while !done {
            let count = Int(min(bodyRemaining, Int64(input.count)))
            var n = 0
            if count > 0 {
                try reader!.readExactlySealed(into: UnsafeMutableRawBufferPointer(rebasing: input[..<count]))
                bodyRemaining -= Int64(count)
                n = try cipher.update(input.baseAddress!, count: count, output: output.baseAddress!)
            }
            if bodyRemaining == 0 {
                let final = cipher.finish(output: output.baseAddress! + n)
                guard final.ok else {
                    throw AttacheError(.sealedPaddingInvalid, stage: .seal, "the PKCS#7 padding is malformed")
                }
                n += final.written
                done = true
            }
            let keep = plaintextLimit.map { Int(max(0, min(Int64(n), $0 - emitted))) } ?? n
            // Bytes past the real length are Signal's bucket padding and must be zeros.
            for index in keep..<n where output[index] != 0 {
                throw AttacheError(.sealedPaddingInvalid, stage: .seal, "the bucket padding is not all zeros")
            }
            emitted += Int64(keep)
            if done, let plaintextLimit, emitted < plaintextLimit {
                throw AttacheError(
                    .sealedDataTruncated, stage: .seal, "the attachment is shorter than its declared length")
            }
            if keep > 0 {
                buffer.baseAddress!.copyMemory(from: output.baseAddress!, byteCount: keep)
                return keep
            }
        }
        return 0
    }

    private func verifyAndStart() throws {
        let first = try openSealed()
        let mac = try key.bytes.withUnsafeBytes { try HMACSHA256(key: UnsafeRawBufferPointer(rebasing: $0[32...])) }
        // Keep the last 32 bytes seen aside: they are the MAC once the data ends.
        var tail = [UInt8]()
        var total: Int64 = 0
        while true {
            let n = try first.read(into: input)
            if n == 0 { break }
            total += Int64(n)
            tail.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[..<n]))
            if tail.count > SignalAttachment.macCount {
                let spill = tail.count - SignalAttachment.macCount
                try tail.withUnsafeBytes { try mac.update(UnsafeRawBufferPointer(rebasing: $0[..<spill])) }
                tail.removeFirst(spill)
            }
        }
        let body = total - Int64(SignalAttachment.ivCount + SignalAttachment.macCount)
        guard body >= 16 else {
            throw AttacheError(.sealedDataTruncated, stage: .seal, "the attachment is too short to be a Signal attachment")
        }
        let expected = try mac.finish()
        let matches = expected.withUnsafeBytes { e in tail.withUnsafeBytes { constantTimeEqual(e, $0) } }
        guard matches else {
            throw AttacheError(
                .authenticationFailed, stage: .seal,
                "the MAC does not match: wrong key, or the data was modified or truncated")
        }
        guard body % 16 == 0 else {
            throw AttacheError(.sealedDataTruncated, stage: .seal, "the ciphertext is not a whole number of blocks")
        }
        let second = try openSealed()
        var iv = [UInt8](repeating: 0, count: SignalAttachment.ivCount)
        try iv.withUnsafeMutableBytes { try second.readExactlySealed(into: $0) }
        try key.bytes.withUnsafeBytes { keyBytes in
            try iv.withUnsafeBytes {
                try cipher.start(.aes256CBC, encrypt: false, key: UnsafeRawBufferPointer(rebasing: keyBytes[..<32]), iv: $0)
            }
        }
        bodyRemaining = body
        reader = second
    }
}

extension ByteReader {
    /// Reads exactly `buffer.count` bytes of sealed data, which was already seen whole once.
    func readExactlySealed(into buffer: UnsafeMutableRawBufferPointer) throws {
        guard try readFully(into: buffer) == buffer.count else {
            throw AttacheError(.fileChanged, stage: .seal, "the sealed data changed between passes", isRetryable: true)
        }
    }
}

/// The bytes of lowercase or uppercase hex text; nil for anything else.
package func unhex(_ text: String) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { return nil }
    func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        case 0x41...0x46: c - 0x41 + 10
        default: nil
        }
    }
    var out = [UInt8]()
    out.reserveCapacity(digits.count / 2)
    var index = 0
    while index < digits.count {
        guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
        out.append(high << 4 | low)
        index += 2
    }
    return out
}

package func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}
