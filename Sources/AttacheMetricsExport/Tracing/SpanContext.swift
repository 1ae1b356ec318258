import AttacheCore
package import Tracing

/// A 16-byte W3C trace id, as two big-endian halves.
package struct TraceID: Sendable, Hashable {
    /// The first eight bytes.
    package var high: UInt64
    /// The last eight bytes: the random part a ratio sampler reads.
    package var low: UInt64

    /// Creates the id whose bytes are `high` then `low`, each big-endian.
    package init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// True for the all-zero id, which W3C Trace Context calls invalid.
    package var isZero: Bool { high == 0 && low == 0 }
}

/// An 8-byte W3C span id (parent id), big-endian.
package struct SpanID: Sendable, Hashable {
    /// The id as a number.
    package var value: UInt64

    /// Creates the id whose bytes are `value`, big-endian.
    package init(_ value: UInt64) { self.value = value }
}

/// What identifies one span to its children and to other processes: the W3C Trace Context of a span.
///
/// Carried in an `InstrumentationContext` (``Tracing/InstrumentationContext/spanContext``), written as
/// `traceparent` (and `tracestate`, carried as it came) by ``OTLPTracer``'s `inject`, and read back by its
/// `extract`. A span a sampler left out still has one, with ``isSampled`` false, so that what it calls
/// follows the same decision.
package struct SpanContext: Sendable, Hashable {
    /// The trace.
    package var traceID: TraceID
    /// The span.
    package var spanID: SpanID
    /// The `sampled` flag (bit 0 of the trace flags): whether the span is recorded.
    package var isSampled: Bool
    /// The `tracestate` header that came with the trace, passed on unchanged; nil when none came.
    package var traceState: String?
    /// True for a context read from another process (`extract`), false for a span of this one.
    package var isRemote: Bool

    /// Creates a context.
    package init(traceID: TraceID, spanID: SpanID, isSampled: Bool, traceState: String? = nil, isRemote: Bool = false) {
        self.traceID = traceID
        self.spanID = spanID
        self.isSampled = isSampled
        self.traceState = traceState
        self.isRemote = isRemote
    }

    /// The trace flags byte: 01 when sampled, 00 when not.
    package var traceFlags: UInt8 { isSampled ? 1 : 0 }

    /// The `traceparent` value: `00-TRACEID-SPANID-FLAGS`, lower-case hex.
    package var traceparent: String {
        String(unsafeUninitializedCapacity: 55) { buffer in
            var index = 0
            func put(_ byte: UInt8) {
                buffer[index] = byte
                index += 1
            }
            func putHex(_ value: UInt64, digits: Int) {
                var shift = (digits - 1) * 4
                while shift >= 0 {
                    put(Self.hexDigits[Int((value >> UInt64(shift)) & 0xF)])
                    shift -= 4
                }
            }
            put(UInt8(ascii: "0"))
            put(UInt8(ascii: "0"))
            put(UInt8(ascii: "-"))
            putHex(traceID.high, digits: 16)
            putHex(traceID.low, digits: 16)
            put(UInt8(ascii: "-"))
            putHex(spanID.value, digits: 16)
            put(UInt8(ascii: "-"))
            putHex(UInt64(traceFlags), digits: 2)
            return index
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Reads a `traceparent` value as W3C Trace Context (level 1) says a receiver must: version 00 is
    /// exactly `00-` 32 hex digits `-` 16 hex digits `-` 2 hex digits, lower case; a later version may add
    /// fields after a further `-`; version ff, an all-zero trace or span id, or anything else is no
    /// context (nil), and the receiver starts a trace of its own.
    package init?(traceparent: String, traceState: String?) {
        var text = traceparent
        let parsed: (TraceID, SpanID, UInt8)? = text.withUTF8 { bytes in
            guard bytes.count >= 55,
                let version = Self.hexValue(bytes, 0, 2), version != 0xFF,
                bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-"),
                let high = Self.hexValue(bytes, 3, 16), let low = Self.hexValue(bytes, 19, 16),
                let span = Self.hexValue(bytes, 36, 16), let flags = Self.hexValue(bytes, 53, 2)
            else { return nil }
            // Version 00 has exactly these four fields; a later one may carry more after a dash.
            if version == 0 ? bytes.count != 55 : (bytes.count > 55 && bytes[55] != UInt8(ascii: "-")) { return nil }
            return (TraceID(high: high, low: low), SpanID(span), UInt8(flags))
        }
        guard let (traceID, spanID, flags) = parsed, !traceID.isZero, spanID.value != 0 else { return nil }
        let state = traceState?.trimmingBlanks
        self.init(
            traceID: traceID, spanID: spanID, isSampled: flags & 1 == 1,
            traceState: state?.isEmpty == false ? state : nil, isRemote: true)
    }

    /// The number written by `count` lower-case hex digits at `start`; nil if any is not one.
    private static func hexValue(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ count: Int) -> UInt64? {
        var value: UInt64 = 0
        for index in start..<(start + count) {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)
        }
        return value
    }
}

/// The key under which a span's ``SpanContext`` sits in an `InstrumentationContext`.
private enum SpanContextKey: InstrumentationContextKey {
    typealias Value = SpanContext
}

extension InstrumentationContext {
    /// The W3C context of the current span (or of the remote parent that `extract` read); nil outside any.
    package var spanContext: SpanContext? {
        get { self[SpanContextKey.self] }
        set { self[SpanContextKey.self] = newValue }
    }
}
