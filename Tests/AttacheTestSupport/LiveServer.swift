import Attache
import AttacheServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// A reference server on 127.0.0.1 with a fresh store, for one test: an `attache-server` process
/// (``ServerProcess`` says why not one in the test process).
package struct LiveServer: Sendable {
    package let port: Int
    package let store: String
    package var scheme = "http"

    package init(port: Int, store: String, scheme: String = "http") {
        self.port = port
        self.store = store
        self.scheme = scheme
    }

    package var uploadURL: String { "\(scheme)://127.0.0.1:\(port)/upload" }

    /// Runs `body` against a new server with its own temporary store, then stops it and deletes the store.
    /// With `uploadLog`, the server appends a JSON line to that file for each keyed upload it answers.
    package static func with<T: Sendable>(
        faults: String? = nil, maxBodySize: Int64? = nil, tls: ReferenceServerConfiguration.TLSFiles? = nil,
        uploadLog: String? = nil, _ body: @Sendable (LiveServer) async throws -> T
    ) async throws -> T {
        let store = FileManager.default.temporaryDirectory
            .appendingPathComponent("attache-it-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: store) }
        var configuration = ReferenceServerConfiguration(storeDirectory: store)
        configuration.port = 0
        configuration.logLevel = .critical
        if let faults { configuration.faults = try FaultPlan(parsing: faults) }
        configuration.maxBodySize = maxBodySize
        configuration.tls = tls
        configuration.uploadLogPath = uploadLog
        let scheme = configuration.scheme
        return try await withReferenceServerProcess(configuration: configuration) { port in
            try await body(LiveServer(port: port, store: store, scheme: scheme))
        }
    }

    /// The entries of a server's upload log (`uploadLog`), one JSON object a line: `key`, `outcome`
    /// (`stored`, `replayed`, `in-progress`, `infected`, …) and `fileId`. None when the file is missing.
    package static func uploadLogEntries(_ path: String) throws -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw TestFailure("not a JSON object in the upload log: \(line)")
            }
            return object
        }
    }

    package struct Stats: Decodable {
        package var files: Int
        package var uploads: Int
        package var idempotencyKeys: Int
        package var requests: Int
        package var replays: Int
    }

    package func stats() async throws -> Stats {
        let (data, _) = try await get("/stats")
        return try JSONDecoder().decode(Stats.self, from: data)
    }

    package func get(_ path: String, headers: [String: String] = [:]) async throws -> (Data, HTTPURLResponse) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        return (data, response as! HTTPURLResponse)
    }

    /// A pipeline for this server that retries quickly. The stall timeout (120 s unless given) only
    /// catches a transfer that hangs: a loaded machine can hold a live one for tens of seconds, and a
    /// test that injects a stall passes a timeout of its own, far below the stall. The retry budget
    /// outlasts two stalled attempts, so that one that stalls leaves time for the retry.
    package func pipeline(
        headers: [HeaderField] = [], attempts: Int = 4,
        stallTimeout: Duration = .seconds(120), configure: (inout PipelineConfiguration) -> Void = { _ in }
    ) throws -> AttachmentPipeline {
        var configuration = PipelineConfiguration(url: uploadURL)
        configuration.connection.headers = headers
        configuration.connection.retry = RetryPolicy(
            maximumAttempts: attempts, initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200),
            budget: .seconds(60) + stallTimeout * 2)
        configuration.connection.stallTimeout = stallTimeout
        // Transport tests compare the server's bytes with the file's; sealing has its own tests.
        configuration.seal = .none
        configure(&configuration)
        return try AttachmentPipeline(configuration: configuration)
    }
}
