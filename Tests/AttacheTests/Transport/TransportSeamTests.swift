import Foundation
import Logging
import Synchronization
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

@Suite("Transport seam: retries and answers in memory")
struct TransportSeamTests {
    static let ok = Array(#"{"errorCode":0,"data":{"fileId":"f1"}}"#.utf8)

    func uploader(_ transport: ScriptedTransport, _ sleeps: RecordedSleeps, retry: RetryPolicy = .standard) -> Uploader {
        var connection = ConnectionConfiguration()
        connection.retry = retry
        return Uploader(
            connection: connection, answers: .init(), logger: Logger(label: "test"), transport: transport,
            sleep: sleeps.sleep)
    }

    func request() throws -> UploadRequest {
        var body = MultipartBody()
        try body.addFile(name: "file", filename: "a.bin", contentType: "application/octet-stream", source: DataSource([1, 2, 3]))
        return UploadRequest(url: "http://127.0.0.1:9/upload", body: body, idempotencyKey: "k-1")
    }

    @Test("503 then 200: stored on the second attempt, same idempotency key, one backoff wait")
    func serverErrorThenSuccess() async throws {
        let transport = ScriptedTransport([.answer(status: 503), .answer(status: 200, body: Self.ok)])
        let sleeps = RecordedSleeps()
        let result = try await uploader(transport, sleeps).upload(try request())
        guard case .stored(let receipt) = result.outcome else {
            Issue.record("not stored: \(result.outcome)")
            return
        }
        #expect(receipt.fileId == "f1")
        #expect(result.attempts == 2)
        #expect(result.retryReasons.count == 1)
        #expect(sleeps.all.count == 1)
        #expect(sleeps.all[0] <= .milliseconds(250))
        let keys = transport.sent.map { request in request.headers.first { $0.name == "Idempotency-Key" }?.value }
        #expect(keys == ["k-1", "k-1"])
    }

    @Test("Retry-After replaces the backoff")
    func retryAfterIsHonoured() async throws {
        let transport = ScriptedTransport([
            .answer(status: 429, headers: [HeaderField(name: "Retry-After", value: "7")]), .answer(status: 200, body: Self.ok),
        ])
        let sleeps = RecordedSleeps()
        _ = try await uploader(transport, sleeps).upload(try request())
        #expect(sleeps.all.count == 1)
        #expect(sleeps.all[0] >= .seconds(7))
        #expect(sleeps.all[0] <= .milliseconds(7700))
    }

    @Test("a server never reached is connection-failed after the attempt limit")
    func neverConnected() async throws {
        let refused = AttacheError(.connectionFailed, stage: .upload, "cannot connect", isRetryable: true)
        let transport = ScriptedTransport(Array(repeating: .fail(refused), count: 3))
        let sleeps = RecordedSleeps()
        do {
            _ = try await uploader(transport, sleeps, retry: RetryPolicy(maximumAttempts: 3)).upload(try request())
            Issue.record("no error")
        } catch let error as AttacheError {
            #expect(error.code == .connectionFailed)
            #expect(error.message.contains("gave up after 3 attempts"))
        }
        #expect(sleeps.all.count == 2)
    }

    @Test("once the server was reached, giving up is retries-exhausted")
    func exhausted() async throws {
        let lost = AttacheError(.connectionLost, stage: .upload, "connection lost", isRetryable: true)
        let refused = AttacheError(.connectionFailed, stage: .upload, "cannot connect", isRetryable: true)
        let transport = ScriptedTransport([.fail(lost), .fail(refused)])
        do {
            _ = try await uploader(transport, RecordedSleeps(), retry: RetryPolicy(maximumAttempts: 2)).upload(try request())
            Issue.record("no error")
        } catch let error as AttacheError {
            #expect(error.code == .retriesExhausted)
            #expect(error.stage == .upload)
        }
    }

    @Test("a Retry-After beyond the budget ends the retries at once")
    func budget() async throws {
        let transport = ScriptedTransport([.answer(status: 503, headers: [HeaderField(name: "Retry-After", value: "120")])])
        let sleeps = RecordedSleeps()
        do {
            _ = try await uploader(transport, sleeps, retry: RetryPolicy(budget: .seconds(60))).upload(try request())
            Issue.record("no error")
        } catch let error as AttacheError {
            #expect(error.code == .retriesExhausted)
            #expect(error.stage == .interpret)
            #expect(error.message.contains("time budget"))
        }
        #expect(sleeps.all.isEmpty)
    }

    @Test("a TLS verification failure is not retried")
    func notRetryable() async throws {
        let tls = AttacheError(.tlsFailure, stage: .upload, "TLS verification failed")
        let transport = ScriptedTransport([.fail(tls)])
        do {
            _ = try await uploader(transport, RecordedSleeps()).upload(try request())
            Issue.record("no error")
        } catch let error as AttacheError {
            #expect(error.code == .tlsFailure)
        }
        #expect(transport.sent.count == 1)
    }

    @Test("a rejection ends at once with the server's answer")
    func rejection() async throws {
        let transport = ScriptedTransport([
            .answer(status: 200, body: Array(#"{"errorCode":1001,"message":"quota"}"#.utf8))
        ])
        let result = try await uploader(transport, RecordedSleeps()).upload(try request())
        guard case .rejected(let rejection) = result.outcome else {
            Issue.record("not rejected")
            return
        }
        #expect(rejection.businessCode == "1001")
        #expect(rejection.message == "quota")
        #expect(result.attempts == 1)
    }

    @Test("credentials and the user agent are the transport's to add; the uploader sends its own headers")
    func headers() async throws {
        let transport = ScriptedTransport([.answer(status: 200, body: Self.ok)])
        var connection = ConnectionConfiguration()
        connection.authorization = .bearer("s3cr3t")
        connection.headers = [HeaderField(name: "X-Tenant", value: "acme")]
        let uploader = Uploader(
            connection: connection, answers: .init(), logger: Logger(label: "test"), transport: transport,
            sleep: RecordedSleeps().sleep)
        _ = try await uploader.upload(try request())
        let sent = try #require(transport.sent.first)
        #expect(sent.method == "POST")
        let lines = sent.headerLines(withCredentials: true)
        #expect(lines.contains("Authorization: Bearer s3cr3t"))
        #expect(lines.contains("X-Tenant: acme"))
        #expect(lines.contains("Expect:"))
        #expect(lines.contains { $0.hasPrefix("User-Agent: attache/") })
        let elsewhere = sent.headerLines(withCredentials: false)
        #expect(!elsewhere.contains { $0.lowercased().hasPrefix("authorization") })
        #expect("\(HTTPAuthorization.bearer("s3cr3t"))" == "Bearer <redacted>")
        #expect(!"\(HTTPAuthorization.basic(user: "u", password: "pw"))".contains("pw"))
    }

    @Test("a download broken mid-body continues with Range from the bytes on disk")
    func downloadResumesInMemory() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("seam-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let payload = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let lost = AttacheError(.connectionLost, stage: .upload, "connection lost", isRetryable: true)
        let transport = ScriptedTransport([
            .fail(lost, afterStatus: 200, headers: [HeaderField(name: "Content-Length", value: "10000")], body: Array(payload[..<4000])),
            .answer(
                status: 206, headers: [HeaderField(name: "Content-Range", value: "bytes 4000-9999/10000")], body: Array(payload[4000...])),
        ])
        let sleeps = RecordedSleeps()
        let downloader = Downloader(configuration: .init(), transport: transport, sleep: sleeps.sleep)
        let destination = directory.appendingPathComponent("out.bin").path
        let receipt = try await downloader.download(DownloadRequest(url: "http://127.0.0.1:9/f", destination: destination))
        #expect(receipt.attempts == 2)
        #expect(receipt.byteCount == 10_000)
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(payload))
        let ranges = transport.sent.map { request in request.headers.first { $0.name == "Range" }?.value }
        #expect(ranges == [nil, "bytes=4000-"])
        #expect(sleeps.all.count == 1)
    }

    @Test("a download into a FIFO is written in place after it is verified; the FIFO is never replaced")
    func downloadIntoAFIFO() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("seam-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("pipe").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let payload = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let transport = ScriptedTransport([.answer(status: 200, headers: [HeaderField(name: "Content-Length", value: "50000")], body: payload)])
        let received = Task.detached { () -> Data in
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: fifo))
            defer { try? handle.close() }
            return try handle.readToEnd() ?? Data()
        }
        let request = DownloadRequest(url: "http://127.0.0.1:9/f", destination: fifo)
        #expect(!request.partialPath.hasPrefix(fifo), "the partial file must not sit beside a FIFO")
        let downloader = Downloader(configuration: .init(), transport: transport, sleep: RecordedSleeps().sleep)
        let receipt = try await downloader.download(request)
        #expect(receipt.byteCount == 50_000)
        #expect(try await received.value == Data(payload))
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the FIFO was replaced")
        #expect(!FileManager.default.fileExists(atPath: request.partialPath))
    }

