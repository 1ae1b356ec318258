import Foundation
import AttacheTestSupport
import Testing

/// The transport against a server that is not ours: nginx (`Tools/nginx-sink.sh`), which reads every
/// request body whole and logs the connection each request came on. What is checked is what nginx saw:
/// the protocol of each request and how many connections the client opened for a batch.
@Suite("Transport against nginx", .serialized)
struct TransportNginxTests {
    @Test("concurrent uploads over TLS use HTTP/2 on one connection")
    func http2MultiplexesOneConnection() async throws {
        let files = try SmallFiles(count: 40)
        defer { files.remove() }
        let run = try await NginxSink.runAttache { sink in
            [
                "batch", files.folder, "--url", sink.httpsURL, "--ca-file", sink.certificate,
                "--concurrency", "8", "--journal", files.journal, "--no-progress",
            ]
        }
        print("nginx over TLS, 40 files at --concurrency 8: \(AccessLogLine.summary(run.requests))")

        #expect(run.status == 0, "attache batch failed: \(run.standardError)")
        #expect(run.requests.count == files.count, "one request per file")
        #expect(run.requests.allSatisfy { $0.status == 200 })
        #expect(run.requests.allSatisfy { $0.protocolName == "HTTP/2.0" }, "every request over HTTP/2")
        #expect(Set(run.requests.map(\.connection)).count == 1, "every request on one connection")
    }

    @Test("200 uploads over HTTP/1.1 open at most --concurrency connections")
    func http1ConnectionsAreBoundedByConcurrency() async throws {
        let files = try SmallFiles(count: 200)
        defer { files.remove() }
        let run = try await NginxSink.runAttache { sink in
            ["batch", files.folder, "--url", sink.httpURL, "--concurrency", "4", "--journal", files.journal, "--no-progress"]
        }
        print("nginx over plain HTTP, 200 files at --concurrency 4: \(AccessLogLine.summary(run.requests))")

        #expect(run.status == 0, "attache batch failed: \(run.standardError)")
        #expect(run.requests.count == files.count, "one request per file")
        #expect(run.requests.allSatisfy { $0.status == 200 })
        #expect(run.requests.allSatisfy { $0.protocolName == "HTTP/1.1" })
        let connections = Set(run.requests.map(\.connection)).count
        #expect(connections <= 4, "\(connections) connections for --concurrency 4")
    }
}

/// Small files of random bytes (1-4 KB, so nothing is transformed and each is one request) in a fresh
/// temporary folder, with a place for the batch journal outside it.
struct SmallFiles {
    let root: String
    let count: Int
    var folder: String { root + "/files" }
    var journal: String { root + "/journal.sqlite" }

    init(count: Int) throws {
        self.count = count
        root = FileManager.default.temporaryDirectory.appendingPathComponent("attache-nginx-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root + "/files", withIntermediateDirectories: true)
        for index in 0..<count {
            let bytes = randomBytes(Int.random(in: 1_000...4_000))
            try Data(bytes).write(to: URL(fileURLWithPath: root + "/files/" + String(format: "%03d.bin", index)))
        }
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }
}

/// nginx from `Tools/nginx-sink.sh` on two free ports of 127.0.0.1 (plain HTTP, and HTTPS with HTTP/2
/// and a throwaway certificate), with its files in a fresh temporary prefix; stopped by its pid.
final class NginxSink {
    let prefix: String
    let httpPort: Int
    let httpsPort: Int
    private let process: ChildProcess

    var httpURL: String { "http://127.0.0.1:\(httpPort)/upload" }
    var httpsURL: String { "https://127.0.0.1:\(httpsPort)/upload" }
    /// The self-signed certificate of the HTTPS port, for `--ca-file`.
    var certificate: String { prefix + "/cert.pem" }

    private init(prefix: String, httpPort: Int, httpsPort: Int, process: ChildProcess) {
        self.prefix = prefix
        self.httpPort = httpPort
        self.httpsPort = httpsPort
        self.process = process
    }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Tools/nginx-sink.sh").path

