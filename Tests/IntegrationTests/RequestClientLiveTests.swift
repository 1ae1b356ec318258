import Attache
import Foundation
import Synchronization
import AttacheTestSupport
import Testing

/// `RequestClient` on the real transport against PHP's built-in server (`Tools/request_echo.php`):
/// cancellation, progress both ways, decompression, timings, the blocking form.
@Suite("RequestClient against PHP", .serialized)
struct RequestClientLiveTests {
    /// Runs `body` with the PHP echo server (``ReceiverProcess/withPHPEcho(_:)``).
    func withEcho<T>(_ body: (String) async throws -> T) async throws -> T {
        try await ReceiverProcess.withPHPEcho(body)
    }

    @Test("cancelling the task stops a request the server sits on, with `cancelled`")
    func cancellation() async throws {
        let transport = CurlTransport()
        let client = RequestClient(transport: transport)
        let outcome = try await withEcho { base in
            let task = Task { try await client.get(base + "/sleep?s=60") }
            // Wait for the transfer to be on the loop (an event, not a guess at how long it takes).
            while transport.activeTransfers == 0 { try await Task.sleep(for: .milliseconds(5)) }
            task.cancel()
            return await task.result
        }
        switch outcome {
        case .success(let response): Issue.record("not cancelled: HTTP \(response.status)")
        case .failure(let error):
            #expect((error as? AttacheError)?.code == .cancelled, "\(error)")
            #expect((error as? AttacheError)?.stage == .request)
        }
    }

    @Test("progress: a 6 MB body up (PUT from a file) and a 6 MB answer down, counts rising to the totals")
    func progressBothWays() async throws {
        let size = 6_000_000
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-http-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let bytes = randomBytes(size)
        try Data(bytes).write(to: URL(fileURLWithPath: folder + "/up.bin"))
        var configuration = RequestClient.Configuration()
        configuration.acceptsCompressedResponses = false
        let client = RequestClient(configuration: configuration)
        let sent = Mutex<[Int64]>([])
        let received = Mutex<[(Int64, Int64?)]>([])
        let (up, down) = try await withEcho { base in
            let up = try await client.send(
                ClientRequest(method: .put, url: base + "/count", body: try .file(path: folder + "/up.bin")),
                progress: { progress in sent.withLock { $0.append(progress.bytesSent) } })
            let down = try await client.send(
                ClientRequest(url: base + "/bytes?n=\(size)"),
                progress: { progress in received.withLock { $0.append((progress.bytesReceived, progress.bytesToReceive)) } })
            return (up, down)
        }
        #expect(up.status == 200)
        let count = try up.json
        #expect(count["bytes"]?.intValue == size)
        #expect(count["sha256"]?.stringValue == (try await sha256Hex(bytes)))
        let sentCounts = sent.withLock { $0 }
        #expect(sentCounts.last == Int64(size))
        #expect(sentCounts.count > 2)
        #expect(zip(sentCounts, sentCounts.dropFirst()).allSatisfy { $0 <= $1 })

        #expect(down.body.count == size)
        let receivedCounts = received.withLock { $0 }
        #expect(receivedCounts.last?.0 == Int64(size))
        #expect(receivedCounts.contains { $0.1 == Int64(size) })
        #expect(zip(receivedCounts, receivedCounts.dropFirst()).allSatisfy { $0.0 <= $1.0 })
    }

    @Test("a gzip answer is decoded; timings and the wire size are reported")
    func decompression() async throws {
        let client = RequestClient()
        let response = try await withEcho { base in try await client.get(base + "/bytes?n=200000") }
        #expect(response.header("Content-Encoding") == "gzip")
        #expect(response.body.count == 200_000)
        #expect(response.text.hasPrefix("0123456789012"))
        let timings = try #require(response.timings)
        #expect(timings.bytesReceived > 0 && timings.bytesReceived < 200_000)
        #expect(timings.total >= timings.firstByte)
        #expect(timings.firstByte >= timings.connect)
    }

    @Test("curl handles reused from earlier requests carry nothing over: each request arrives as sent")
    func reusedHandlesStartClean() async throws {
        // One transport, one request at a time: every request after the first runs on the reset handle of
        // the one before it.
        let client = RequestClient(transport: CurlTransport())
        let reports = try await withEcho { base in
            var reports: [JSONValue] = []
            let first = ClientRequest(
                method: .patch, url: base + "/a", headers: [HeaderField(name: "X-Once", value: "1")],
                body: try .json(.object(["n": .number(1)])))
            reports.append(try await client.send(first).json)
            reports.append(try await client.get(base + "/b").json)
            reports.append(try await client.delete(base + "/c").json)
            reports.append(try await client.send(ClientRequest(method: .post, url: base + "/d")).json)
            // A small body of no stated type (curl is handed it whole, as post fields).
            let untyped = ClientRequest(method: .put, url: base + "/e", body: .bytes(Array(repeating: 0x41, count: 1_000), contentType: nil))
            reports.append(try await client.send(untyped).json)
            return reports
        }
        #expect(reports.map { $0["method"]?.stringValue } == ["PATCH", "GET", "DELETE", "POST", "PUT"])
        #expect(reports.map { $0["path"]?.stringValue } == ["/a", "/b", "/c", "/d", "/e"])
        #expect(reports[0]["json"]?["n"]?.intValue == 1)
        #expect(reports[0]["headers"]?["X-Once"]?.stringValue == "1")
        for report in reports.dropFirst().dropLast() {
            #expect(report["body"]?.stringValue == "")
            #expect(report["headers"]?["X-Once"] == nil)
        }
        // The PATCH's JSON type stays with the PATCH, and no request gets curl's own form type: not the
        // bodiless POST, not the untyped PUT (a server parsing it as a form takes its bytes).
        for report in reports.dropFirst() {
            #expect(report["headers"]?["Content-Type"] == nil, "\(report["method"] ?? .null)")
        }
        #expect(reports[4]["body"]?.stringValue == String(repeating: "A", count: 1_000))
    }

    @Test("sendBlocking on the real transport from a plain thread")
    func blocking() async throws {
        let client = RequestClient()
        let status = try await withEcho { base in
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
                Thread {
                    continuation.resume(with: Result { try client.sendBlocking(ClientRequest(url: base + "/ping?status=203")).status })
                }.start()
            }
        }
        #expect(status == 203)
    }
}