    @Test("a 404 download is a rejection without retries")
    func downloadNotFound() async throws {
        let transport = ScriptedTransport([.answer(status: 404, body: Array("no such file".utf8))])
        let downloader = Downloader(configuration: .init(), transport: transport, sleep: RecordedSleeps().sleep)
        do {
            _ = try await downloader.download(DownloadRequest(url: "http://127.0.0.1:9/f", destination: "/nonexistent/x"))
            Issue.record("no error")
        } catch let error as AttacheError {
            #expect(error.code == .rejected)
            #expect(error.message.contains("404"))
            #expect(error.message.contains("no such file"))
        }
        #expect(transport.sent.count == 1)
    }
}

@Suite("Transport redirect policy")
struct RedirectPolicyTests {
    let transport = CurlTransport.shared

    func post(_ url: String = "https://a.example/upload") -> TransportRequest {
        TransportRequest(
            method: "POST", url: url, headers: [HeaderField(name: "Content-Type", value: "multipart/form-data; boundary=x")],
            body: DataSource([1, 2, 3]))
    }

    func answer(_ status: Int, _ location: String) -> ServerResponse {
        ServerResponse(status: status, headers: [HeaderField(name: "Location", value: location)])
    }

    @Test("307 and 308 keep the method and the body")
    func keepBody() throws {
        for status in [307, 308] {
            let next = try #require(try transport.redirect(after: answer(status, "/v2/upload"), of: post()))
            #expect(next.method == "POST")
            #expect(next.body != nil)
            #expect(next.url == "https://a.example/v2/upload")
        }
    }

    @Test("303 after a POST fetches the answer with GET and no body")
    func seeOther() throws {
        let next = try #require(try transport.redirect(after: answer(303, "https://a.example/result/1"), of: post()))
        #expect(next.method == "GET")
        #expect(next.body == nil)
        #expect(!next.headers.contains { $0.name == "Content-Type" })
    }

    @Test("301 and 302 after a POST are answers, not hops")
    func notFollowed() throws {
        for status in [301, 302] {
            #expect(try transport.redirect(after: answer(status, "/elsewhere"), of: post()) == nil)
        }
        let get = TransportRequest(method: "GET", url: "https://a.example/f")
        #expect(try transport.redirect(after: answer(302, "https://cdn.example/f"), of: get)?.url == "https://cdn.example/f")
    }

    @Test("https never leads to http")
    func downgrade() throws {
        let get = TransportRequest(method: "GET", url: "https://a.example/f")
        #expect(throws: AttacheError.self) { try transport.redirect(after: answer(302, "http://a.example/f"), of: get) }
    }
}
