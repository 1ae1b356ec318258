import Attache
import Foundation
import Logging
import Testing

/// A listening socket that never accepts: the kernel completes each connection and takes the
/// request bytes, and no answer ever comes. What an upstream stalled by an overload looks like.
final class SilentListener: Sendable {
    let port: Int
    private let descriptor: Int32

    init(backlog: Int32 = 2048) throws {
        (descriptor, port) = try bindLoopback(listening: backlog)
    }

    deinit { close(descriptor) }
}

/// A TCP socket bound to a free port of 127.0.0.1, listening when a backlog is given: its descriptor
/// and port. Bound and not listening, the port refuses every connection and stays taken.
func bindLoopback(listening backlog: Int32?) throws -> (descriptor: Int32, port: Int) {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { throw TestFailure("cannot make a socket") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0, backlog.map({ listen(descriptor, $0) == 0 }) ?? true else {
        close(descriptor)
        throw TestFailure("cannot listen on 127.0.0.1")
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
}

/// The threads of this process, from the kernel.
func threadCount() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
    return line.flatMap { Int($0.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) } ?? -1
}

@Suite("Stalled upstream", .serialized)
struct StalledUpstreamTests {
    @Test("500 uploads stalled upstream hold no threads, and a new small upload goes straight through")
    func stalledUploadsDoNotBlockOthers() async throws {
        let silent = try SilentListener()
        try await LiveServer.with { server in
            let transport = CurlTransport()
            var connection = ConnectionConfiguration()
            connection.retry = .never
            connection.stallTimeout = .seconds(120)
            let uploader = Uploader(connection: connection, logger: Logger(label: "stall"), transport: transport)
            func small(_ url: String) throws -> UploadRequest {
                var body = MultipartBody()
                try body.addFile(
                    name: "file", filename: "small.txt", contentType: "text/plain",
                    source: DataSource(Array(repeating: 0x61, count: 441)))
                return UploadRequest(url: url, body: body)
            }
            // Warm up: the loop thread and the body readers exist before counting.
            _ = try await uploader.upload(try small(server.uploadURL))
            let clock = ContinuousClock()
            let quiet = clock.now
            _ = try await uploader.upload(try small(server.uploadURL))
            let unloaded = clock.now - quiet
            let before = threadCount()

            let stalled = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<500 {
                        group.addTask { _ = try? await uploader.upload(try small("http://127.0.0.1:\(silent.port)/upload")) }
                    }
                    try await group.waitForAll()
                }
            }
            defer { stalled.cancel() }
            let deadline = clock.now + .seconds(60)
            while transport.activeTransfers < 500, clock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(transport.activeTransfers == 500, "only \(transport.activeTransfers) transfers started")
            let during = threadCount()

            let start = clock.now
            let result = try await uploader.upload(try small(server.uploadURL))
            let loaded = clock.now - start
            guard case .stored = result.outcome else {
                Issue.record("the small upload was not stored: \(result.outcome)")
                return
            }
            print("stalled-upstream: small upload \(loaded) with 500 stalled, \(unloaded) without; threads \(before) -> \(during)")
            // Threads: the loop and one body reader per core exist already; 500 waiting transfers add none.
            #expect(during <= before + 2, "threads grew from \(before) to \(during) with 500 stalled transfers")
            stalled.cancel()
            _ = await stalled.result
            let settle = clock.now + .seconds(30)
            while transport.activeTransfers > 0, clock.now < settle {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(transport.activeTransfers == 0, "cancelled transfers still on the loop")
        }
    }
}
