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
    /// The bytes written so far.
    package private(set) var bytes: [UInt8] = []

    /// Creates a writer with room for `capacity` bytes.
    package init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    /// The wire types this writer uses.
    enum WireType: UInt8 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case fixed32 = 5
    }

    /// Appends `value` as a base-128 varint, low groups first.
    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Appends `raw` as it is (bytes whose length was written before them).
    mutating func append(_ raw: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: raw)
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
        bytes.append(value ? 1 : 0)
    }

    /// A `fixed64` field (little-endian): OTLP's nanosecond times.
    package mutating func fixed64(_ field: Int, _ value: UInt64) {
        tag(field, .fixed64)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `double` field (IEEE 754, little-endian).
    package mutating func double(_ field: Int, _ value: Double) {
        fixed64(field, value.bitPattern)
    }

    /// A `fixed32` field (little-endian): OTLP's span flags.
    package mutating func fixed32(_ field: Int, _ value: UInt32) {
        tag(field, .fixed32)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `string` field: its UTF-8 bytes after their length.
    package mutating func string(_ field: Int, _ value: String) {
        tag(field, .lengthDelimited)
        var value = value
        value.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// A `bytes` field holding `value` as eight big-endian bytes (a span id).
    package mutating func bigEndianBytes(_ field: Int, _ value: UInt64) {
        tag(field, .lengthDelimited)
        bytes.append(8)
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `bytes` field holding `high` then `low`, big-endian: sixteen bytes (a trace id).
    package mutating func bigEndianBytes(_ field: Int, _ high: UInt64, _ low: UInt64) {
        tag(field, .lengthDelimited)
        bytes.append(16)
        withUnsafeBytes(of: high.bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: low.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// A nested message field: what `body` writes, after its length.
    package mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        tag(field, .lengthDelimited)
        let lengthAt = bytes.count
        bytes.append(0)
        body(&self)
        let length = bytes.count - lengthAt - 1
        if length < 0x80 {
            bytes[lengthAt] = UInt8(length)
            return
        }
        var prefix: [UInt8] = []
        var value = UInt64(length)
        while value >= 0x80 {
            prefix.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        prefix.append(UInt8(value))
        bytes[lengthAt] = prefix[0]
        bytes.insert(contentsOf: prefix[1...], at: lengthAt + 1)
    }
}
