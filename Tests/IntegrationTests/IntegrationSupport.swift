import Attache
import AttacheServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// A reference server on 127.0.0.1 with a fresh store, for one test.
struct LiveServer: Sendable {
    let port: Int
    let store: String
    var scheme = "http"

    var uploadURL: String { "\(scheme)://127.0.0.1:\(port)/upload" }

    /// Runs `body` against a new server with its own temporary store, then stops it and deletes the store.
    static func with<T: Sendable>(
        faults: String? = nil, maxBodySize: Int64? = nil, tls: ReferenceServerConfiguration.TLSFiles? = nil,
        _ body: @Sendable (LiveServer) async throws -> T
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
        let scheme = configuration.scheme
        return try await withReferenceServer(configuration: configuration) { port in
            try await body(LiveServer(port: port, store: store, scheme: scheme))
        }
    }

    struct Stats: Decodable {
        var files: Int
        var uploads: Int
        var idempotencyKeys: Int
        var requests: Int
        var replays: Int
    }

    func stats() async throws -> Stats {
        let (data, _) = try await get("/stats")
        return try JSONDecoder().decode(Stats.self, from: data)
    }

    func get(_ path: String, headers: [String: String] = [:]) async throws -> (Data, HTTPURLResponse) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        return (data, response as! HTTPURLResponse)
    }

    /// A pipeline for this server that retries quickly.
    func pipeline(
        headers: [HeaderField] = [], attempts: Int = 4,
        stallTimeout: Duration = .seconds(30), configure: (inout PipelineConfiguration) -> Void = { _ in }
    ) throws -> AttachmentPipeline {
        var configuration = PipelineConfiguration(url: uploadURL)
        configuration.connection.headers = headers
        configuration.connection.retry = RetryPolicy(
            maximumAttempts: attempts, initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200),
            budget: .seconds(60))
        configuration.connection.stallTimeout = stallTimeout
        // Transport tests compare the server's bytes with the file's; sealing has its own tests.
        configuration.seal = .none
        configure(&configuration)
        return try AttachmentPipeline(configuration: configuration)
    }
}

/// A file in a fresh temporary directory, deleted with it.
struct TemporaryFile {
    let directory: String
    let path: String

    init(name: String = "file.bin", bytes: [UInt8]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("attache-tf-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        path = (directory as NSString).appendingPathComponent(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    var bytes = [UInt8](repeating: 0, count: count)
    var index = 0
    while index < count {
        var word = generator.next() as UInt64
        for _ in 0..<8 where index < count {
            bytes[index] = UInt8(truncatingIfNeeded: word)
            word >>= 8
            index += 1
        }
    }
    return bytes
}

func sha256Hex(_ bytes: [UInt8]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["sha256sum"]
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    input.fileHandleForWriting.write(Data(bytes))
    try input.fileHandleForWriting.close()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return String(text.prefix(64))
}

/// Runs a command and returns its standard output; fails the test when it exits non-zero.
@discardableResult
func run(_ executable: String, _ arguments: [String], input: Data? = nil) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    let output = Pipe()
    let errors = Pipe()
    let stdin = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = stdin
    try process.run()
    if let input { stdin.fileHandleForWriting.write(input) }
    try stdin.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    try #require(process.terminationStatus == 0, "\(executable) failed: \(message)")
    return data
}
