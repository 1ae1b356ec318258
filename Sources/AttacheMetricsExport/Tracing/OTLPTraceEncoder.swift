import Attache
import Tracing

/// Writes ended spans as an OTLP `ExportTraceServiceRequest` in protobuf (the body of a POST to
/// `/v1/traces`), by hand: one resource, one instrumentation scope, the spans in the order given.
///
/// Field numbers are those of opentelemetry-proto (`opentelemetry/proto/trace/v1/trace.proto`,
/// `common/v1/common.proto`, `resource/v1/resource.proto`, `collector/trace/v1/trace_service.proto`).
/// Proto3 leaves a field at its default value out, and so does this encoder, except inside `AnyValue`,
/// whose `oneof` must say which value it holds even when that value is `false`, `0` or `""`.
///
/// ```swift
/// let encoder = OTLPTraceEncoder(resource: [("service.name", "attache")], scopeName: "attache", scopeVersion: "1.0")
/// let body = encoder.encode(spans)
/// ```
package struct OTLPTraceEncoder: Sendable {
    /// The resource's attributes (`service.name`, what `OTEL_RESOURCE_ATTRIBUTES` adds).
    package let resource: [(String, String)]
    /// The instrumentation scope every span is reported under.
    package let scopeName: String
    package let scopeVersion: String

    /// Creates an encoder.
    package init(resource: [(String, String)], scopeName: String, scopeVersion: String) {
        self.resource = resource
        self.scopeName = scopeName
        self.scopeVersion = scopeVersion
    }

    /// The request body for `spans`.
    package func encode(_ spans: [FinishedSpan]) -> [UInt8] {
        var writer = ProtobufWriter(capacity: 256 + spans.count * 768)
        // ExportTraceServiceRequest.resource_spans = 1
        writer.message(1) { resourceSpans in
            // ResourceSpans.resource = 1 → Resource.attributes = 1
            resourceSpans.message(1) { resource in
                for (key, value) in self.resource {
                    resource.message(1) { $0.keyValue(key, .string(value)) }
                }
            }
            // ResourceSpans.scope_spans = 2
            resourceSpans.message(2) { scopeSpans in
                // ScopeSpans.scope = 1: InstrumentationScope { name = 1, version = 2 }
                scopeSpans.message(1) { scope in
                    scope.string(1, scopeName)
                    if !scopeVersion.isEmpty { scope.string(2, scopeVersion) }
                }
                // ScopeSpans.spans = 2
                for span in spans {
                    scopeSpans.message(2) { $0.span(span) }
                }
            }
        }
        return writer.bytes
    }
}

extension ProtobufWriter {
    /// The fields of one `Span`.
    mutating func span(_ span: FinishedSpan) {
        let context = span.context
        bigEndianBytes(1, context.traceID.high, context.traceID.low)  // trace_id
        bigEndianBytes(2, context.spanID.value)  // span_id
        if let state = context.traceState, !state.isEmpty { string(3, state) }  // trace_state
        if let parent = span.parentSpanID { bigEndianBytes(4, parent.value) }  // parent_span_id
        if !span.name.isEmpty { string(5, span.name) }  // name
        uint64(6, Self.kindNumber(span.kind))  // kind
        fixed64(7, span.startNanoseconds)  // start_time_unix_nano
        fixed64(8, span.endNanoseconds)  // end_time_unix_nano
        attributes(9, span.attributes)  // attributes
        for event in span.events {  // events = 11: Event { time 1, name 2, attributes 3 }
            message(11) { writer in
                writer.fixed64(1, event.nanosecondsSinceEpoch)
                if !event.name.isEmpty { writer.string(2, event.name) }
                writer.attributes(3, event.attributes)
            }
        }
        for link in span.links {  // links = 13: Link { trace_id 1, span_id 2, trace_state 3, attributes 4, flags 6 }
            message(13) { writer in
                writer.bigEndianBytes(1, link.context.traceID.high, link.context.traceID.low)
                writer.bigEndianBytes(2, link.context.spanID.value)
                if let state = link.context.traceState, !state.isEmpty { writer.string(3, state) }
                writer.attributes(4, link.attributes)
                writer.fixed32(6, Self.flags(traceFlags: link.context.traceFlags, isRemote: link.context.isRemote))
            }
        }
        if let status = span.status {  // status = 15: Status { message 2, code 3 }
            message(15) { writer in
                if status.code == .error, let text = status.message, !text.isEmpty { writer.string(2, text) }
                writer.uint64(3, status.code == .ok ? 1 : 2)
            }
        }
        // flags = 16: the W3C trace flags, and whether the parent is remote (known, so bit 8 is set).
        fixed32(16, Self.flags(traceFlags: context.traceFlags, isRemote: span.parentIsRemote))
    }

