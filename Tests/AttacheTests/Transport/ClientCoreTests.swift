import Foundation
import Logging
import Synchronization
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

/// The client core: one set of interceptors and hooks for every operation.
@Suite("Client core")
struct ClientCoreTests {
    static let ok = Array(#"{"errorCode":0,"data":{"fileId":"f1"}}"#.utf8)

    /// Adds the current token; the retrier below changes it.
    final class TokenStore: Sendable {
        let token = Mutex("old")
        let refreshes = Mutex(0)
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
            store.refreshes.withLock { $0 += 1 }
            return .retryAfter(.zero)
        }
    }

    final class Recorder: ClientInstrumentation {
        let events = Mutex<[String]>([])
        func requestStarted(_ request: ClientRequestStart) {
            events.withLock { $0.append("start \(request.operation) \(request.method) \(request.url)") }
        }
        func attemptFinished(_ attempt: ClientAttempt) {
            events.withLock { $0.append("attempt \(attempt.operation) \(attempt.attempt) \(attempt.status.map(String.init) ?? attempt.failure?.rawValue ?? "-")") }
        }
        func retrying(_ retry: ClientRetry) {
            events.withLock { $0.append("retry \(retry.operation) \(retry.attempt)") }
        }
    }

    func client(_ transport: ScriptedTransport, _ store: TokenStore, _ recorder: Recorder? = nil) -> AttacheClient {
        AttacheClient(
            connection: .init(), transport: transport,
            interceptors: ClientInterceptors(adapters: [TokenAdapter(store: store)], retriers: [RefreshOn401(store: store)]),
            instrumentation: recorder, sleep: RecordedSleeps().sleep)
    }

    func tokens(_ transport: ScriptedTransport) -> [String?] {
        transport.sent.map { request in request.headers.last { $0.name == "Authorization" }?.value }
    }

    @Test("an upload runs the adapters on every attempt and the 401 retrier, and reports to the hooks")
    func upload() async throws {
        let transport = ScriptedTransport([.answer(status: 401), .answer(status: 200, body: Self.ok)])
        let store = TokenStore()
        let recorder = Recorder()
        var body = MultipartBody()
        try body.addFile(name: "file", filename: "a.bin", contentType: "application/octet-stream", source: DataSource([1, 2]))
        let result = try await client(transport, store, recorder).upload(
            UploadRequest(url: "http://user:pw@127.0.0.1:9/upload?signature=secret", body: body))
        guard case .stored = result.outcome else {
            Issue.record("not stored: \(result.outcome)")
            return
        }
        #expect(tokens(transport) == ["Bearer old", "Bearer new"])
        #expect(store.refreshes.withLock { $0 } == 1)
        let events = recorder.events.withLock { $0 }
        #expect(events.count == 4, "\(events)")
        #expect(events.first?.hasPrefix("start upload POST http://") == true)
        #expect(!events.joined().contains("secret"))
        #expect(!events.joined().contains("pw"))
        #expect(events.dropFirst().elementsEqual(["attempt upload 1 401", "retry upload 1", "attempt upload 2 200"]))
    }

    @Test("a download runs the same adapters and retrier")
    func download() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("core-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = ScriptedTransport([.answer(status: 401), .answer(status: 200, body: [7, 8, 9])])
        let store = TokenStore()
        let destination = directory.appendingPathComponent("out.bin").path
        let receipt = try await client(transport, store).download(
            DownloadRequest(url: "http://127.0.0.1:9/f", destination: destination))
        #expect(receipt.byteCount == 3)
        #expect(tokens(transport) == ["Bearer old", "Bearer new"])
    }

    @Test("the request layer made from the client runs the client's interceptors too")
    func requests() async throws {
        let transport = ScriptedTransport([.answer(status: 401), .answer(status: 204)])
        let store = TokenStore()
        let recorder = Recorder()
        let response = try await client(transport, store, recorder).requests().get("http://127.0.0.1:9/me")
        #expect(response.status == 204)
        #expect(tokens(transport) == ["Bearer old", "Bearer new"])
        #expect(recorder.events.withLock { $0 }.filter { $0.hasPrefix("attempt request") }.count == 2)
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
