import Foundation
import Logging
import Synchronization
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

/// The client core: every operation runs on the client's one attempt loop, so one adapter, one retrier
/// and one classifier reach all of them.
///
/// Each operation meets the same script at the point where it sends its retried request: a connection
/// reset (retried by the client's rule), a `409` with `Retry-After: 2` (retried only because this
/// client's classifier says 409 is), then a `503` (not retried: this classifier leaves it out). Each case
/// checks the same four things: the adapter saw every request; the retrier was asked after each of the
/// three failures; the classifier was obeyed (no fourth attempt of that request); `Retry-After` set the
/// wait, and the operation ended with the right outcome or the error of the right stage.
@Suite("Client core")
struct ClientCoreTests {
    static let ok = Array(#"{"errorCode":0,"data":{"fileId":"f1"}}"#.utf8)
    static let reset = ScriptedTransport.Step.fail(AttacheError(.connectionLost, stage: .upload, "reset by peer", isRetryable: true))
    static let conflict = ScriptedTransport.Step.answer(status: 409, headers: [HeaderField(name: "Retry-After", value: "2")])
    static let unavailable = ScriptedTransport.Step.answer(status: 503)
    /// The three failures every case meets.
    static let failures = [reset, conflict, unavailable]

    /// Counts the requests it sees and stamps them.
    final class CountingAdapter: RequestAdapter {
        let seen = Mutex<[String]>([])
        func adapt(_ request: ClientRequest) async throws -> ClientRequest {
            seen.withLock { $0.append("\(request.method) \(request.url)") }
            var request = request
            request.setHeader("X-Tenant", "t1")
            return request
        }
    }

    /// Records what it is asked after every attempt, and leaves the decision to the client.
    final class RecordingRetrier: RequestRetrier {
        let asked = Mutex<[String]>([])
        func retry(_ request: ClientRequest, response: ServerResponse?, error: AttacheError?, attempt: Int) async -> RetryDecision {
            if let error {
                asked.withLock { $0.append(error.code.rawValue) }
            } else if let status = response?.status, status >= 300 {
                asked.withLock { $0.append(String(status)) }
            }
            return .useDefault
        }
    }

    /// One case: a client with the adapter, the retrier, the 409-yes-503-no classifier and recorded waits.
    struct Probe {
        let transport: ScriptedTransport
        let adapter = CountingAdapter()
        let retrier = RecordingRetrier()
        let sleeps = RecordedSleeps()
        let client: AttacheClient

        init(_ steps: [ScriptedTransport.Step]) {
            transport = ScriptedTransport(steps)
            var connection = ConnectionConfiguration()
            connection.retry = RetryPolicy(
                maximumAttempts: 6, initialDelay: .milliseconds(10), maximumDelay: .milliseconds(10), jitter: 0,
                budget: .seconds(60))
            var statuses = RetryClassifier.retryableStatuses
            statuses.insert(409)
            statuses.remove(503)
            client = AttacheClient(
                connection: connection, transport: transport, retry: RetryClassifier(statuses: statuses),
                interceptors: ClientInterceptors(adapters: [adapter], retriers: [retrier]), sleep: sleeps.sleep)
        }

        /// The four things, for an operation that sent `requests` requests in all.
        func expectTheFourThings(requests: Int, sourceLocation: SourceLocation = #_sourceLocation) {
            let sent = transport.sent
            #expect(sent.count == requests, "\(sent.map { "\($0.method) \($0.url)" })", sourceLocation: sourceLocation)
            // One adapter sees every request, and what it adds is sent.
            #expect(adapter.seen.withLock { $0.count } == requests, sourceLocation: sourceLocation)
            #expect(sent.allSatisfy { $0.headers.contains { $0.name == "X-Tenant" && $0.value == "t1" } }, sourceLocation: sourceLocation)
            // One retrier is asked after every failure.
            #expect(retrier.asked.withLock { $0 }.suffix(3) == ["connection-lost", "409", "503"], sourceLocation: sourceLocation)
            // The classifier: the reset and the 409 were retried, the 503 was not; Retry-After set the second wait.
            let waits = sleeps.all
            #expect(waits.count == 2, "\(waits)", sourceLocation: sourceLocation)
            #expect(waits.first == .milliseconds(10), sourceLocation: sourceLocation)
            if let last = waits.last {
                #expect(last >= .seconds(2) && last <= .milliseconds(2200), "\(last)", sourceLocation: sourceLocation)
            }
        }
    }

    static func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("core-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("multipart upload")
    func multipart() async throws {
        let probe = Probe(Self.failures)
        var body = MultipartBody()
        try body.addFile(name: "file", filename: "a.bin", contentType: "application/octet-stream", source: DataSource([1, 2]))
        let result = try await probe.client.upload(UploadRequest(url: "http://127.0.0.1:9/upload", body: body))
        probe.expectTheFourThings(requests: 3)
        guard case .rejected(let rejection) = result.outcome else {
            Issue.record("not refused: \(result.outcome)")
            return
        }
        #expect(rejection.status == 503)
        #expect(result.attempts == 3)
    }

    @Test("resumable upload, tus")
    func resumableTus() async throws {
        let probe = Probe([Self.reset, ResumableUploaderTests.tusOptions, Self.conflict, Self.unavailable])
        let result = try #require(
            try await probe.client.resumableUploader(
                configuration: ResumableConfiguration(mode: .tus, threshold: 0, initialAppendSize: 1000)
            ).upload(ResumableUploadRequest(url: "http://127.0.0.1:9/files", body: DataSource([1, 2, 3]), filename: "a.bin")))
        // OPTIONS twice (after the reset), then the creation POST twice (after the 409).
        probe.expectTheFourThings(requests: 4)
        #expect(probe.transport.sent.map(\.method) == ["OPTIONS", "OPTIONS", "POST", "POST"])
        guard case .rejected(let rejection) = result.upload.outcome else {
            Issue.record("not refused: \(result.upload.outcome)")
            return
        }
        #expect(rejection.status == 503)
    }

    @Test("resumable upload, IETF draft")
    func resumableIETF() async throws {
        // The creation POST is reset and sent again; the server has everything, and the HEAD that asks
        // for its receipt meets the 409 and then the 503.
        let probe = Probe([
            Self.reset,
            .answer(status: 201, headers: [HeaderField(name: "Location", value: "/up/1"), HeaderField(name: "Upload-Offset", value: "3")]),
            Self.conflict, Self.unavailable,
        ])
        let error = await #expect(throws: AttacheError.self) {
            _ = try await probe.client.resumableUploader(
                configuration: ResumableConfiguration(mode: .ietf, threshold: 0, initialAppendSize: 1000)
            ).upload(ResumableUploadRequest(url: "http://127.0.0.1:9/files", body: DataSource([1, 2, 3]), filename: "a.bin"))
        }
        probe.expectTheFourThings(requests: 4)
        #expect(probe.transport.sent.map(\.method) == ["POST", "POST", "HEAD", "HEAD"])
        #expect(error?.stage == .upload)
        #expect(error?.message.contains("503") == true)
    }

