import ArgumentParser
import AttacheMetricsExport
import Testing
@testable import AttacheCLI

/// The observability options of the commands, and the names Prometheus sees.
@Suite struct MetricsOptionsTests {
    @Test(arguments: [
        ("http.client.request.duration", false, "http_client_request_duration_seconds"),
        ("attache.stage.duration", false, "attache_stage_duration_seconds"),
        ("attache.attachments", true, "attache_attachments_total"),
        ("attache.bytes.in", true, "attache_bytes_in_bytes_total"),
        ("attache.download.bytes", true, "attache_download_bytes_total"),
        ("attache.queue.jobs", false, "attache_queue_jobs"),
        ("http.server.request.duration", false, "http_server_request_duration_seconds"),
        ("hb.requests", true, "hb_requests_total"),
    ])
    func prometheusNames(dotted: String, counter: Bool, expected: String) {
        #expect(PrometheusExportFactory.prometheusName(dotted, counter: counter) == expected)
    }

    @Test func theFlagsParseOnBatchWorkerAndDownload() throws {
        let batch = try #require(
            try RootCommand.parseAsRoot(
                ["batch", "d", "--url", "http://h/", "--metrics-listen", "127.0.0.1:9464", "--metrics-linger", "1",
                 "--log-format", "json"]) as? BatchCommand)
        #expect(batch.metrics.metricsListen == "127.0.0.1:9464")
        #expect(batch.metrics.metricsLinger == 1)
        #expect(batch.global.logFormat == .json)
        let worker = try #require(
            try RootCommand.parseAsRoot(["worker", "--queue", "postgres://h/q", "--url", "http://h/", "--metrics-listen", "[::1]:9464"])
                as? WorkerCommand)
        #expect(worker.metrics.metricsLinger == 5)
        _ = try RootCommand.parseAsRoot(["download", "http://h/a", "http://h/b", "-d", "x", "--metrics-listen", "0.0.0.0:0"])
    }

    @Test(arguments: ["9464", "host:", ":9464", "host:99999", "host:port"])
    func aListenAddressWithoutHostAndPortIsBadUsage(address: String) {
        #expect(throws: (any Error).self) {
            try RootCommand.parseAsRoot(["batch", "d", "--url", "http://h/", "--metrics-listen", address])
        }
    }

    @Test func theOTLPEndpointParsesOnEveryExportingCommand() throws {
        let endpoint = "http://127.0.0.1:4318"
        let upload = try #require(
            try RootCommand.parseAsRoot(["upload", "f", "--url", "http://h/", "--otlp-endpoint", endpoint]) as? UploadCommand)
        #expect(upload.otlp.otlpEndpoint == endpoint)
        let batch = try #require(
            try RootCommand.parseAsRoot(["batch", "d", "--url", "http://h/", "--otlp-endpoint", endpoint]) as? BatchCommand)
        #expect(batch.metrics.otlp.otlpEndpoint == endpoint)
        let worker = try #require(
            try RootCommand.parseAsRoot(["worker", "--queue", "postgres://h/q", "--url", "http://h/", "--otlp-endpoint", endpoint])
                as? WorkerCommand)
        #expect(worker.metrics.otlp.otlpEndpoint == endpoint)
        _ = try RootCommand.parseAsRoot(["download", "http://h/a", "http://h/b", "-d", "x", "--otlp-endpoint", endpoint])
    }

    /// Not an http(s) URL: usage error, and the message does not repeat what may hold a credential.
    @Test(arguments: ["127.0.0.1:4318", "ftp://u:pw-9c1e@h/", "http://", "collector"])
    func anOTLPEndpointThatIsNotAnHTTPURLIsBadUsage(endpoint: String) {
        do {
            _ = try RootCommand.parseAsRoot(["batch", "d", "--url", "http://h/", "--otlp-endpoint", endpoint])
            Issue.record("\(endpoint) was accepted")
        } catch {
            let message = RootCommand.message(for: error)
            #expect(message.contains("--otlp-endpoint"))
            #expect(!message.contains("pw-9c1e"))
        }
    }

    @Test func theStandardVariablesTurnTheExportOn() throws {
        let options = try OTLPOptions.parse([])
        #expect(!options.isEnabled(environment: [:]))
        #expect(options.isEnabled(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"]))
        #expect(options.isEnabled(environment: ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"]))
        #expect(!options.isEnabled(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"]))
    }
}
