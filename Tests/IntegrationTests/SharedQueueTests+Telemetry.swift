import Attache
import AttacheCore
@testable import AttacheQueue
import Foundation
import InMemoryTracing
import MetricsTestKit
import AttacheTestSupport
import AttacheServer
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

extension SharedQueueTests {
    /// A fleet of three workers on one PostgreSQL, each with `--metrics-listen`, scraped by a real
    /// Prometheus every second: the queue depth it stores is above 0 while files wait and 0 in each
    /// worker's last scrape, once the queue is drained.
    @Test func aFleetOfThreeWorkersShowsTheQueueDepthFallingToZeroInPrometheus() async throws {
        let prometheus = try PrometheusExportTests.tool("prometheus")
        let cluster = try PostgresCluster.current()
        let url = try await cluster.createDatabase()
        let scratch = try QueueScratch(files: 300)
        defer { scratch.remove() }
        try await scratch.attache(["queue", "migrate", "--queue", url], cluster)
        try await scratch.attache(["enqueue", scratch.folder, "--queue", url], cluster)

        let ports = try (0..<3).map { _ in try freePort() }
        let prometheusPort = try freePort()
        let targets = ports.map { "\"127.0.0.1:\($0)\"" }.joined(separator: ", ")
        try """
            global:
              scrape_interval: 1s
            scrape_configs:
              - job_name: workers
                static_configs:
                  - targets: [\(targets)]
            """.write(toFile: scratch.root + "/prometheus.yml", atomically: true, encoding: .utf8)
        let server = try await ServiceProcess(
            [
                prometheus, "--config.file=\(scratch.root)/prometheus.yml", "--storage.tsdb.path=\(scratch.root)/tsdb",
                "--web.listen-address=127.0.0.1:\(prometheusPort)",
            ], ready: "Server is ready to receive web requests", port: prometheusPort)
        defer { server.stop() }

        // A third of the attempts told to come back in a second: the queue drains over about 20 s, however
        // quick the machine, so that the 1 s scrapes see files waiting.
        try await scratch.withServer(faults: try FaultPlan(parsing: "429@30%:retry-after=1")) { upload in
            let workers = try ports.enumerated().map { index, port in
                try ChildProcess(
                    executable: try attacheBinary(),
                    arguments: [
                        "worker", "--queue", url, "--url", upload.uploadURL, "--worker-id", "w\(index)", "--concurrency", "2",
                        "--lease", "3", "--drain", "--attempts", "20", "--metrics-listen", "127.0.0.1:\(port)", "--metrics-linger", "4",
                    ], environment: cluster.environment)
            }
            for worker in workers {
                let status = try await worker.wait(upTo: 300)
                #expect(status == 0, "a worker failed: \(worker.standardError)")
            }
        }
        let open = try await cluster.scalar("SELECT count(*) FROM attache_file WHERE state <> 'done'", in: url)
        #expect(open == "0")

        let peak = try await PrometheusExportTests.query(
            #"max(max_over_time(attache_queue_jobs{attache_queue_state="pending"}[10m]))"#, port: prometheusPort)
        #expect((peak ?? 0) > 0, "no scrape saw files waiting; the test proved nothing")
        for state in ["pending", "claimed"] {
            let last = try await PrometheusExportTests.query(
                #"max(last_over_time(attache_queue_jobs{attache_queue_state="\#(state)"}[10m]))"#, port: prometheusPort)
            let shown = last.map { "\($0)" } ?? "none"
            #expect(last == 0, "\(state) in the workers' last scrapes: \(shown)")
        }
        let done = try await PrometheusExportTests.query(
            #"max(last_over_time(attache_queue_jobs{attache_queue_state="done"}[10m]))"#, port: prometheusPort)
        #expect(done == 300)
        let sent = try await PrometheusExportTests.query(
            #"sum(last_over_time(attache_attachments_total{attache_outcome="stored"}[10m]))"#, port: prometheusPort)
        let stored = sent.map { Int($0) } ?? 0
        #expect(stored >= 300)
    }
}
