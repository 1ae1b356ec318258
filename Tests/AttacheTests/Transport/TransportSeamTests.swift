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
            // The last answer is read from the error, not its text.
            #expect(error.rejection?.status == 503)
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
    func post(_ url: String = "https://a.example/upload") throws -> PreparedRequest {
        try TransportRequest(
            method: "POST", url: url, headers: [HeaderField(name: "Content-Type", value: "multipart/form-data; boundary=x")],
            body: DataSource([1, 2, 3])
        ).prepared()
    }

    func answer(_ status: Int, _ location: String) -> ServerResponse {
        ServerResponse(status: status, headers: [HeaderField(name: "Location", value: location)])
    }

    @Test("307 and 308 keep the method and the body")
    func keepBody() throws {
        for status in [307, 308] {
            let next = try #require(try RedirectState.target(after: answer(status, "/v2/upload"), of: post()))
            #expect(next.method == "POST")
            #expect(next.body != nil)
            #expect(next.url == "https://a.example/v2/upload")
        }
    }

    @Test("303 after a POST fetches the answer with GET and no body")
    func seeOther() throws {
        let next = try #require(try RedirectState.target(after: answer(303, "https://a.example/result/1"), of: post()))
        #expect(next.method == "GET")
        #expect(next.body == nil)
        #expect(!next.headers.contains { $0.name == "Content-Type" })
    }

    @Test("301 and 302 after a POST are answers, not hops")
    func notFollowed() throws {
        for status in [301, 302] {
            #expect(try RedirectState.target(after: answer(status, "/elsewhere"), of: post()) == nil)
        }
        let get = try TransportRequest(method: "GET", url: "https://a.example/f").prepared()
        #expect(try RedirectState.target(after: answer(302, "https://cdn.example/f"), of: get)?.url == "https://cdn.example/f")
    }

    @Test("https never leads to http")
    func downgrade() throws {
        let get = try TransportRequest(method: "GET", url: "https://a.example/f").prepared()
        #expect(throws: TransportError.self) { try RedirectState.target(after: answer(302, "http://a.example/f"), of: get) }
    }

    @Test("hops are counted up to the policy's limit, and credentials stay with the origin host")
    func hopsAndCredentials() throws {
        var request = TransportRequest(method: "GET", url: "https://a.example/f")
        request.connection.redirects.maximumHops = 1
        let origin = try request.prepared()
        var state = RedirectState(origin: origin)
        #expect(state.sendsCredentials(to: origin))
        let next = try #require(try state.next(after: answer(302, "https://B.example/g"), of: origin))
        #expect(next.target.host == "b.example")
        #expect(!state.sendsCredentials(to: next))
        #expect(state.sendsCredentials(to: try TransportRequest(method: "GET", url: "https://A.EXAMPLE/h").prepared()))
        #expect(!state.mayFollow)
        #expect(try state.next(after: answer(302, "https://a.example/again"), of: next) == nil)
    }
}

@Suite("Prepared requests")
struct PreparedRequestTests {
    @Test(
        "http and https URLs with a host are parsed once into scheme and host",
        arguments: [
            ("http://example.com", false, "example.com"),
            ("HTTPS://User:pw@Example.COM:8443/p?q=1#f", true, "example.com"),
            ("http://127.0.0.1:8080/upload", false, "127.0.0.1"),
            ("https://[::1]:443/x", true, "[::1]"),
            ("http://a.example?x=1", false, "a.example"),
        ])
    func parses(url: String, https: Bool, host: String) throws {
        let prepared = try TransportRequest(method: "GET", url: url).prepared()
        #expect(prepared.target.isHTTPS == https)
        #expect(prepared.target.host == host)
        #expect(prepared.url == url)
    }

    @Test(
        "anything else is refused as an invalid argument",
        arguments: ["", "example.com", "ftp://example.com/f", "http:/example.com", "http://", "http://:80/",
            "http://a b.example/", "http://example.com/a b", "http://example.com:8o/", "http://[::1/",
            "http://example.com/\u{e9}", "http://example.com/\n"])
    func refuses(url: String) {
        let error = #expect(throws: TransportError.self) { try TransportRequest(method: "GET", url: url).prepared() }
        #expect(error?.code == .invalidArgument)
    }

