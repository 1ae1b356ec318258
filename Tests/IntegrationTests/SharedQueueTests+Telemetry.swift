import Attache
import AttacheCore
@testable import AttacheQueue
import Foundation
import InMemoryTracing
import MetricsTestKit
import AttacheTestSupport
import Testing
import Tracing

extension SharedQueueTests {
    /// A worker's job spans: each file is a trace of its own rooted at its job span, linked to the span
    /// that enqueued it (carried in the row); the queue's gauges and timers are recorded, and the depth
    /// of open rows is 0 once the queue is drained.
    @Test func jobSpansLinkToTheEnqueuingSpanAndTheDepthFallsToZero() async throws {
        let cluster = try PostgresCluster.current()
        let url = try await cluster.createDatabase()
        let scratch = try QueueScratch(files: 3)
        defer { scratch.remove() }
        var parsed = try QueueConnection(parsing: url)
        parsed.resolvePassword(environment: cluster.environment)
        let connection = parsed
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        let telemetry = Telemetry(metrics: metrics, tracer: tracer)
        try await scratch.withServer { server in
            try await QueueDatabase.withDatabase(connection) { database in
                try await database.migrate()
                var enqueuer = QueueEnqueuer(database: database)
                enqueuer.telemetry = telemetry
                #expect(try await enqueuer.enqueue([scratch.folder]).added == 3)

                let plain = PipelineConfiguration(url: server.uploadURL)
                let pipeline = try AttachmentPipeline(configuration: plain, telemetry: telemetry)
                var configuration = QueueWorkerConfiguration()
                configuration.workerID = "traced"
                configuration.exitWhenDrained = true
                let worker = QueueWorker(
                    database: database, sender: PipelineQueueSender(pipeline: pipeline), configuration: configuration)
                let summary = try await worker.run()
                #expect(summary.succeeded == 3)
            }
        }
        let spans = tracer.finishedSpans
        let enqueue = try #require(spans.first { $0.operationName == "attache.queue.enqueue" })
        let jobs = spans.filter { $0.operationName == "attache.queue.job" }
        #expect(jobs.count == 3)
        for job in jobs {
            #expect(job.parentSpanID == nil)
            #expect(job.traceID != enqueue.traceID)
            #expect(job.links.contains { $0.context.inMemorySpanContext?.spanID == enqueue.spanID })
            let send = try #require(spans.first { $0.operationName == "attache.send" && $0.parentSpanID == job.spanID })
            #expect(send.traceID == job.traceID)
        }
        #expect(!metrics.timers(label: "attache.queue.claim.duration").isEmpty)
        #expect(try metrics.expectMeter("attache.queue.jobs", [("attache.queue.state", "pending")]).lastValue == 0)
        #expect(try metrics.expectMeter("attache.queue.jobs", [("attache.queue.state", "claimed")]).lastValue == 0)
        #expect(try metrics.expectMeter("attache.queue.jobs", [("attache.queue.state", "done")]).lastValue == 3)
    }
}