    /// Starts nginx and returns once it listens: its last startup notice is printed after the sockets
    /// are bound. A port taken between choosing and binding (nginx exits "Address already in use") is
    /// retried on new ports.
    static func start() async throws -> NginxSink {
        var lastOutput = ""
        for _ in 0..<3 {
            let prefix = FileManager.default.temporaryDirectory
                .appendingPathComponent("attache-nginx-\(UUID().uuidString)").path
            let httpPort = try freePort()
            var httpsPort = try freePort()
            while httpsPort == httpPort { httpsPort = try freePort() }
            // nginx writes its notices to stderr; `exec` keeps the pid while both streams share one pipe.
            let command = ["exec", script, prefix, String(httpPort), String(httpsPort)]
                .map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
            let process = try ChildProcess(executable: "/bin/sh", arguments: ["-c", command + " 2>&1"])
            do {
                // Returns early, without the marker, when nginx exits.
                try await process.waitForOutput(containing: "getrlimit(RLIMIT_NOFILE)", count: 1, upTo: 60)
            } catch {
                kill(process.processIdentifier, SIGKILL)
                _ = try? await process.wait(upTo: 30)
                try? FileManager.default.removeItem(atPath: prefix)
                throw error
            }
            lastOutput = process.standardOutput
            if lastOutput.contains("getrlimit(RLIMIT_NOFILE)") {
                return NginxSink(prefix: prefix, httpPort: httpPort, httpsPort: httpsPort, process: process)
            }
            _ = try? await process.wait(upTo: 30)
            try? FileManager.default.removeItem(atPath: prefix)
            guard lastOutput.contains("Address already in use") else { break }
        }
        throw TestFailure("nginx did not start: \(lastOutput)")
    }

    /// What one `attache` run against a fresh sink did: its exit status (nil when it had to be killed),
    /// its stderr, and the requests nginx logged.
    struct Run {
        var status: Int32?
        var standardError: String
        var requests: [AccessLogLine]
    }

    /// Starts a sink, runs `attache` with the arguments made for it, stops the sink and reads its log.
    static func runAttache(_ arguments: (NginxSink) -> [String]) async throws -> Run {
        let sink = try await start()
        do {
            let attache = try ChildProcess(executable: try attacheBinary(), arguments: arguments(sink))
            let status = try await attache.wait(upTo: 300)
            if status == nil {
                kill(attache.processIdentifier, SIGKILL)
                _ = try await attache.wait(upTo: 30)
            }
            return Run(status: status, standardError: attache.standardError, requests: try await sink.stopAndReadAccessLog())
        } catch {
            await sink.stop()
            throw error
        }
    }

    /// Stops nginx and returns the requests it logged. SIGTERM first: nginx finishes the event it is
    /// handling, so every answer it has sent has its log line once it has exited.
    func stopAndReadAccessLog() async throws -> [AccessLogLine] {
        kill(process.processIdentifier, SIGTERM)
        if try await process.wait(upTo: 30) == nil {
            kill(process.processIdentifier, SIGKILL)
            _ = try await process.wait(upTo: 30)
        }
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let text = try String(contentsOfFile: prefix + "/access.log", encoding: .utf8)
        return try text.split(separator: "\n").map { try AccessLogLine($0) }.filter { $0.uri == "/upload" }
    }

    /// Stops nginx (SIGKILL by pid) and deletes its prefix.
    func stop() async {
        kill(process.processIdentifier, SIGKILL)
        _ = try? await process.wait(upTo: 30)
        try? FileManager.default.removeItem(atPath: prefix)
    }
}

/// One line of the sink's access log:
/// `$connection $connection_requests $server_protocol $request_method $uri $status $request_length $request_time`.
struct AccessLogLine {
    /// nginx's serial number of the connection the request came on.
    var connection: Int
    /// The request's position on its connection (1 for the first).
    var connectionRequests: Int
    /// `HTTP/1.1` or `HTTP/2.0`.
    var protocolName: String
    var method: String
    var uri: String
    var status: Int
    /// Request line, headers and body, as nginx read them.
    var requestLength: Int

    init(_ line: Substring) throws {
        let fields = line.split(separator: " ")
        guard fields.count >= 7, let connection = Int(fields[0]), let connectionRequests = Int(fields[1]),
            let status = Int(fields[5]), let requestLength = Int(fields[6])
        else { throw TestFailure("unexpected access log line: \(line)") }
        self.connection = connection
        self.connectionRequests = connectionRequests
        protocolName = String(fields[2])
        method = String(fields[3])
        uri = String(fields[4])
        self.status = status
        self.requestLength = requestLength
    }

    /// What a run looked like from nginx's side, for the test output.
    static func summary(_ lines: [AccessLogLine]) -> String {
        let protocols = Dictionary(grouping: lines, by: \.protocolName).mapValues(\.count)
            .sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")
        let perConnection = Dictionary(grouping: lines, by: \.connection).mapValues(\.count)
        let counts = perConnection.values.sorted(by: >).map(String.init).joined(separator: " ")
        return "\(lines.count) requests (\(protocols)) on \(perConnection.count) connections; "
            + "requests per connection: \(counts)"
    }
}
