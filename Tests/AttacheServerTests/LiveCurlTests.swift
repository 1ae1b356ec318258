import Foundation
import AttacheTestSupport
import Testing
@testable import AttacheServer

/// End-to-end tests: a real server on 127.0.0.1 (port 0) and real curl uploads.
@Suite("Reference server with curl", .serialized)
struct LiveCurlTests {
    /// Writes `bytes` to a file next to the store and returns its path.
    private func sampleFile(_ store: borrowing TemporaryStore, _ bytes: [UInt8], name: String = "sample.bin") throws -> String {
        let path = store.path + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func statistics(_ port: Int) async throws -> [String: Any] {
        let result = try await curl(["http://127.0.0.1:\(port)/stats"])
        return try jsonObject(Array(result.stdout.utf8))
    }

    @Test func curlUploadIsStoredByteExactlyAndDeduplicated() async throws {
        let store = try TemporaryStore()
        let bytes = sampleBytes(count: 200_000)
        let path = try sampleFile(store, bytes)
        let digest = try await sha256Hex(bytes)
        let configuration = store.configuration()
        let storePath = store.path
        try await withReferenceServer(configuration: configuration) { port in
            let url = "http://127.0.0.1:\(port)/upload"
            let arguments = ["-F", "file=@\(path);type=image/png", "-F", "tags[]=x", "-H", "Idempotency-Key: abc-1", url]
            let first = try await curl(arguments)
            #expect(first.exitCode == 0)
            let data = try #require(try jsonObject(Array(first.stdout.utf8))["data"] as? [String: Any])
            #expect(data["sha256"] as? String == digest)
            #expect(data["size"] as? Int == bytes.count)
            let fileId = try #require(data["fileId"] as? String)
            let stored = try Data(contentsOf: URL(fileURLWithPath: storePath + "/files/" + fileId))
            #expect(Array(stored) == bytes)

            let second = try await curl(["-D", "-"] + arguments)
            #expect(second.stdout.lowercased().contains("idempotent-replayed: true"))
            #expect(second.stdout.contains(fileId))
            let stats = try await statistics(port)
            #expect(stats["files"] as? Int == 1)
            #expect(stats["requests"] as? Int == 2)
            #expect(stats["replays"] as? Int == 1)

            let download = storePath + "/download.bin"
            let get = try await curl(["-o", download, "http://127.0.0.1:\(port)/files/\(fileId)"])
            #expect(get.exitCode == 0)
            #expect(Array(try Data(contentsOf: URL(fileURLWithPath: download))) == bytes)
        }
    }

    @Test func dropResetsTheConnectionAndStoresNothing() async throws {
        let store = try TemporaryStore()
        let path = try sampleFile(store, sampleBytes(count: 1_000_000))
        try await withReferenceServer(configuration: store.configuration()) { port in
            let result = try await curl([
                "-H", "Expect:", "-H", "Idempotency-Key: drop-1", "-H", "X-Attache-Fault: drop:after=1024",
                "-F", "file=@\(path)", "http://127.0.0.1:\(port)/upload",
            ])
            #expect([52, 55, 56].contains(result.exitCode), "curl: \(result.stderr)")
            let stats = try await statistics(port)
            #expect(stats["files"] as? Int == 0)
            #expect(stats["idempotencyKeys"] as? Int == 0)
            #expect(stats["requests"] as? Int == 1)
        }
        #expect(store.storedFiles().isEmpty)
        #expect(store.entries("keys").isEmpty)
        #expect(store.entries("tmp").isEmpty)
    }

    @Test func earlyTooLargeAnswersBeforeTheBodyIsRead() async throws {
        let store = try TemporaryStore()
        let size = 16_000_000
        let path = try sampleFile(store, [UInt8](repeating: 7, count: size))
        var configuration = store.configuration()
        configuration.maxBodySize = 1_000_000
        try await withReferenceServer(configuration: configuration) { port in
            // Without `Expect: 100-continue` curl starts sending at once; it must still get the 413.
            let result = try await curl([
                "-H", "Expect:", "-o", "/dev/null", "-w", "%{http_code} %{size_upload}", "-F", "file=@\(path)",
                "http://127.0.0.1:\(port)/upload",
            ])
            let fields = result.stdout.split(separator: " ")
            #expect(fields.first == "413", "curl: \(result.stderr)")
            let uploaded = Int(fields.last ?? "") ?? size
            #expect(uploaded < size)
        }
        #expect(store.storedFiles().isEmpty)
    }

    @Test func faultStatusesAreVisibleToCurl() async throws {
        let store = try TemporaryStore()
        let path = try sampleFile(store, sampleBytes(count: 10_000))
        try await withReferenceServer(configuration: store.configuration()) { port in
            let url = "http://127.0.0.1:\(port)/upload"
            let limited = try await curl(["-D", "-", "-o", "/dev/null", "-H", "X-Attache-Fault: 429:retry-after=3", "-F", "file=@\(path)", url])
            #expect(limited.stdout.hasPrefix("HTTP/1.1 429"))
            #expect(limited.stdout.lowercased().contains("retry-after: 3"))

            let early = try await curl(["-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Attache-Fault: 413", "-F", "file=@\(path)", url])
            #expect(early.stdout == "413")

            let truncated = try await curl(["-o", "/dev/null", "-H", "X-Attache-Fault: truncated", "-F", "file=@\(path)", url])
            #expect(truncated.exitCode == 18, "curl: \(truncated.stderr)")

            // The stall outlasts curl's patience: curl gives up (28) and the server is shut down under it.
            let stalled = try await curl(["--max-time", "1", "-H", "X-Attache-Fault: stall:seconds=30", "-F", "file=@\(path)", url])
            #expect(stalled.exitCode == 28)

            let stats = try await statistics(port)
            #expect(stats["files"] as? Int == 0)
            #expect(stats["requests"] as? Int == 4)
        }
        #expect(store.storedFiles().isEmpty)
        #expect(store.entries("tmp").isEmpty)
    }

    @Test func shortStallClosesTheConnectionWithoutAnswer() async throws {
        let store = try TemporaryStore()
        let path = try sampleFile(store, sampleBytes(count: 1000))
        try await withReferenceServer(configuration: store.configuration(faults: try FaultPlan(parsing: "stall@1:seconds=0.2"))) { port in
            let url = "http://127.0.0.1:\(port)/upload"
            let stalled = try await curl(["-F", "file=@\(path)", url])
            #expect([52, 56].contains(stalled.exitCode), "curl: \(stalled.stderr)")
            let next = try await curl(["-o", "/dev/null", "-w", "%{http_code}", "-F", "file=@\(path)", url])
            #expect(next.stdout == "200")
        }
    }

    /// The part is written to `tmp/` while the request is still arriving, i.e. it is streamed, not
    /// collected in memory first. (Peak memory itself is not asserted.)
    @Test func filePartIsSpooledToDiskWhileUploadingAndItsKeyIsBusy() async throws {
        let store = try TemporaryStore()
        let size = 1_000_000
        let bytes = sampleBytes(count: size)
        let path = try sampleFile(store, bytes)
        let temporary = store.path + "/tmp"
        try await withReferenceServer(configuration: store.configuration()) { port in
            let url = "http://127.0.0.1:\(port)/upload"
            async let upload = curl(["--limit-rate", "200k", "-H", "Expect:", "-H", "Idempotency-Key: slow-1", "-F", "file=@\(path)", url])
            var partial: Int?
            // Up to 30 s for the first bytes to land: the upload takes 5 s, but a loaded machine may
            // start it late.
            for _ in 0..<1500 where partial == nil {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []
                for name in names where name.hasSuffix(".part") {
                    let attributes = try? FileManager.default.attributesOfItem(atPath: temporary + "/" + name)
                    if let written = (attributes?[.size] as? NSNumber)?.intValue, written > 0 { partial = written }
                }
                if partial == nil { try await Task.sleep(for: .milliseconds(20)) }
            }
            // While the first upload is in flight, its key is taken.
            let concurrent = try await curl(["-D", "-", "-H", "Idempotency-Key: slow-1", "-F", "file=@\(path)", url])
            #expect(concurrent.stdout.hasPrefix("HTTP/1.1 409"))
            #expect(concurrent.stdout.lowercased().contains("retry-after: 1"))
            #expect(concurrent.stdout.contains("upload with this key in progress"))
            let result = try await upload
            #expect(result.exitCode == 0)
            let written = try #require(partial, "no part file appeared in tmp/ during the upload")
            #expect(written < size)
            let data = try #require(try jsonObject(Array(result.stdout.utf8))["data"] as? [String: Any])
            #expect(data["sha256"] as? String == (try await sha256Hex(bytes)))
        }
        #expect(store.entries("tmp").isEmpty)
    }
}