    @Test("object store, a single PUT")
    func objectPut() async throws {
        let probe = Probe(Self.failures)
        let requester = ObjectRequester(client: probe.client, signer: nil, logger: Logger(label: "test"))
        let answer = try await requester.send(
            ObjectRequest(method: "PUT", target: .presigned("http://127.0.0.1:9/bucket/key?X-Amz-Signature=abc"), body: DataSource([1])))
        probe.expectTheFourThings(requests: 3)
        guard case .rejected(let rejection) = answer.outcome else {
            Issue.record("not refused: \(answer.outcome)")
            return
        }
        #expect(rejection.status == 503)
    }

    @Test("object store, a multipart upload")
    func objectMultipart() async throws {
        let store = ObjectStoreEndpoint(
            location: S3Location(bucket: "b"),
            credentials: AWSCredentials(accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", sessionToken: nil),
            region: "us-east-1", endpointURL: "http://127.0.0.1:9", addressing: .path)
        let xml = [HeaderField(name: "Content-Type", value: "application/xml")]
        let probe = Probe(
            [
                .answer(status: 200, headers: xml, body: Array("<ListMultipartUploadsResult></ListMultipartUploadsResult>".utf8)),
                .answer(status: 404),
                .answer(
                    status: 200, headers: xml,
                    body: Array("<InitiateMultipartUploadResult><UploadId>u1</UploadId></InitiateMultipartUploadResult>".utf8)),
            ] + Self.failures + [.answer(status: 204)])
        let requester = ObjectRequester(client: probe.client, signer: store.signer, logger: Logger(label: "test"))
        let upload = MultipartObjectUpload(
            requester: requester, store: store, key: "k", payload: DataSource([1, 2, 3]), contentType: "application/octet-stream")
        let error = await #expect(throws: AttacheError.self) { _ = try await upload.run(progress: nil) }
        // List, HEAD, create, the part three times, then the abort.
        probe.expectTheFourThings(requests: 7)
        #expect(probe.transport.sent.map(\.method) == ["GET", "HEAD", "POST", "PUT", "PUT", "PUT", "DELETE"])
        #expect(error?.code == .rejected)
        #expect(error?.stage == .interpret)
        #expect(error?.message.contains("part 1 of 1") == true)
    }

    @Test("an endpoint signed by the adapters: each attempt of a part goes to the URL they give, with the whole body")
    func objectSignedByAdapters() async throws {
        /// Puts an attempt's own signature in the query, as a presigning adapter puts a presigned URL.
        final class Presigner: RequestAdapter {
            let signed = Mutex<[String]>([])
            func adapt(_ request: ClientRequest) async throws -> ClientRequest {
                let number = signed.withLock { seen in
                    seen.append(request.url)
                    return seen.count
                }
                var request = request
                request.url += "&X-Amz-Signature=s\(number)"
                return request
            }
        }
        let transport = ScriptedTransport([.answer(status: 503), .answer(status: 200, headers: [HeaderField(name: "ETag", value: "\"e1\"")])])
        let presigner = Presigner()
        var connection = ConnectionConfiguration()
        connection.retry = RetryPolicy(
            maximumAttempts: 3, initialDelay: .milliseconds(10), maximumDelay: .milliseconds(10), jitter: 0, budget: .seconds(60))
        let client = AttacheClient(
            connection: connection, transport: transport, interceptors: ClientInterceptors(adapters: [presigner]),
            sleep: RecordedSleeps().sleep)
        let store = ObjectStoreEndpoint(
            location: S3Location(bucket: "b"), signing: .adapters, endpointURL: "http://127.0.0.1:9", addressing: .path)
        #expect(store.signer == nil)
        let requester = ObjectRequester(client: client, signer: store.signer, logger: Logger(label: "test"))
        let part = randomBytes(300_000)
        let answer = try await requester.send(
            ObjectRequest(
                method: "PUT", target: .signed(try store.address(forKey: "k", query: [("partNumber", "2"), ("uploadId", "u1")])),
                body: DataSource(part), payloadHash: SigV4Signer.unsignedPayload))
        guard case .stored = answer.outcome else {
            Issue.record("not stored: \(answer.outcome)")
            return
        }
        // The adapter ran for each attempt, on the object's own URL; each attempt went to the URL it gave.
        let unsigned = "http://127.0.0.1:9/b/k?partNumber=2&uploadId=u1"
        #expect(presigner.signed.withLock { $0 } == [unsigned, unsigned])
        let sent = transport.sent
        #expect(sent.map(\.url) == [unsigned + "&X-Amz-Signature=s1", unsigned + "&X-Amz-Signature=s2"])
        // Attache signed nothing itself, and each attempt carried the whole part.
        for request in sent {
            #expect(!request.headers.contains { $0.name.lowercased() == "authorization" || $0.name.lowercased().hasPrefix("x-amz-") })
            #expect(try request.body?.makeReader().readToEnd() == part)
        }
    }

    @Test("download")
    func download() async throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let probe = Probe(Self.failures)
        let error = await #expect(throws: AttacheError.self) {
            _ = try await probe.client.download(DownloadRequest(url: "http://127.0.0.1:9/f", destination: directory + "/out.bin"))
        }
        probe.expectTheFourThings(requests: 3)
        #expect(error?.stage == .download)
        #expect(error?.code == .rejected)
        #expect(error?.message.contains("503") == true)
    }

    @Test("download manager")
    func downloadManager() async throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let probe = Probe(Self.failures)
        let manager = probe.client.downloadManager()
        _ = try manager.add(DownloadItem(url: "http://127.0.0.1:9/f", destination: directory + "/out.bin"))
        // The one transfer ends one way or another; the failure carries its error.
        var failure: AttacheError?
        events: for await event in manager.events {
            switch event {
            case .failed(_, let error):
                failure = error
                break events
            case .completed, .cancelled:
                break events
            default:
                continue
            }
        }
        let summary = try await manager.waitUntilSettled()
        probe.expectTheFourThings(requests: 3)
        #expect(summary.failed == 1)
        #expect(failure?.stage == .download)
        #expect(failure?.message.contains("503") == true)
    }

    @Test("request layer")
    func requestLayer() async throws {
        let probe = Probe(Self.failures)
        // GET is idempotent: the client's rule may send it again.
        let response = try await probe.client.requests().get("http://127.0.0.1:9/me")
        probe.expectTheFourThings(requests: 3)
        // The 503 the classifier does not retry is the answer, as for any status.
        #expect(response.status == 503)
    }

    @Test("a request layer's failure that is not retried has the request stage")
    func requestStage() async throws {
        let probe = Probe([.fail(AttacheError(.tlsFailure, stage: .upload, "certificate refused"))])
        let error = await #expect(throws: AttacheError.self) { _ = try await probe.client.requests().get("http://127.0.0.1:9/me") }
        #expect(error?.stage == .request)
        #expect(error?.code == .tlsFailure)
        #expect(probe.sleeps.all.isEmpty)
    }

    @Test("a retrier that refreshes a token on 401 works for every operation, and its adapter's token is sent")
    func tokenRefresh() async throws {
        final class TokenStore: Sendable {
            let token = Mutex("old")
        }
        struct TokenAdapter: RequestAdapter {
            let store: TokenStore
            func adapt(_ request: ClientRequest) async throws -> ClientRequest {
                var request = request
                request.setHeader("Authorization", "Bearer \(store.token.withLock { $0 })")
                return request
            }
        }
        struct RefreshOn401: RequestRetrier {
            let store: TokenStore
            func retry(_ request: ClientRequest, response: ServerResponse?, error: AttacheError?, attempt: Int) async -> RetryDecision {
                guard response?.status == 401 else { return .useDefault }
                store.token.withLock { $0 = "new" }
                return .retryAfter(.zero)
            }
        }
        let transport = ScriptedTransport([.answer(status: 401), .answer(status: 200, body: Self.ok), .answer(status: 401), .answer(status: 204)])
        let store = TokenStore()
        let client = AttacheClient(
            connection: .init(), transport: transport,
            interceptors: ClientInterceptors(adapters: [TokenAdapter(store: store)], retriers: [RefreshOn401(store: store)]),
            sleep: RecordedSleeps().sleep)
        var body = MultipartBody()
        try body.addFile(name: "file", filename: "a.bin", contentType: "application/octet-stream", source: DataSource([1, 2]))
        let result = try await client.upload(UploadRequest(url: "http://127.0.0.1:9/upload", body: body))
        guard case .stored = result.outcome else {
            Issue.record("not stored: \(result.outcome)")
            return
        }
        store.token.withLock { $0 = "old" }
        #expect(try await client.requests().get("http://127.0.0.1:9/me").status == 204)
        let tokens = transport.sent.map { request in request.headers.last { $0.name == "Authorization" }?.value }
        #expect(tokens == ["Bearer old", "Bearer new", "Bearer old", "Bearer new"])
    }

    @Test("an adapter's URL that cannot be sent fails the operation with its own stage")
    func badAdaptedURL() async throws {
        struct Breaks: RequestAdapter {
            func adapt(_ request: ClientRequest) async throws -> ClientRequest {
                var request = request
                request.url = "ftp://nowhere"
                return request
            }
        }
        let transport = ScriptedTransport([])
        let client = AttacheClient(
            connection: .init(), transport: transport, interceptors: ClientInterceptors(adapters: [Breaks()]),
            sleep: RecordedSleeps().sleep)
        let error = await #expect(throws: AttacheError.self) {
            _ = try await client.download(DownloadRequest(url: "http://127.0.0.1:9/f", destination: "/nonexistent/x"))
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.stage == .download)
        #expect(transport.sent.isEmpty)
    }
}
