import Glibc

/// A read-only window on bytes held by an array, sharing the array's storage.
///
/// Detection reads the same 4 KiB head again and again (a marker, a box header, a chunk): a window
/// on it costs a retain, where copying the bytes out would cost an allocation per read. Indices are
/// relative to the window (0 is its first byte), unlike an `ArraySlice`.
///
/// Every parser in Detection reads hostile input, so no read may trap: each accessor returns nil
/// instead of indexing out of range, and offsets are compared with subtraction so that a huge
/// offset taken from the file cannot overflow.
struct ByteSpan: RandomAccessCollection {
    private let storage: [UInt8]
    private let lower: Int
    /// The number of bytes in the window.
    let count: Int

    /// A window on all of `bytes`.
    init(_ bytes: [UInt8]) {
        storage = bytes
        lower = 0
        count = bytes.count
    }

    /// A window on the first `count` bytes of `bytes` (clamped to the array).
    init(_ bytes: [UInt8], count: Int) {
        self.init(bytes, 0, Swift.min(Swift.max(0, count), bytes.count))
    }

    private init(_ bytes: [UInt8], _ lower: Int, _ count: Int) {
        storage = bytes
        self.lower = lower
        self.count = count
    }

    static let empty = ByteSpan([])

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    subscript(index: Int) -> UInt8 {
        precondition(UInt(bitPattern: index) < UInt(bitPattern: count), "ByteSpan index out of range")
        return load(index)
    }

    /// The byte at `index`, which the caller has checked with ``has(_:at:)``.
    @inline(__always) private func load(_ index: Int) -> UInt8 {
        storage.withUnsafeBufferPointer { $0[lower &+ index] }
    }

    /// The window on `range` of this window (relative indices, clamped to it): no bytes are copied.
    func span(_ range: Range<Int>) -> ByteSpan {
        let from = Swift.min(Swift.max(0, range.lowerBound), count)
        let to = Swift.min(Swift.max(from, range.upperBound), count)
        return ByteSpan(storage, lower + from, to - from)
    }

    /// The window from `offset` to the end (empty when `offset` is past it).
    func span(from offset: Int) -> ByteSpan { span(offset..<count) }