    @Test("a header that cannot be sent is refused by name, its value never shown")
    func badHeader() throws {
        let request = TransportRequest(
            method: "GET", url: "https://a.example/", headers: [HeaderField(name: "X-Token", value: "se\r\ncret")])
        let error = #expect(throws: TransportError.self) { try request.prepared() }
        #expect(error?.message.contains("X-Token") == true)
        #expect(error?.message.contains("cret") == false)
        let good = try TransportRequest(method: "GET", url: "https://a.example/").prepared()
        #expect(throws: TransportError.self) { try good.replacingHeaders([HeaderField(name: "Bad Name", value: "v")]) }
        #expect(try good.replacingHeaders([HeaderField(name: "Range", value: "bytes=5-")]).headers.count == 1)
    }

    @Test("a transport failure takes the stage of the operation that met it")
    func attribution() {
        let failure = TransportError(.connectionLost, "connection lost", isRetryable: true)
        let error = failure.attributed(to: .download, file: "https://a.example/f")
        #expect(error.stage == .download)
        #expect(error.code == .connectionLost)
        #expect(error.isRetryable)
        #expect(error.file == "https://a.example/f")
        let other = AttacheError(.fileChanged, stage: .seal, "changed")
        #expect((other.attributed(to: .upload) as? AttacheError)?.stage == .seal)
    }
}

/// The one retry rule, and that every operation follows it: the same statuses, the same reading of
/// `Retry-After`, the same cap.
@Suite("One retry rule for every operation")
struct RetryRuleTests {
    static let farFuture = "Wed, 01 Jan 2098 00:00:00 GMT"

