import Foundation
import AttacheTestSupport
import Testing
@testable import AttacheServer

/// A fresh store directory, removed when the test is done.
struct TemporaryStore: ~Copyable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("attache-server-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Names in `files/` that are stored bytes (not receipts).
    func storedFiles() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path + "/files")) ?? []).filter { !$0.hasSuffix(".json") }
    }

    func entries(_ directory: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: path + "/" + directory)) ?? []
    }

    func configuration(faults: FaultPlan = .none) -> ReferenceServerConfiguration {
        var configuration = ReferenceServerConfiguration(storeDirectory: path, port: 0, faults: faults)
        configuration.logLevel = .error
        return configuration
    }
}

/// A hand-written multipart/form-data body, so tests control every byte on the wire.
struct MultipartFixture {
    static let boundary = "attache-test-boundary-1234"
    var parts: [(headers: String, body: [UInt8])] = []

    mutating func field(_ name: String, _ value: String) {
        parts.append(("Content-Disposition: form-data; name=\"\(name)\"\r\n", Array(value.utf8)))
    }

    mutating func file(_ name: String, filename: String, type: String, _ bytes: [UInt8]) {
        parts.append(("Content-Disposition: form-data; name=\"\(name)\"; filename=\"\(filename)\"\r\nContent-Type: \(type)\r\n", bytes))
    }

    var contentType: String { "multipart/form-data; boundary=\(Self.boundary)" }

    func encoded(closed: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        for part in parts {
            out += Array("--\(Self.boundary)\r\n\(part.headers)\r\n".utf8)
            out += part.body
            out += Array("\r\n".utf8)
        }
        if closed { out += Array("--\(Self.boundary)--\r\n".utf8) }
        return out
    }
}

/// Decodes a JSON object body.
func jsonObject(_ bytes: some Sequence<UInt8>) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(bytes))
    return try #require(object as? [String: Any])
}

/// The result of running curl.
struct CurlResult: Sendable {
    var exitCode: Int32
    var stdout: String
    var stderr: String
}

/// Runs /usr/bin/curl with `arguments` and waits for it to exit (``runCommand(_:_:environment:)``): its
/// output is read while it runs, so a body larger than a pipe's buffer does not hold curl up.
func curl(_ arguments: [String]) async throws -> CurlResult {
    let result = try await runCommand("/usr/bin/curl", ["--silent", "--show-error"] + arguments)
    return CurlResult(exitCode: result.status, stdout: result.standardOutput, stderr: result.standardError)
}
