import Foundation

/// Bounds-checked integer reads over a byte array.
///
/// Every parser in Detection reads hostile input, so no read may trap: each accessor returns nil
/// instead of indexing out of range, and offsets are compared with subtraction so that a huge
/// offset taken from the file cannot overflow.
extension Array where Element == UInt8 {
    @inline(__always) func has(_ count: Int, at offset: Int) -> Bool {
        offset >= 0 && count >= 0 && offset <= self.count &- count
    }

    @inline(__always) func u8(_ offset: Int) -> Int? {
        has(1, at: offset) ? Int(self[offset]) : nil
    }

    func be16(_ offset: Int) -> Int? {
        guard has(2, at: offset) else { return nil }
        return Int(self[offset]) << 8 | Int(self[offset + 1])
    }

    func le16(_ offset: Int) -> Int? {
        guard has(2, at: offset) else { return nil }
        return Int(self[offset + 1]) << 8 | Int(self[offset])
    }

    func be24(_ offset: Int) -> Int? {
        guard has(3, at: offset) else { return nil }
        return Int(self[offset]) << 16 | Int(self[offset + 1]) << 8 | Int(self[offset + 2])
    }

    func le24(_ offset: Int) -> Int? {
        guard has(3, at: offset) else { return nil }
        return Int(self[offset + 2]) << 16 | Int(self[offset + 1]) << 8 | Int(self[offset])
    }

    func be32(_ offset: Int) -> Int? {
        guard has(4, at: offset) else { return nil }
        var value = 0
        for index in offset..<offset + 4 { value = value << 8 | Int(self[index]) }
        return value
    }

    func le32(_ offset: Int) -> Int? {
        guard has(4, at: offset) else { return nil }
        var value = 0
        for index in (offset..<offset + 4).reversed() { value = value << 8 | Int(self[index]) }
        return value
    }

    func be64(_ offset: Int) -> UInt64? {
        guard has(8, at: offset) else { return nil }
        var value: UInt64 = 0
        for index in offset..<offset + 8 { value = value << 8 | UInt64(self[index]) }
        return value
    }

    func le64(_ offset: Int) -> UInt64? {
        guard has(8, at: offset) else { return nil }
        var value: UInt64 = 0
        for index in (offset..<offset + 8).reversed() { value = value << 8 | UInt64(self[index]) }
        return value
    }

    /// Whether the bytes at `offset` equal the ASCII text `text`.
    func matches(_ text: StaticString, at offset: Int = 0) -> Bool {
        let length = text.utf8CodeUnitCount
        guard has(length, at: offset) else { return false }
        let pointer = text.utf8Start
        for index in 0..<length where self[offset + index] != pointer[index] { return false }
        return true
    }

    /// Whether the bytes at `offset` equal `bytes`.
    func matches(bytes: [UInt8], at offset: Int = 0) -> Bool {
        guard has(bytes.count, at: offset) else { return false }
        for index in 0..<bytes.count where self[offset + index] != bytes[index] { return false }
        return true
    }

    /// The four bytes at `offset` as text, for box and chunk types.
    func fourCC(_ offset: Int) -> String? {
        guard has(4, at: offset) else { return nil }
        return String(decoding: self[offset..<offset + 4], as: UTF8.self)
    }

    /// The first index of `needle` in `range`, or nil.
    func firstIndex(of needle: StaticString, in range: Range<Int>) -> Int? {
        let length = needle.utf8CodeUnitCount
        guard length > 0 else { return nil }
        let lower = Swift.max(0, range.lowerBound)
        let upper = Swift.min(count, range.upperBound)
        guard upper - lower >= length else { return nil }
        return withUnsafeBufferPointer { buffer -> Int? in
            let base = buffer.baseAddress!
            let first = Int32(needle.utf8Start[0])
            var start = lower
            // memchr finds candidates for the first byte far faster than a Swift loop.
            while start <= upper - length,
                let hit = memchr(base + start, first, upper - length + 1 - start)
            {
                let index = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                if memcmp(base + index, needle.utf8Start, length) == 0 { return index }
                start = index + 1
            }
            return nil
        }
    }
}

