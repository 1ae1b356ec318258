/// Protobuf's binary wire format, written front to back into one buffer: just what the OTLP trace
/// encoder needs (varints, 64- and 32-bit fixed fields, length-delimited bytes and nested messages).
///
/// A nested message is written in place after a one-byte length; when its length needs more bytes than
/// that, the message is moved up to make room (rare: only messages of 128 bytes and more, and then by
/// one to four bytes).
///
/// ```swift
/// var writer = ProtobufWriter()
/// writer.message(1) { $0.string(1, "attache") }   // 0a 09 0a 07 "attache"
/// ```
package struct ProtobufWriter {
    /// One heap block that doubles when full. Written a byte at a time through a pointer: an array's
    /// `append` checks its uniqueness and capacity on every byte, about a third of the encoder's work.
    /// A class, so that the writer's storage is one reference; a writer is passed `inout`, never copied
    /// while it is written (copies would share the buffer).
    private final class Buffer {
        var base: UnsafeMutablePointer<UInt8>
        var count = 0
        var capacity: Int

        init(capacity: Int) {
            self.capacity = max(capacity, 64)
            base = .allocate(capacity: self.capacity)
        }

        deinit { base.deallocate() }

        /// Makes room for `extra` more bytes.
        @inline(__always)
        func reserve(_ extra: Int) {
            if count + extra > capacity { grow(to: count + extra) }
        }

        private func grow(to needed: Int) {
            var newCapacity = capacity * 2
            while newCapacity < needed { newCapacity *= 2 }
            let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
            newBase.initialize(from: base, count: count)
            base.deallocate()
            base = newBase
            capacity = newCapacity
        }

        @inline(__always)
        func append(_ byte: UInt8) {
            reserve(1)
            base[count] = byte
            count += 1
        }

        func append(_ raw: UnsafeRawBufferPointer) {
            guard let source = raw.baseAddress, !raw.isEmpty else { return }
            reserve(raw.count)
            (base + count).initialize(from: source.assumingMemoryBound(to: UInt8.self), count: raw.count)
            count += raw.count
        }
    }

    private let buffer: Buffer

    /// Creates a writer with room for `capacity` bytes.
    package init(capacity: Int = 0) {
        buffer = Buffer(capacity: capacity)
    }

    /// The bytes written so far.
    package var bytes: [UInt8] { Array(UnsafeBufferPointer(start: buffer.base, count: buffer.count)) }

    /// The wire types this writer uses.
    enum WireType: UInt8 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case fixed32 = 5
    }

    /// Appends `value` as a base-128 varint, low groups first.
    mutating func varint(_ value: UInt64) {
        buffer.reserve(10)
        buffer.count += Self.writeVarint(value, at: buffer.base + buffer.count)
    }

    /// Writes `value` as a varint at `at` (room for ten bytes) and returns how many bytes it took.
    private static func writeVarint(_ value: UInt64, at start: UnsafeMutablePointer<UInt8>) -> Int {
        var value = value
        var at = start
        while value >= 0x80 {
            at.pointee = UInt8(truncatingIfNeeded: value) | 0x80
            at += 1
            value >>= 7
        }
        at.pointee = UInt8(value)
        return at - start + 1
    }

    /// Appends `raw` as it is (bytes whose length was written before them).
    mutating func append(_ raw: UnsafeBufferPointer<UInt8>) {
        buffer.append(UnsafeRawBufferPointer(raw))
    }

    mutating func tag(_ field: Int, _ type: WireType) {
        varint(UInt64(field) << 3 | UInt64(type.rawValue))
    }

    /// An unsigned or enum field as a varint.
    package mutating func uint64(_ field: Int, _ value: UInt64) {
        tag(field, .varint)
        varint(value)
    }

    /// An `int64` field: a negative value is its two's complement, ten bytes.
    package mutating func int64(_ field: Int, _ value: Int64) {
        tag(field, .varint)
        varint(UInt64(bitPattern: value))
    }

    /// A `bool` field.
    package mutating func bool(_ field: Int, _ value: Bool) {
        tag(field, .varint)
        buffer.append(value ? 1 : 0)
    }

    /// A `fixed64` field (little-endian): OTLP's nanosecond times.
    package mutating func fixed64(_ field: Int, _ value: UInt64) {
        tag(field, .fixed64)
        withUnsafeBytes(of: value.littleEndian) { buffer.append($0) }
    }

    /// A `double` field (IEEE 754, little-endian).
    package mutating func double(_ field: Int, _ value: Double) {
        fixed64(field, value.bitPattern)
    }

    /// A `fixed32` field (little-endian): OTLP's span flags.
    package mutating func fixed32(_ field: Int, _ value: UInt32) {
        tag(field, .fixed32)
        withUnsafeBytes(of: value.littleEndian) { buffer.append($0) }
    }

    /// A `string` field: its UTF-8 bytes after their length.
    package mutating func string(_ field: Int, _ value: String) {
        tag(field, .lengthDelimited)
        var value = value
        value.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            buffer.append(UnsafeRawBufferPointer(utf8))
        }
    }

    /// A `bytes` field holding `value` as eight big-endian bytes (a span id).
    package mutating func bigEndianBytes(_ field: Int, _ value: UInt64) {
        tag(field, .lengthDelimited)
        buffer.append(8)
        withUnsafeBytes(of: value.bigEndian) { buffer.append($0) }
    }

    /// A `bytes` field holding `high` then `low`, big-endian: sixteen bytes (a trace id).
    package mutating func bigEndianBytes(_ field: Int, _ high: UInt64, _ low: UInt64) {
        tag(field, .lengthDelimited)
        buffer.append(16)
        withUnsafeBytes(of: high.bigEndian) { buffer.append($0) }
        withUnsafeBytes(of: low.bigEndian) { buffer.append($0) }
    }

    /// A nested message field: what `body` writes, after its length.
    package mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        tag(field, .lengthDelimited)
        let lengthAt = buffer.count
        buffer.append(0)
        body(&self)
        let length = buffer.count - lengthAt - 1
        if length < 0x80 {
            buffer.base[lengthAt] = UInt8(length)
            return
        }
        // The length needs more than its one byte: move the message up to make room.
        let extra = Self.varintSize(UInt64(length)) - 1
        buffer.reserve(extra)
        let message = buffer.base + lengthAt + 1
        UnsafeMutableRawPointer(message + extra).copyMemory(from: message, byteCount: length)  // a memmove
        buffer.count += extra
        _ = Self.writeVarint(UInt64(length), at: buffer.base + lengthAt)
    }

    /// The bytes `varint` writes for `value`.
    static func varintSize(_ value: UInt64) -> Int {
        var value = value, size = 1
        while value >= 0x80 {
            value >>= 7
            size += 1
        }
        return size
    }
}
