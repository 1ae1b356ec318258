import Attache
import AttacheServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import AttacheTestSupport
import Testing

/// What an operator's log shipper and Prometheus receive from a batch at `-v --log-format json`: one JSON
/// object per log line, and no credential anywhere, neither in the lines nor in the metric labels.
@Suite("Observability: logs and labels")
struct ObservabilitySecretsTests {
    static let token = "tok-7f3a9c1e5b2d8f4a"
    static let querySecret = "qsec-51c2e8d7a9b3f6e0"

    @Test func jsonLogLinesAndMetricLabelsCarryNoSecret() async throws {
        let scratch = try ScratchFolder(prefix: "attache-observability")
        defer { scratch.remove() }
        let folder = scratch.path + "/files"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for index in 0..<20 { _ = try scratch.write("files/f\(index).txt", "note \(index)\n") }
        let metricsPort = try freePort()
        var configuration = ReferenceServerConfiguration(storeDirectory: scratch.path + "/store")
        configuration.port = 0
        configuration.logLevel = .critical
        configuration.faults = try FaultPlan(parsing: "503@3-4")
        let (log, scrape, stdout) = try await withReferenceServerProcess(configuration: configuration) { port in
            let batch = try ChildProcess(
                executable: try attacheBinary(),
                arguments: [
                    "batch", folder, "--url", "http://127.0.0.1:\(port)/upload?api_key=\(Self.querySecret)",
                    "--journal", scratch.path + "/journal.sqlite", "--json", "--bearer-env", "OBS_TEST_TOKEN",
                    "-v", "--log-format", "json", "--metrics-listen", "127.0.0.1:\(metricsPort)", "--metrics-linger", "30",
                ], environment: ["OBS_TEST_TOKEN": Self.token])
            try await batch.waitForOutput(containing: "\"finished\"", count: 1, upTo: 300)
            let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(metricsPort)/metrics")!)
            #expect(try await batch.wait(upTo: 60) == 0, "\(batch.standardError)")
            return (batch.standardError, String(decoding: data, as: UTF8.self), batch.standardOutput)
        }
        #expect(stdout.contains("\"finished\""))

        let lines = log.split(separator: "\n")
        #expect(lines.count >= 20, "at -v a batch of 20 files logs its requests")
        for line in lines {
            let object = try #require(
                try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not one JSON object: \(line)")
            #expect(object["level"] is String && object["message"] is String && object["time"] is String && object["label"] is String)
        }
        // Two 503s were retried: the log says so, and so does the retry counter.
        #expect(log.contains("retrying"))
        #expect(scrape.contains(#"attache_retries_total{attache_operation="upload",attache_retry_cause="http_503"} 2"#))
        for (name, text) in [("log", log), ("metrics", scrape)] {
            #expect(!text.contains(Self.token), "the bearer token is in the \(name)")
            #expect(!text.contains(Self.querySecret), "the query secret is in the \(name)")
        }
    }
}
