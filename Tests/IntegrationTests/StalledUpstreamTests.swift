import Attache
import Foundation
import Logging
import AttacheTestSupport
import Testing

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
            // A thread per waiting transfer would add 500; the margin is for the tests that run alongside
            // in the same process and start and end threads of their own (pools, event loops).
            #expect(during <= before + 64, "threads grew from \(before) to \(during) with 500 stalled transfers")
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