/// The bytes a detection may look at: the head of the content, plus bounded reads further in when
/// a container needs them (a zip's central directory, an MP4's `moov`, an Ogg stream's last page).
///
/// A source over a file reads with `pread(2)` and stops after `budget` extra bytes, so no hostile
/// length field can make detection read a whole file. A source over a prefix has nothing beyond it.
final class SniffSource {
    /// The first bytes (up to ``MIMEDetector/headSize``).
    let head: [UInt8]
    /// The content's total length when known; nil when only a prefix of unknown length was given.
    let size: Int64?
    private let descriptor: Int32
    private var budget: Int

    init(head: [UInt8], size: Int64?, descriptor: Int32 = -1, budget: Int = 8 << 20) {
        self.head = head
        self.size = size
        self.descriptor = descriptor
        self.budget = budget
    }

    /// How far the content is known to extend.
    var length: Int64 { size ?? Int64(head.count) }

    /// Whether `head` is the whole content.
    var headIsWhole: Bool { size.map { Int64(head.count) >= $0 } ?? false }

    /// The big-endian 32-bit value at `offset`, read in place when it lies in the head.
    func be32(at offset: Int64) -> Int? {
        if offset >= 0, offset <= Int64(head.count) - 4 { return head.be32(Int(offset)) }
        return bytes(at: offset, count: 4).be32(0)
    }

    /// Up to `count` bytes at `offset`; fewer at the end of the content, or when the read budget is
    /// spent, or when the bytes lie beyond a prefix. Never more than 4 MiB per call.
    func bytes(at offset: Int64, count requested: Int) -> [UInt8] {
        guard offset >= 0, requested > 0, offset < length else { return [] }
        let count = Int(min(Int64(min(requested, 4 << 20)), length - offset))
        if offset <= Int64(head.count) - Int64(count) {
            let start = Int(offset)
            return Array(head[start..<start + count])
        }
        guard descriptor >= 0, budget > 0 else {
            // Only the part of the request that lies inside the head is available.
            guard offset < Int64(head.count) else { return [] }
            return Array(head[Int(offset)...])
        }
        let want = min(count, budget)
        var buffer = [UInt8](repeating: 0, count: want)
        var filled = 0
        while filled < want {
            let n = buffer.withUnsafeMutableBytes { raw in
                pread(descriptor, raw.baseAddress! + filled, want - filled, off_t(offset) + off_t(filled))
            }
            if n > 0 {
                filled += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        budget -= filled
        if filled < want { buffer.removeSubrange(filled...) }
        return buffer
    }
}

/// Reads a source front to back in buffered chunks, for formats that must be walked block by block
/// (GIF, AMR, ADTS). Stops cleanly at the end of the content or of the read budget.
struct ByteCursor {
    let source: SniffSource
    private(set) var offset: Int64
    private var buffer: [UInt8] = []
    private var bufferStart: Int64 = 0

    init(_ source: SniffSource, at offset: Int64) {
        self.source = source
        self.offset = offset
    }

    private mutating func fill(_ count: Int) -> Bool {
        let bufferEnd = bufferStart + Int64(buffer.count)
        if offset >= bufferStart && offset + Int64(count) <= bufferEnd { return true }
        buffer = source.bytes(at: offset, count: max(count, 64 << 10))
        bufferStart = offset
        return buffer.count >= count
    }

    /// The next byte, or nil at the end.
    mutating func byte() -> UInt8? {
        guard fill(1) else { return nil }
        let value = buffer[Int(offset - bufferStart)]
        offset += 1
        return value
    }

    /// The next `count` bytes, or nil when fewer remain.
    mutating func read(_ count: Int) -> [UInt8]? {
        guard count >= 0, fill(count) else { return nil }
        let start = Int(offset - bufferStart)
        offset += Int64(count)
        return Array(buffer[start..<start + count])
    }

    /// The next `count` bytes without consuming them.
    mutating func peek(_ count: Int) -> [UInt8]? {
        guard count >= 0, fill(count) else { return nil }
        let start = Int(offset - bufferStart)
        return Array(buffer[start..<start + count])
    }

    /// Skips `count` bytes; returns false when that passes the end of the content.
    mutating func skip(_ count: Int64) -> Bool {
        guard count >= 0, count <= source.length - offset else { return false }
        offset += count
        return true
    }
}
