import Attache
import Foundation
import AttacheTestSupport
import InMemoryTracing
import MetricsTestKit
import Testing
import Tracing

/// The pipeline's spans and metrics against the live reference server: one send span per attachment, an
/// attempt span per request under it, the stages as events of the send (or spans of their own with
/// `TraceDetail.stages`), and the counters an operator reads.
@Suite("Pipeline telemetry")
struct PipelineTelemetryTests {
    static func sample(_ name: String) -> String { PipelineIntegrationTests.sample(name) }

    func pipeline(
        _ server: LiveServer, _ metrics: TestMetrics, _ tracer: InMemoryTracer, attempts: Int = 4,
        detail: TraceDetail = .send
    ) throws -> AttachmentPipeline {
        let plain = try server.pipeline(attempts: attempts)
        var configuration = plain.configuration
        configuration.traceDetail = detail
        return try AttachmentPipeline(
            configuration: configuration, logger: plain.logger, telemetry: Telemetry(metrics: metrics, tracer: tracer))
    }

    @Test(
        "a send retried once: the send and two attempt spans, the stages as its events (send) or as spans under it (stages); counters by kind and outcome",
        arguments: TraceDetail.allCases)
    func retriedSend(detail: TraceDetail) async throws {
        try await LiveServer.with { server in
            let metrics = TestMetrics()
            let tracer = InMemoryTracer()
            let pipeline = try pipeline(server, metrics, tracer, detail: detail)
            let receipt = try await pipeline.send(
                Attachment(path: Self.sample("document.pdf")),
                options: SendOptions(headers: [HeaderField(name: "X-Attache-Fault", value: "503@1")]))
            #expect(receipt.attempts == 2)

            let spans = tracer.finishedSpans
            let send = try #require(spans.first { $0.operationName == "attache.send" })
            #expect(send.parentSpanID == nil)
            #expect(Set(spans.map(\.traceID)) == [send.traceID])
            let stages = ["detect", "transform", "seal", "interpret"]
            switch detail {
            case .send:
                #expect(spans.count == 3, "the send and two attempts: \(spans.map(\.operationName))")
                // Each stage an event of the send, in the order they ran (the answer read twice), with its
                // duration and outcome, and the same as attributes.
                #expect(send.events.map(\.name) == ["attache.detect", "attache.transform", "attache.seal", "attache.interpret", "attache.interpret"])
                for event in send.events {
                    #expect(event.attributes["attache.stage.outcome"]?.toSpanAttribute() == .string("ok"))
                    guard case .double(let seconds) = event.attributes["attache.stage.duration_s"]?.toSpanAttribute() else {
                        Issue.record("no duration on \(event.name)")
                        continue
                    }
                    #expect(seconds >= 0 && seconds < 60)
                }
                #expect(zip(send.events, send.events.dropFirst()).allSatisfy { $0.nanosecondsSinceEpoch <= $1.nanosecondsSinceEpoch })
                for stage in stages {
                    #expect(send.attributes["attache.stage.\(stage).outcome"]?.toSpanAttribute() == .string("ok"))
                    #expect(send.attributes["attache.stage.\(stage).duration_s"] != nil)
                }
            case .stages:
                for stage in stages {
                    let span = try #require(spans.first { $0.operationName == "attache." + stage }, "no \(stage) span")
                    #expect(span.parentSpanID == send.spanID, "\(stage) is not under the send")
                }
                #expect(send.events.isEmpty)
                #expect(
                    spans.count == 8,
                    "send, detect, transform, seal, two attempts, the reading of each answer: \(spans.map(\.operationName))")
            }
            // Prepare and Upload are timed but not traced: the attempts are the upload's spans.
            #expect(!spans.contains { $0.operationName == "attache.prepare" || $0.operationName == "attache.upload" })
            let attempts = spans.filter { $0.operationName == "POST" }
            #expect(attempts.count == 2)
            #expect(attempts.allSatisfy { $0.parentSpanID == send.spanID })
            #expect(attempts.map { $0.attributes["http.response.status_code"]?.toSpanAttribute() } == [.int64(503), .int64(200)])
            #expect(attempts[1].attributes["http.request.resend_count"]?.toSpanAttribute() == .int64(1))
            #expect(send.attributes["attache.kind"]?.toSpanAttribute() == .string("file"))
            #expect(send.attributes["attache.mime_type"]?.toSpanAttribute() == .string("application/pdf"))
            #expect(send.attributes["attache.size.in"]?.toSpanAttribute() == .int64(receipt.originalByteCount))
            #expect(send.attributes["attache.seal.scheme"]?.toSpanAttribute() == .string("none"))
            #expect(send.attributes["attache.answer_profile"]?.toSpanAttribute() == .string("errorcode"))
            #expect(send.attributes["attache.replayed"]?.toSpanAttribute() == .bool(false))

            #expect(
                metrics.counterTotal(
                    label: "attache.attachments",
                    dimensions: [("attache.kind", "file"), ("attache.outcome", "stored"), ("error.type", "none")]) == 1)
            #expect(metrics.counterTotal(label: "attache.retries") == 1)
            #expect(metrics.counterTotal(label: "attache.bytes.in") == receipt.originalByteCount)
            let timed = Set(metrics.timers(label: "attache.stage.duration").compactMap { $0.dimensions.first?.1 })
            #expect(timed == ["prepare", "detect", "transform", "seal", "upload"])
            #expect(try metrics.expectMeter("attache.sends.in_flight").lastValue == 0)
        }
    }

    @Test("a send that runs out of attempts: counted failed with its code, the send span has error.type")
    func failedSend() async throws {
        try await LiveServer.with { server in
            let metrics = TestMetrics()
            let tracer = InMemoryTracer()
            let pipeline = try pipeline(server, metrics, tracer, attempts: 2)
            await #expect(throws: AttacheError.self) {
                try await pipeline.send(
                    Attachment(path: Self.sample("notes.txt")),
                    options: SendOptions(headers: [HeaderField(name: "X-Attache-Fault", value: "503")]))
            }
            let send = try #require(tracer.finishedSpans.first { $0.operationName == "attache.send" })
            #expect(send.attributes["error.type"]?.toSpanAttribute() == .string("retries-exhausted"))
            // The stages before the upload ran and say so; the upload's failure is the send's.
            #expect(send.attributes["attache.stage.seal.outcome"]?.toSpanAttribute() == .string("ok"))
            #expect(send.status?.code == .error)
            #expect(send.attributes["attache.kind"]?.toSpanAttribute() == .string("file"))
            #expect(
                metrics.counterTotal(
                    label: "attache.attachments",
                    dimensions: [("attache.kind", "file"), ("attache.outcome", "failed"), ("error.type", "retries-exhausted")])
                    == 1)
            #expect(tracer.finishedSpans.filter { $0.operationName == "POST" }.count == 2)
        }
    }
}
