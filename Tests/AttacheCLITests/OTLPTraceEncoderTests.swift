import Attache
import AttacheMetricsExport
import AttacheTestSupport
import Foundation
import Testing
import Tracing

/// The hand-written OTLP encoder, read back by the official protobuf classes (PyPI's opentelemetry-proto),
/// never by our own code.
@Suite struct OTLPTraceEncoderTests {
    /// Bytes worked out by hand from the protobuf encoding rules.
    @Test func theWireFormatIsProtobufs() {
        var writer = ProtobufWriter()
        writer.uint64(1, 300)  // tag 08, varint ac 02
        writer.int64(2, -1)  // tag 10, ten bytes of two's complement
        writer.bool(3, false)  // tag 18, 00
        writer.fixed64(4, 0x0102_0304_0506_0708)  // tag 21, little-endian
        writer.fixed32(5, 0x301)  // tag 2d, little-endian
        writer.message(6) { $0.string(1, "attache") }  // tag 32, length 9, then tag 0a length 7
        #expect(
            writer.bytes == [
                0x08, 0xAC, 0x02,
                0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01,
                0x18, 0x00,
                0x21, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
                0x2D, 0x01, 0x03, 0x00, 0x00,
                0x32, 0x09, 0x0A, 0x07, 0x61, 0x74, 0x74, 0x61, 0x63, 0x68, 0x65,
            ])
        // A nested message of 200 bytes: its length takes two bytes (c8 01), the message moved up by one.
        var long = ProtobufWriter()
        long.message(1) { $0.string(2, String(repeating: "x", count: 197)) }
        #expect(Array(long.bytes.prefix(6)) == [0x0A, 0xC8, 0x01, 0x12, 0xC5, 0x01])
        #expect(long.bytes.count == 3 + 200)
    }

    /// Every field Attache writes, values of every attribute type (defaults included: `false`, 0, ""),
    /// events, links, status, a remote parent, `tracestate`, and enough attributes that the span's
    /// length needs three bytes. The receiver's classes decode it, and serialize it back to the very same
    /// bytes: nothing was written out of order or in the wrong wire type.
    @Test func theCollectorsProtobufClassesReadWhatWeEncode() async throws {
        let trace = TraceID(high: 0x4BF9_2F35_77B3_4DA6, low: 0xA3CE_929D_0E0E_4736)
        let remoteParent = SpanContext(
            traceID: trace, spanID: SpanID(0x00F0_67AA_0BA9_02B7), isSampled: true, traceState: "vendor=abc", isRemote: true)
        var attributes = SpanAttributes()
        attributes.set("text", value: .string("héllo"))
        attributes.set("empty", value: .string(""))
        attributes.set("flag", value: .bool(false))
        attributes.set("count", value: .int64(-42))
        attributes.set("zero", value: .int64(0))
        attributes.set("small", value: .int32(7))
        attributes.set("ratio", value: .double(0.25))
        attributes.set("names", value: .stringArray(["a", "b"]))
        attributes.set("numbers", value: .int64Array([1, -2]))
        attributes.set("flags", value: .boolArray([true, false]))
        attributes.set("ratios", value: .doubleArray([1.5]))
        let server = FinishedSpan(
            context: SpanContext(traceID: trace, spanID: SpanID(0x1111_2222_3333_4444), isSampled: true, traceState: "vendor=abc"),
            parentSpanID: remoteParent.spanID, parentIsRemote: true, name: "POST /upload", kind: .server,
            startNanoseconds: 1_700_000_000_000_000_001, endNanoseconds: 1_700_000_000_500_000_002,
            attributes: SpanAttributeList(attributes),
            events: [
                FinishedSpan.Event(
                    SpanEvent(
                        name: "attache.detect", at: DefaultTracerClock.Timestamp(nanosecondsSinceEpoch: 1_700_000_000_100_000_000),
                        attributes: ["attache.stage.outcome": "ok"]))
            ],
            links: [FinishedSpan.Link(context: remoteParent, attributes: ["why": "batch"])],
            status: SpanStatus(code: .error, message: "failed"))
        var many = SpanAttributes()
        for index in 0..<400 { many.set("attribute.\(index)", value: .int64(Int64(index))) }
        let root = FinishedSpan(
            context: SpanContext(traceID: TraceID(high: 1, low: 2), spanID: SpanID(3), isSampled: true),
            parentSpanID: nil, name: "attache.send", kind: .internal,
            startNanoseconds: 1, endNanoseconds: 2, attributes: SpanAttributeList(many), status: SpanStatus(code: .ok))
        let encoder = OTLPTraceEncoder(
            resource: [("service.name", "attache-test"), ("deployment.environment", "ci")], scopeName: "attache",
            scopeVersion: "9.9.9")
        let body = encoder.encode([server, root])

        let scratch = try ScratchFolder(prefix: "attache-otlp-encoder")
        defer { scratch.remove() }
        let path = scratch.path + "/request.bin"
        try Data(body).write(to: URL(fileURLWithPath: path))
        let result = try await runCommand(try python(with: ["opentelemetry.proto"]), ["-c", Self.decoder, path])
        #expect(result.status == 0, "\(result.standardError)")
        let decoded = try #require(
            try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any], "\(result.all)")
        #expect(decoded["identical"] as? Bool == true, "re-serialized differently")
        #expect(decoded["resource"] as? [String: String] == ["service.name": "attache-test", "deployment.environment": "ci"])
        #expect(decoded["scope"] as? [String] == ["attache", "9.9.9"])
        let spans = try #require(decoded["spans"] as? [[String: Any]])
        try #require(spans.count == 2)

        let first = spans[0]
        #expect(first["trace_id"] as? String == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(first["span_id"] as? String == "1111222233334444")
        #expect(first["parent_span_id"] as? String == "00f067aa0ba902b7")
        #expect(first["trace_state"] as? String == "vendor=abc")
        #expect(first["name"] as? String == "POST /upload")
        #expect(first["kind"] as? Int == 2)
        #expect(first["start"] as? Int == 1_700_000_000_000_000_001)
        #expect(first["end"] as? Int == 1_700_000_000_500_000_002)
        #expect(first["flags"] as? Int == 0x301, "sampled, parent known to be remote")
        #expect((first["status"] as? [String: Any])?["code"] as? Int == 2)
        #expect((first["status"] as? [String: Any])?["message"] as? String == "failed")
        let values = try #require(first["attributes"] as? [String: Any])
        #expect(values["text"] as? String == "héllo")
        #expect(values["empty"] as? String == "")
        #expect(values["flag"] as? Bool == false)
        #expect(values["count"] as? Int == -42)
        #expect(values["zero"] as? Int == 0)
        #expect(values["small"] as? Int == 7)
        #expect(values["ratio"] as? Double == 0.25)
        #expect(values["names"] as? [String] == ["a", "b"])
        #expect(values["numbers"] as? [Int] == [1, -2])
        #expect(values["flags"] as? [Bool] == [true, false])
        #expect(values["ratios"] as? [Double] == [1.5])
        let kinds = try #require(first["kinds"] as? [String: String])
        #expect(kinds["empty"] == "string_value" && kinds["flag"] == "bool_value" && kinds["zero"] == "int_value")
        let events = try #require(first["events"] as? [[String: Any]])
        #expect(events.count == 1)
        #expect(events.first?["name"] as? String == "attache.detect")
        #expect(events.first?["time"] as? Int == 1_700_000_000_100_000_000)
        #expect(events.first?["attributes"] as? [String: String] == ["attache.stage.outcome": "ok"])
        let links = try #require(first["links"] as? [[String: Any]])
        #expect(links.count == 1)
        #expect(links.first?["span_id"] as? String == "00f067aa0ba902b7")
        #expect(links.first?["trace_state"] as? String == "vendor=abc")
        #expect(links.first?["flags"] as? Int == 0x301)
        #expect(links.first?["attributes"] as? [String: String] == ["why": "batch"])

        let second = spans[1]
        #expect(second["trace_id"] as? String == "00000000000000010000000000000002")
        #expect(second["parent_span_id"] as? String == "")
        #expect(second["kind"] as? Int == 1)
        #expect(second["flags"] as? Int == 0x101, "sampled, parent (none) not remote")
        #expect((second["status"] as? [String: Any])?["code"] as? Int == 1)
        #expect((second["attributes"] as? [String: Any])?.count == 400)
        #expect((second["attributes"] as? [String: Any])?["attribute.399"] as? Int == 399)
    }

    /// Reads an ExportTraceServiceRequest from the file named by argv[1] and prints what it holds as JSON.
    static let decoder = #"""
        import json, sys
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        data = open(sys.argv[1], "rb").read()
        request = ExportTraceServiceRequest()
        request.ParseFromString(data)
        def value(v):
            kind = v.WhichOneof("value")
            if kind == "array_value":
                return [value(item) for item in v.array_value.values]
            return None if kind is None else getattr(v, kind)
        def attributes(pairs):
            return {pair.key: value(pair.value) for pair in pairs}
        spans = []
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append({
                        "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(), "trace_state": span.trace_state,
                        "name": span.name, "kind": span.kind, "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano, "flags": span.flags,
                        "status": {"code": span.status.code, "message": span.status.message},
                        "attributes": attributes(span.attributes),
                        "kinds": {pair.key: pair.value.WhichOneof("value") for pair in span.attributes},
                        "events": [{"name": e.name, "time": e.time_unix_nano, "attributes": attributes(e.attributes)}
                                   for e in span.events],
                        "links": [{"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex(), "trace_state": l.trace_state,
                                   "flags": l.flags, "attributes": attributes(l.attributes)} for l in span.links],
                    })
        resource_spans = request.resource_spans[0]
        print(json.dumps({
            "identical": request.SerializeToString() == data,
            "resource": attributes(resource_spans.resource.attributes),
            "scope": [resource_spans.scope_spans[0].scope.name, resource_spans.scope_spans[0].scope.version],
            "spans": spans,
        }))
        """#
}
