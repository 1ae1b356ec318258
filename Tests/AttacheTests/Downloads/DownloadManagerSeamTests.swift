import Foundation
import Synchronization
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

/// `DownloadManager` over a scripted transport: what it sends when it resumes from a journal, what it
/// keeps of the bytes on disk, what it records; no socket.
@Suite("Download manager in memory")
struct DownloadManagerSeamTests {
    let payload = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    let url = "http://127.0.0.1:9/files/f"

    func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dm-seam-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("an unfinished transfer in the journal continues with Range and its validator as If-Range")
    func resumesWithIfRange() async throws {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let destination = directory + "/out.bin"
        try Data(payload[..<4000]).write(to: URL(fileURLWithPath: destination + ".part"))
        let journal = InMemoryDownloadJournal()
        try journal.save([
            DownloadRecord(destination: destination, url: url, group: "default", state: .paused, validator: "\"v1\"")
        ])
        let transport = ScriptedTransport([
            .answer(
                status: 206, headers: [HeaderField(name: "Content-Range", value: "bytes 4000-9999/10000"), HeaderField(name: "ETag", value: "\"v1\"")],
                body: Array(payload[4000...]))
        ])
        let digest = try SHA256Digest()
        try payload.withUnsafeBytes { try digest.update($0) }
        let expected = hex(try digest.finish())
        let manager = DownloadManager(journal: journal, transport: transport)
        try manager.add(DownloadItem(url: url, destination: destination, expectedSHA256: expected))
        let summary = try await manager.waitUntilSettled()
        #expect(summary.completed == 1)
        let headers = try #require(transport.sent.first?.headers)
        #expect(headers.contains { $0.name == "Range" && $0.value == "bytes=4000-" })
        #expect(headers.contains { $0.name == "If-Range" && $0.value == "\"v1\"" })
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(payload))
        let record = try #require(try journal.record(for: destination))
        #expect(record.state == .done && record.totalBytes == 10_000)
        // The 4000 bytes kept on disk were read back to check the whole file against the expected digest.
        #expect(record.sha256 == expected)
    }

    @Test("a 200 answer to If-Range replaces the partial bytes instead of appending to them")
    func changedFileStartsOver() async throws {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let destination = directory + "/out.bin"
        try Data(repeating: 0xEE, count: 4000).write(to: URL(fileURLWithPath: destination + ".part"))
        let journal = InMemoryDownloadJournal()
        try journal.save([
            DownloadRecord(destination: destination, url: url, group: "default", state: .active, validator: "\"old\"")
        ])
        let transport = ScriptedTransport([
            .answer(status: 200, headers: [HeaderField(name: "Content-Length", value: "10000"), HeaderField(name: "ETag", value: "\"new\"")], body: payload)
        ])
        let manager = DownloadManager(journal: journal, transport: transport)
        try manager.add(DownloadItem(url: url, destination: destination))
        #expect(try await manager.waitUntilSettled().completed == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(payload))
        #expect(try journal.record(for: destination)?.validator == "\"new\"")
    }

    @Test("a done file is not fetched again by a later manager with the same journal")
    func doneIsSkipped() async throws {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let destination = directory + "/out.bin"
        let journal = InMemoryDownloadJournal()
        let transport = ScriptedTransport([
            .answer(status: 200, headers: [HeaderField(name: "Content-Length", value: "10000")], body: payload)
        ])
        let first = DownloadManager(journal: journal, transport: transport)
        try first.add(DownloadItem(url: url, destination: destination))
        #expect(try await first.waitUntilSettled().completed == 1)

        let second = DownloadManager(journal: journal, transport: transport)
        var events = second.events.makeAsyncIterator()
        let id = try second.add(DownloadItem(url: url, destination: destination))
        let summary = try await second.waitUntilSettled()
        #expect(summary.alreadyDone == 1 && summary.completed == 0)
        #expect(transport.sent.count == 1)
        guard case .alreadyDone(let reported)? = await events.next() else {
            Issue.record("the first event is not alreadyDone")
            return
        }
        #expect(reported == id)
        #expect(second.status(id)?.phase == .completed)
    }
}

/// A transport whose answers wait until the test releases them, recording how many requests were in
/// flight at once, overall and per host.
final class GatedTransport: HTTPTransport {
    private struct State {
        var inFlight: [String: Int] = [:]
        var peakPerHost: [String: Int] = [:]
        var peakOverall = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
        var started = 0
    }

    private let state = Mutex(State())
    let body: [UInt8]

    init(body: [UInt8]) { self.body = body }

    var peakOverall: Int { state.withLock { $0.peakOverall } }
    var peakPerHost: [String: Int] { state.withLock { $0.peakPerHost } }
    var started: Int { state.withLock { $0.started } }

