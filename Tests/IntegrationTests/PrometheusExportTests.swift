import Attache
import AttacheBatch
import AttacheServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import AttacheTestSupport
import Testing

/// `attache batch --metrics-listen` scraped by a real Prometheus (Debian's `prometheus`, started here on
/// 127.0.0.1 with a scrape interval of 1 s) during a 1,000-file run against the reference server with 5 %
/// of its answers 503: what Prometheus stored agrees with the journal and with the server's own log.
@Suite("Prometheus export")
struct PrometheusExportTests {
    static func tool(_ name: String) throws -> String {
        for directory in ["/usr/bin", "/usr/local/bin", "/bin"] where FileManager.default.isExecutableFile(atPath: directory + "/" + name) {
            return directory + "/" + name
        }
        throw TestFailure("\(name) is not installed (Debian package prometheus; run Scripts/bootstrap.sh)")
    }

    /// One number from an instant PromQL query through Prometheus's HTTP API.
    static func query(_ promQL: String, port: Int) async throws -> Double? {
        var components = URLComponents(string: "http://127.0.0.1:\(port)/api/v1/query")!
        components.queryItems = [URLQueryItem(name: "query", value: promQL)]
        let (data, _) = try await URLSession.shared.data(from: components.url!)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let result = try #require((object["data"] as? [String: Any])?["result"] as? [[String: Any]], "\(object)")
        guard let value = result.first?["value"] as? [Any], let text = value.last as? String else { return nil }
        return Double(text)
    }

    @Test func aThousandFilesWithFivePercent503sAsPrometheusSeesThem() async throws {
        let prometheus = try Self.tool("prometheus")
        let promtool = try Self.tool("promtool")
        let scratch = try ScratchFolder(prefix: "attache-prometheus")
        defer { scratch.remove() }
        let folder = scratch.path + "/files"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var generator = SeededGenerator(seed: 28)
        for index in 0..<1000 {
            let count = Int.random(in: 100...2000, using: &generator)
            _ = try scratch.write("files/f\(index).bin", (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        let metricsPort = try freePort()
        let prometheusPort = try freePort()
        try """
            global:
              scrape_interval: 1s
              evaluation_interval: 1s
            scrape_configs:
              - job_name: attache
                static_configs:
                  - targets: ["127.0.0.1:\(metricsPort)"]
            """.write(toFile: scratch.path + "/prometheus.yml", atomically: true, encoding: .utf8)
        let server = try await ServiceProcess(
            [
                prometheus, "--config.file=\(scratch.path)/prometheus.yml", "--storage.tsdb.path=\(scratch.path)/tsdb",
                "--web.listen-address=127.0.0.1:\(prometheusPort)", "--log.level=info",
            ], ready: "Server is ready to receive web requests", port: prometheusPort)
        defer { server.stop() }

        var configuration = ReferenceServerConfiguration(storeDirectory: scratch.path + "/store")
        configuration.port = 0
        configuration.logLevel = .critical
        configuration.faults = try FaultPlan(parsing: "503@5%")
        configuration.uploadLogPath = scratch.path + "/uploads.jsonl"
        let journal = scratch.path + "/journal.sqlite"
        let exposition = try await withReferenceServerProcess(configuration: configuration) { port in
            let batch = try ChildProcess(
                executable: try attacheBinary(),
                arguments: [
                    "batch", folder, "--url", "http://127.0.0.1:\(port)/upload", "--journal", journal, "--json",
                    "--concurrency", "8", "--metrics-listen", "127.0.0.1:\(metricsPort)", "--metrics-linger", "30",
                ])
            // The last values, as a scrape reads them while the run lingers.
            try await batch.waitForOutput(containing: "\"finished\"", count: 1, upTo: 600)
            let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(metricsPort)/metrics")!)
            let status = try await batch.wait(upTo: 120)
            #expect(status == 0, "\(batch.standardError)")
            return String(decoding: data, as: UTF8.self)
        }

        // The journal's count of stored files, the server's count of 503s.
        let done = try UploadJournal(path: journal, readOnly: true).counts()[.done] ?? 0
        #expect(done == 1000)
        let log = try String(contentsOfFile: scratch.path + "/uploads.jsonl", encoding: .utf8)
        let served503 = log.split(separator: "\n").filter { $0.contains("\"fault-503\"") }.count
        #expect(served503 > 10, "5 % of 1,000+ requests should have failed; the test proved nothing")

        // Prometheus kept the last scrape of each series (the run has ended: `max_over_time`).
        let stored = try await Self.query(
            #"sum(max_over_time(attache_attachments_total{attache_outcome="stored"}[10m]))"#, port: prometheusPort)
        #expect(stored.map { Int($0) } == done)
        let retries = try await Self.query(
            #"sum(max_over_time(attache_retries_total{attache_retry_cause="http_503"}[10m]))"#, port: prometheusPort)
        #expect(retries.map { Int($0) } == served503)
        let attempts = try await Self.query(
            #"sum(max_over_time(http_client_request_duration_seconds_count{http_response_status_code="503"}[10m]))"#,
            port: prometheusPort)
        #expect(attempts.map { Int($0) } == served503)

        // The exposition itself passes promtool's checks.
        try exposition.write(toFile: scratch.path + "/scrape.txt", atomically: true, encoding: .utf8)
        let check = try await runCommand("/bin/sh", ["-c", "\"$0\" check metrics < \"$1\"", promtool, scratch.path + "/scrape.txt"])
        #expect(check.status == 0, "promtool: \(check.all)")
        #expect(check.all.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "promtool: \(check.all)")
        #expect(exposition.contains("# HELP attache_attachments_total"))
        #expect(exposition.contains(#"http_client_request_duration_seconds_bucket{"#))
    }
}