    /// Calls `body` with the window's bytes.
    @inline(__always) func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        storage.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[lower..<lower + count])) }
    }

    @inline(__always) func has(_ count: Int, at offset: Int) -> Bool {
        offset >= 0 && count >= 0 && offset <= self.count &- count
    }

    @inline(__always) func u8(_ offset: Int) -> Int? {
        has(1, at: offset) ? Int(load(offset)) : nil
    }

    @inline(__always) func be16(_ offset: Int) -> Int? {
        guard has(2, at: offset) else { return nil }
        return Int(load(offset)) << 8 | Int(load(offset + 1))
    }

    @inline(__always) func le16(_ offset: Int) -> Int? {
        guard has(2, at: offset) else { return nil }
        return Int(load(offset + 1)) << 8 | Int(load(offset))
    }

    func be24(_ offset: Int) -> Int? {
        guard has(3, at: offset) else { return nil }
        return Int(load(offset)) << 16 | Int(load(offset + 1)) << 8 | Int(load(offset + 2))
    }

    func le24(_ offset: Int) -> Int? {
        guard has(3, at: offset) else { return nil }
        return Int(load(offset + 2)) << 16 | Int(load(offset + 1)) << 8 | Int(load(offset))
    }

    /// The raw 32-bit word at `offset` as stored, which the caller has bounds-checked.
    @inline(__always) private func word32(_ offset: Int) -> UInt32 {
        storage.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: lower &+ offset, as: UInt32.self) }
    }

    @inline(__always) private func word64(_ offset: Int) -> UInt64 {
        storage.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: lower &+ offset, as: UInt64.self) }
    }

    @inline(__always) func be32(_ offset: Int) -> Int? {
        guard has(4, at: offset) else { return nil }
        return Int(UInt32(bigEndian: word32(offset)))
    }

    @inline(__always) func le32(_ offset: Int) -> Int? {
        guard has(4, at: offset) else { return nil }
        return Int(UInt32(littleEndian: word32(offset)))
    }

    func be64(_ offset: Int) -> UInt64? {
        guard has(8, at: offset) else { return nil }
        return UInt64(bigEndian: word64(offset))
    }

    func le64(_ offset: Int) -> UInt64? {
        guard has(8, at: offset) else { return nil }
        return UInt64(littleEndian: word64(offset))
    }

    /// Whether the bytes at `offset` equal the ASCII text `text`.
    @inline(__always) func matches(_ text: StaticString, at offset: Int = 0) -> Bool {
        let length = text.utf8CodeUnitCount
        guard has(length, at: offset) else { return false }
        let pointer = text.utf8Start
        for index in 0..<length where load(offset + index) != pointer[index] { return false }
        return true
    }

    /// Whether the bytes at `offset` equal `bytes`.
    func matches(bytes: some Collection<UInt8>, at offset: Int = 0) -> Bool {
        guard has(bytes.count, at: offset) else { return false }
        var index = offset
        for byte in bytes {
            if load(index) != byte { return false }
            index += 1
        }
        return true
    }

    /// Whether the four bytes at `offset` are the ASCII code `code` (`"moov"`), without building text.
    @inline(__always) func isFourCC(_ code: StaticString, at offset: Int) -> Bool {
        code.utf8CodeUnitCount == 4 && be32(offset) == Int(fourCharCode(code))
    }

    /// The four bytes at `offset` as text, for box and chunk types (small ASCII text: no allocation).
    func fourCC(_ offset: Int) -> String? {
        guard has(4, at: offset) else { return nil }
        return withUnsafeBytes { String(decoding: UnsafeRawBufferPointer(rebasing: $0[offset..<offset + 4]), as: UTF8.self) }
    }

    /// The first index of `needle` in `range`, or nil.
    func firstIndex(of needle: StaticString, in range: Range<Int>) -> Int? {
        let length = needle.utf8CodeUnitCount
        guard length > 0 else { return nil }
        let lower = Swift.max(0, range.lowerBound)
        let upper = Swift.min(count, range.upperBound)
        guard upper - lower >= length else { return nil }
        return withUnsafeBytes { buffer -> Int? in
            let base = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
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

    /// The first index of `byte` at or after `offset`, or nil.
    func firstIndex(of byte: UInt8, from offset: Int) -> Int? {
        guard offset >= 0, offset < count else { return nil }
        return withUnsafeBytes { buffer -> Int? in
            let base = buffer.baseAddress!
            guard let hit = memchr(base + offset, Int32(byte), count - offset) else { return nil }
            return base.distance(to: UnsafeRawPointer(hit))
        }
    }

    /// A copy of the bytes, for the rare caller that keeps them.
    var array: [UInt8] { lower == 0 && count == storage.count ? storage : Array(self) }
}

/// A four-character code as the big-endian integer it is stored as.
@inline(__always) func fourCharCode(_ code: StaticString) -> UInt32 {
    let p = code.utf8Start
    return UInt32(p[0]) << 24 | UInt32(p[1]) << 16 | UInt32(p[2]) << 8 | UInt32(p[3])
}

/// The bytes a detection may look at: the head of the content, plus bounded reads further in when
/// a container needs them (a zip's central directory, an MP4's `moov`, an Ogg stream's last page).
///
/// A source over a file reads with `pread(2)` and stops after `budget` extra bytes, so no hostile
/// length field can make detection read a whole file. A source over a prefix has nothing beyond it.
final class SniffSource {
    /// The first bytes (up to ``MIMEDetector/headSize``).
    let head: ByteSpan
    /// The content's total length when known; nil when only a prefix of unknown length was given.
    let size: Int64?
    private let descriptor: Int32
    private var budget: Int
    /// The last bytes read from the file beyond the head, and where they start: box and element
    /// walks ask for a few bytes at a time, mostly close together, so each read fetches at least
    /// ``windowSize`` bytes and the next requests are served from them.
    private var window = ByteSpan.empty
    private var windowStart: Int64 = 0
    private static let windowSize = 16 << 10
    /// Bytes that may still be read ahead of requests (1 MiB per detection).
    private var spare = 1 << 20

    convenience init(head: [UInt8], size: Int64?, descriptor: Int32 = -1, budget: Int = 8 << 20) {
        self.init(head: ByteSpan(head), size: size, descriptor: descriptor, budget: budget)
    }

    init(head: ByteSpan, size: Int64?, descriptor: Int32 = -1, budget: Int = 8 << 20) {
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
    /// spent, or when the bytes lie beyond a prefix. Never more than 4 MiB per call. Bytes within
    /// the head are a window on it, not a copy; only bytes read from the file are allocated.
    func bytes(at offset: Int64, count requested: Int) -> ByteSpan {
        guard offset >= 0, requested > 0, offset < length else { return .empty }
        let count = Int(min(Int64(min(requested, 4 << 20)), length - offset))
        if offset <= Int64(head.count) - Int64(count) {
            let start = Int(offset)
            return head.span(start..<start + count)
        }
        if offset >= windowStart, offset - windowStart <= Int64(window.count) - Int64(count) {
            let start = Int(offset - windowStart)
            return window.span(start..<start + count)
        }
        guard descriptor >= 0, budget > 0 else {
            // Only the part of the request that lies inside the head is available.
            guard offset < Int64(head.count) else { return .empty }
            return head.span(from: Int(offset))
        }
        // The budget is charged with what was asked for; the read-ahead has its own, smaller allowance.
        let asked = min(count, budget)
        let ahead = min(max(0, Self.windowSize - asked), spare)
        let want = Int(min(Int64(asked + ahead), length - offset))
        var filled = 0
        let buffer = [UInt8](unsafeUninitializedCapacity: want) { raw, initialized in
            while filled < want {
                let rest = UnsafeMutableRawBufferPointer(start: raw.baseAddress! + filled, count: want - filled)
                let n = FileDescriptor.read(descriptor, into: rest, at: offset + Int64(filled))
                guard n > 0 else { break }
                filled += n
            }
            initialized = filled
        }
        budget -= min(filled, asked)
        spare -= max(0, filled - asked)
        window = ByteSpan(buffer)
        windowStart = offset
        return window.span(0..<min(asked, filled))
    }
}

/// Reads a source front to back in buffered chunks, for formats that must be walked block by block
/// (GIF, AMR, ADTS). Stops cleanly at the end of the content or of the read budget.
struct ByteCursor {
    let source: SniffSource
    private(set) var offset: Int64
    private var buffer = ByteSpan.empty
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
    mutating func read(_ count: Int) -> ByteSpan? {
        guard count >= 0, fill(count) else { return nil }
        let start = Int(offset - bufferStart)
        offset += Int64(count)
        return buffer.span(start..<start + count)
    }

    /// The next `count` bytes without consuming them.
    mutating func peek(_ count: Int) -> ByteSpan? {
        guard count >= 0, fill(count) else { return nil }
        let start = Int(offset - bufferStart)
        return buffer.span(start..<start + count)
    }

    /// Skips `count` bytes; returns false when that passes the end of the content.
    mutating func skip(_ count: Int64) -> Bool {
        guard count >= 0, count <= source.length - offset else { return false }
        offset += count
        return true
    }
}