    /// Lets every request waiting now answer.
    func releaseWaiting() -> Int {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
        return waiting.count
    }

    func send(_ request: PreparedRequest, sink: (any ResponseSink)?) async throws -> ServerResponse {
        let host = URL(string: request.url)?.host ?? ""
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            state.withLock { state in
                state.started += 1
                state.inFlight[host, default: 0] += 1
                state.peakPerHost[host] = max(state.peakPerHost[host] ?? 0, state.inFlight[host] ?? 0)
                state.peakOverall = max(state.peakOverall, state.inFlight.values.reduce(0, +))
                state.waiting.append(continuation)
            }
        }
        state.withLock { $0.inFlight[host, default: 1] -= 1 }
        let headers = [HeaderField(name: "Content-Length", value: "\(body.count)")]
        if let sink, sink.begin(status: 200, headers: headers) {
            _ = body.withUnsafeBytes { sink.receive($0) }
        }
        return ServerResponse(status: 200, headers: headers, body: [], bodyExceededCap: false)
    }
}

@Suite("Download manager limits")
struct DownloadManagerLimitTests {
    @Test("no more transfers run than the overall and per-host limits allow, and every one completes")
    func limits() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dm-limit-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let transport = GatedTransport(body: Array(repeating: 7, count: 1000))
        let manager = DownloadManager(
            configuration: .init(maximumConcurrentTransfers: 3, maximumTransfersPerHost: 2), transport: transport)
        for index in 0..<6 {
            try manager.add(DownloadItem(url: "http://a.test/\(index)", destination: directory + "/a\(index)"))
            try manager.add(DownloadItem(url: "http://b.test/\(index)", destination: directory + "/b\(index)"))
        }
        let settled = Task { try await manager.waitUntilSettled() }
        // The first wave fills every slot the limits allow before anything is answered (released at
        // once, a fast scheduler could answer the first two before the third had started).
        let deadline = ContinuousClock.now + .seconds(30)
        while transport.started < 3 {
            try #require(ContinuousClock.now < deadline, "the manager never started its third transfer")
            try await Task.sleep(for: .milliseconds(2))
        }
        // Release the requests in waves as they arrive, until all 12 have been answered.
        var answered = 0
        while answered < 12 {
            let released = transport.releaseWaiting()
            answered += released
            if released == 0 { await Task.yield() }
        }
        let summary = try await settled.value
        #expect(summary.completed == 12)
        #expect(transport.peakOverall == 3)
        #expect(transport.peakPerHost["a.test"] ?? 0 <= 2 && transport.peakPerHost["b.test"] ?? 0 <= 2)
    }
}

@Suite("Download manager per-host keys")
struct DownloadManagerLimitKeyTests {
    func item(_ url: String, store: ObjectStoreEndpoint? = nil) -> DownloadItem {
        var item = DownloadItem(url: url, destination: "/unused")
        item.objectStore = store
        return item
    }

    @Test("an s3:// object counts against its store's endpoint and bucket, an http URL against its host and port")
    func keys() {
        let credentials = AWSCredentials(accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret")
        let local = ObjectStoreEndpoint(
            location: S3Location(bucket: "unused"), credentials: credentials, endpointURL: "http://127.0.0.1:9000",
            addressing: .path)
        let aws = ObjectStoreEndpoint(location: S3Location(bucket: "unused"), credentials: credentials, region: "eu-west-1")
        let key = DownloadManager.limitKey(of:)
        // Path style: the endpoint is the host; each bucket is counted on its own.
        #expect(key(item("s3://photos/a.jpg", store: local)) == "127.0.0.1:9000/photos")
        #expect(key(item("s3://photos/b.jpg", store: local)) == key(item("s3://photos/a.jpg", store: local)))
        #expect(key(item("s3://videos/a.mp4", store: local)) != key(item("s3://photos/a.jpg", store: local)))
        // Virtual-hosted (AWS's own endpoint): the bucket's host.
        #expect(key(item("s3://photos/a.jpg", store: aws)) == "photos.s3.eu-west-1.amazonaws.com/photos")
        // A bucket named like a web host is not that host.
        #expect(key(item("s3://a.test/x", store: local)) != key(item("http://a.test/x")))
        // Ports tell two servers on one machine apart; the scheme's port is the default.
        #expect(key(item("http://127.0.0.1:8080/x")) != key(item("http://127.0.0.1:8081/x")))
        #expect(key(item("http://A.test/x")) == key(item("http://a.test:80/y")))
        #expect(key(item("https://a.test/x")) == "a.test:443")
    }
}