    static func httpDate(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var fields = tm()
        gmtime_r(&seconds, &fields)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(fields.tm_wday)]), \(two(fields.tm_mday)) \(months[Int(fields.tm_mon)]) \(fields.tm_year + 1900) "
            + "\(two(fields.tm_hour)):\(two(fields.tm_min)):\(two(fields.tm_sec)) GMT"
    }

    @Test("408, 425, 429, 500, 502, 503, 504 are retried; 501, 505 and other statuses are not")
    func statuses() {
        let rule = RetryClassifier.standard
        for status in [408, 425, 429, 500, 502, 503, 504] { #expect(rule.isRetryable(status: status), "\(status)") }
        for status in [200, 301, 400, 401, 404, 409, 413, 501, 505, 511] { #expect(!rule.isRetryable(status: status), "\(status)") }
    }

    @Test("Retry-After as delta-seconds and as an HTTP-date, capped at five minutes")
    func retryAfter() {
        let rule = RetryClassifier.standard
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(rule.retryAfter("7", now: now) == .seconds(7))
        #expect(rule.retryAfter(" 0 ", now: now) == .zero)
        #expect(rule.retryAfter("99999", now: now) == .seconds(300))
        #expect(rule.retryAfter(Self.httpDate(now.addingTimeInterval(42)), now: now) == .seconds(42))
        #expect(rule.retryAfter(Self.httpDate(now.addingTimeInterval(-42)), now: now) == .zero)
        #expect(rule.retryAfter(Self.farFuture, now: now) == .seconds(300))
        #expect(rule.retryAfter("soon", now: now) == nil)
        #expect(rule.retryAfter("-3", now: now) == nil)
        #expect(rule.retryAfter(nil, now: now) == nil)
    }

    func downloader(_ transport: ScriptedTransport, _ sleeps: RecordedSleeps) -> Downloader {
        Downloader(configuration: .init(), transport: transport, sleep: sleeps.sleep)
    }

    func scratch() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rule-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// True when `wait` is what a `Retry-After` date 30 s after `issued` asks for: 30 s less the time the
    /// test took to get that far (measured, not assumed: a loaded machine can take many seconds) and the
    /// date's one-second resolution, plus at most 10 % jitter.
    static func honoursDate(_ wait: Duration, issued: Date) -> Bool {
        let elapsed = Date().timeIntervalSince(issued)
        let lowest = max(0, 29 - elapsed) * 0.9
        return wait >= .milliseconds(Int64(lowest * 1000)) && wait <= .seconds(33)
    }

    @Test("a download honours Retry-After as an HTTP-date, and the cap")
    func downloadRetryAfter() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let issued = Date()
        let soon = Self.httpDate(issued.addingTimeInterval(30))
        let transport = ScriptedTransport([
            .answer(status: 503, headers: [HeaderField(name: "Retry-After", value: soon)]),
            .answer(status: 429, headers: [HeaderField(name: "Retry-After", value: Self.farFuture)]),
            .answer(status: 200, body: [1, 2, 3]),
        ])
        let sleeps = RecordedSleeps()
        let destination = directory.appendingPathComponent("out.bin").path
        let receipt = try await downloader(transport, sleeps).download(
            DownloadRequest(url: "http://127.0.0.1:9/f", destination: destination))
        #expect(receipt.attempts == 3)
        #expect(sleeps.all.count == 2)
        #expect(Self.honoursDate(sleeps.all[0], issued: issued))
        #expect(sleeps.all[1] >= .seconds(300) && sleeps.all[1] <= .seconds(330))
    }

    @Test("a download does not retry 501 (the rule is the upload's)")
    func downloadDoesNotRetry501() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = ScriptedTransport([.answer(status: 501)])
        let error = await #expect(throws: AttacheError.self) {
            _ = try await downloader(transport, RecordedSleeps()).download(
                DownloadRequest(url: "http://127.0.0.1:9/f", destination: directory.appendingPathComponent("o").path))
        }
        #expect(error?.stage == .download)
        #expect(error?.isRetryable == false)
        #expect(transport.sent.count == 1)
    }

    @Test("a download's transport failure is the download's, not the upload's")
    func downloadFailureStage() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let refused = AttacheError(.connectionFailed, stage: .upload, "cannot connect", isRetryable: true)
        let transport = ScriptedTransport([.fail(refused), .fail(refused)])
        var connection = ConnectionConfiguration()
        connection.retry = RetryPolicy(maximumAttempts: 2)
        let error = await #expect(throws: AttacheError.self) {
            _ = try await Downloader(configuration: connection, transport: transport, sleep: RecordedSleeps().sleep)
                .download(DownloadRequest(url: "http://127.0.0.1:9/f", destination: directory.appendingPathComponent("o").path))
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.stage == .download)
        #expect((error?.cause as? AttacheError)?.stage == .download)
    }

    @Test("a request honours Retry-After as an HTTP-date and the cap, and does not retry 501")
    func requestRetryAfter() async throws {
        let issued = Date()
        let soon = Self.httpDate(issued.addingTimeInterval(30))
        let transport = ScriptedTransport([
            .answer(status: 503, headers: [HeaderField(name: "Retry-After", value: soon)]),
            .answer(status: 503, headers: [HeaderField(name: "Retry-After", value: "86400")]),
            .answer(status: 501),
        ])
        let sleeps = RecordedSleeps()
        let client = RequestClient(configuration: .init(), transport: transport, sleep: sleeps.sleep)
        let response = try await client.get("http://127.0.0.1:9/r")
        #expect(response.status == 501)
        #expect(transport.sent.count == 3)
        #expect(sleeps.all.count == 2)
        #expect(Self.honoursDate(sleeps.all[0], issued: issued))
        #expect(sleeps.all[1] >= .seconds(300) && sleeps.all[1] <= .seconds(330))
    }

    @Test("an upload does not retry 501 either")
    func uploadDoesNotRetry501() async throws {
        let transport = ScriptedTransport([.answer(status: 501)])
        var body = MultipartBody()
        try body.addFile(name: "file", filename: "a.bin", contentType: "application/octet-stream", source: DataSource([1]))
        let result = try await Uploader(
            connection: .init(), answers: .init(), logger: Logger(label: "test"), transport: transport,
            sleep: RecordedSleeps().sleep
        ).upload(UploadRequest(url: "http://127.0.0.1:9/upload", body: body))
        guard case .rejected(let rejection) = result.outcome else {
            Issue.record("not rejected: \(result.outcome)")
            return
        }
        #expect(rejection.status == 501)
        #expect(transport.sent.count == 1)
    }
}
