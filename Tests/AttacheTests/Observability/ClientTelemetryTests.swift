import Foundation
import AttacheTestSupport
import InMemoryTracing
import MetricsTestKit
import Testing
import Tracing
@testable import Attache
@testable import AttacheCore

/// The client core's one hook for metrics and spans: every attempt of every operation is an HTTP client
/// span with OpenTelemetry's attributes, carries the trace onward, and is measured.
@Suite("Client telemetry")
struct ClientTelemetryTests {
    static let ok = Array(#"{"errorCode":0,"data":{"fileId":"f1"}}"#.utf8)

    func client(_ transport: ScriptedTransport, _ metrics: TestMetrics, _ tracer: InMemoryTracer) -> AttacheClient {
        AttacheClient(
            connection: .init(), transport: transport,
            telemetry: Telemetry(metrics: metrics, tracer: tracer), sleep: RecordedSleeps().sleep)
    }

    func body() throws -> MultipartBody {
        var body = MultipartBody()
        try body.addFile(name: "file", filename: "a.bin", contentType: "application/octet-stream", source: DataSource([1, 2, 3]))
        return body
    }

    @Test("a retried upload: one client span per attempt with resend_count, status and error.type; metrics by status")
    func retriedUpload() async throws {
        let transport = ScriptedTransport([.answer(status: 503), .answer(status: 200, body: Self.ok)])
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        let url = "http://user:pw@127.0.0.1:9/upload?signature=s3cr3t&x=1"
        let result = try await client(transport, metrics, tracer).upload(UploadRequest(url: url, body: try body()))
        guard case .stored = result.outcome else {
            Issue.record("not stored: \(result.outcome)")
            return
        }
        let attempts = tracer.finishedSpans.filter { $0.operationName == "POST" }
        try #require(attempts.count == 2)
        for span in attempts {
            #expect(span.kind == .client)
            #expect(span.attributes["http.request.method"]?.toSpanAttribute() == .string("POST"))
            #expect(span.attributes["server.address"]?.toSpanAttribute() == .string("127.0.0.1"))
            #expect(span.attributes["server.port"]?.toSpanAttribute() == .int64(9))
            #expect(
                span.attributes["url.full"]?.toSpanAttribute()
                    == .string("http://127.0.0.1:9/upload?signature=REDACTED&x=REDACTED"))
        }
        #expect(attempts[0].attributes["http.response.status_code"]?.toSpanAttribute() == .int64(503))
        #expect(attempts[0].attributes["error.type"]?.toSpanAttribute() == .string("503"))
        #expect(attempts[0].attributes["http.request.resend_count"] == nil)
        #expect(attempts[1].attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
        #expect(attempts[1].attributes["http.request.resend_count"]?.toSpanAttribute() == .int64(1))
        #expect(attempts[1].attributes["error.type"] == nil)
        // The interpretation of the answer is its own span, under no attempt (the answer is in).
        #expect(tracer.finishedSpans.contains { $0.operationName == "attache.interpret" })

        // Each attempt carried its own span's context onward, in the request the transport sent.
        let injected = transport.sent.map { request in
            request.headers.first { $0.name == InMemoryTracer.spanIDKey }?.value
        }
        #expect(injected == attempts.map { Optional($0.spanID) })

        let durations = metrics.timers(label: "http.client.request.duration")
        #expect(durations.count == 2)
        let statuses = Set(durations.compactMap { timer in timer.dimensions.first { $0.0 == "http.response.status_code" }?.1 })
        #expect(statuses == ["503", "200"])
        #expect(
            metrics.counterTotal(
                label: "attache.retries", dimensions: [("attache.operation", "upload"), ("attache.retry.cause", "http_503")])
                == 1)
        #expect(metrics.counterTotal(label: "attache.bytes.sent") == 2 * result.bodyByteCount)
        let everything = (tracer.finishedSpans.map { "\($0.attributes)" } + metrics.timers.map { "\($0.dimensions)" })
            .joined()
        #expect(!everything.contains("s3cr3t"))
        #expect(!everything.contains("pw"))
    }

    @Test("an attempt that fails without an answer: error.type is the failure's code, on the span and the metric")
    func failedAttempt() async throws {
        let transport = ScriptedTransport([
            .fail(AttacheError(.connectionLost, stage: .upload, "reset", isRetryable: true)), .answer(status: 200, body: Self.ok),
        ])
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        _ = try await client(transport, metrics, tracer).upload(UploadRequest(url: "http://127.0.0.1:9/upload", body: try body()))
        let first = try #require(tracer.finishedSpans.first { $0.operationName == "POST" })
        #expect(first.attributes["error.type"]?.toSpanAttribute() == .string("connection-lost"))
        #expect(first.status?.code == .error)
        #expect(
            metrics.counterTotal(
                label: "attache.retries",
                dimensions: [("attache.operation", "upload"), ("attache.retry.cause", "connection-lost")]) == 1)
    }

    @Test("with nothing bootstrapped the client records nothing and sends no trace fields")
    func off() async throws {
        #expect(!Telemetry.bootstrapped.isOn)
        let transport = ScriptedTransport([.answer(status: 200, body: Self.ok)])
        let client = AttacheClient(connection: .init(), transport: transport, sleep: RecordedSleeps().sleep)
        #expect(!client.telemetry.isOn)
        _ = try await client.upload(UploadRequest(url: "http://127.0.0.1:9/upload", body: try body()))
        #expect(transport.sent.first?.headers.contains { $0.name.lowercased() == "traceparent" } == false)
    }

    @Test("span URLs lose user info, query values and fragments", arguments: [
        ("https://a:b@h.example:8443/p?token=t&sig=s#frag", "https://h.example:8443/p?token=REDACTED&sig=REDACTED"),
        ("http://h/p", "http://h/p"),
        ("http://[::1]:80/p?flag", "http://[::1]:80/p?REDACTED"),
    ])
    func redaction(url: String, expected: String) {
        #expect(URLRedaction.redacting(url) == expected)
    }

    @Test("the port is the URL's, or the scheme's default")
    func port() {
        #expect(ServerAddress.port(of: "http://u:p@h:81/x") == 81)
        #expect(ServerAddress.port(of: "http://[::1]:8080/") == 8080)
        #expect(ServerAddress.port(of: "https://h/x:9") == nil)
    }
}