    /// `SpanFlags`: the trace flags in bits 0–7, bit 8 "remoteness is known", bit 9 "remote".
    static func flags(traceFlags: UInt8, isRemote: Bool) -> UInt32 {
        UInt32(traceFlags) | 0x100 | (isRemote ? 0x200 : 0)
    }

    /// `Span.SpanKind`: INTERNAL 1, SERVER 2, CLIENT 3, PRODUCER 4, CONSUMER 5.
    static func kindNumber(_ kind: SpanKind) -> UInt64 {
        switch kind {
        case .internal: return 1
        case .server: return 2
        case .client: return 3
        case .producer: return 4
        case .consumer: return 5
        }
    }

    /// Each attribute as a `KeyValue` in field `field`, in the list's order.
    mutating func attributes(_ field: Int, _ attributes: SpanAttributeList) {
        let keys = attributes.keys, values = attributes.values
        for index in keys.indices {
            keyValue(field, keys[index], values[index])
        }
    }

    /// `KeyValue { key = 1, value = 2 }` in field `field`. A string, integer, flag or number is written
    /// front to back with every length known before it is written (a span's attributes are nearly all
    /// of these); other values go through ``message(_:_:)``.
    mutating func keyValue(_ field: Int, _ key: String, _ value: SpanAttribute) {
        var key = key
        key.withUTF8 { keyBytes in
            var text: String?
            let anyLength: Int
            switch value {
            case .string(let string):
                text = string
                let count = string.utf8.count
                anyLength = 1 + Self.varintSize(UInt64(count)) + count
            case .bool: anyLength = 2
            case .int64(let number): anyLength = 1 + Self.varintSize(UInt64(bitPattern: number))
            case .int32(let number): anyLength = 1 + Self.varintSize(UInt64(bitPattern: Int64(number)))
            case .double: anyLength = 9
            default:
                message(field) { $0.keyValue(String(decoding: keyBytes, as: UTF8.self), value) }
                return
            }
            let keyValueLength = 1 + Self.varintSize(UInt64(keyBytes.count)) + keyBytes.count + 1
                + Self.varintSize(UInt64(anyLength)) + anyLength
            tag(field, .lengthDelimited)
            varint(UInt64(keyValueLength))
            tag(1, .lengthDelimited)
            varint(UInt64(keyBytes.count))
            append(keyBytes)
            tag(2, .lengthDelimited)
            varint(UInt64(anyLength))
            switch value {
            case .bool(let flag): bool(2, flag)
            case .int64(let number): int64(3, number)
            case .int32(let number): int64(3, Int64(number))
            case .double(let number): double(4, number)
            default: if let text { string(1, text) }
            }
        }
    }

    /// Each attribute as a `KeyValue` in field `field`; values of a type OTLP has no place for are left out.
    mutating func attributes(_ field: Int, _ attributes: SpanAttributes) {
        attributes.forEach { key, value in
            message(field) { $0.keyValue(key, value) }
        }
    }

    /// `KeyValue { key = 1, value = 2 }`.
    mutating func keyValue(_ key: String, _ value: SpanAttribute) {
        string(1, key)
        message(2) { $0.anyValue(value) }
    }

    /// `AnyValue`: string_value 1, bool_value 2, int_value 3, double_value 4, array_value 5 (`ArrayValue {
    /// values = 1 }`). Always written, even at a default value: it is a `oneof`.
    mutating func anyValue(_ value: SpanAttribute) {
        switch value {
        case .string(let text): string(1, text)
        case .bool(let flag): bool(2, flag)
        case .int64(let number): int64(3, number)
        case .int32(let number): int64(3, Int64(number))
        case .double(let number): double(4, number)
        case .stringConvertible(let item): string(1, item.description)
        case .stringArray(let items): array { for item in items { $0.message(1) { $0.string(1, item) } } }
        case .boolArray(let items): array { for item in items { $0.message(1) { $0.bool(2, item) } } }
        case .int64Array(let items): array { for item in items { $0.message(1) { $0.int64(3, item) } } }
        case .int32Array(let items): array { for item in items { $0.message(1) { $0.int64(3, Int64(item)) } } }
        case .doubleArray(let items): array { for item in items { $0.message(1) { $0.double(4, item) } } }
        case .stringConvertibleArray(let items):
            array { for item in items { $0.message(1) { $0.string(1, item.description) } } }
        default: break
        }
    }

    private mutating func array(_ body: (inout ProtobufWriter) -> Void) {
        message(5, body)
    }
}
