import Attache
import Foundation
import Synchronization
import AttacheTestSupport
import Testing

/// The pipeline against the real reference server on 127.0.0.1: bytes go over a socket, the server
/// parses them with its own multipart parser and stores them, and the tests read them back.
@Suite("Upload against the reference server")
struct UploadIntegrationTests {
    @Test("bytes stored are the bytes sent", arguments: [0, 1, 5_000_000])
    func storesExactBytes(size: Int) async throws {
        let content = randomBytes(size)
        let file = try TemporaryFile(bytes: content)
        defer { file.remove() }
        try await LiveServer.with { server in
            let receipt = try await server.pipeline().send(Attachment(path: file.path, fields: [UploadField(name: "chatId", value: "42")]))
            let fileId = try #require(receipt.fileId)
            #expect(receipt.attempts == 1)
            #expect(receipt.originalByteCount == Int64(size))
            #expect(receipt.server["size"]?.intValue == size)
            #expect(receipt.server["sha256"]?.stringValue == (try await sha256Hex(content)))
            #expect(receipt.server["fields"]?["chatId"]?.stringValue == "42")
            let (data, response) = try await server.get("/files/\(fileId)")
            #expect(response.statusCode == 200)
            #expect(Array(data) == content)
            let statsFiles = try await server.stats().files
            #expect(statsFiles == 1)
        }
    }

    @Test("hostile filenames arrive escaped, one part each", arguments: [
        ("say \"cheese\".jpg", "say %22cheese%22.jpg"),
        ("two\r\nlines.txt", "two%0D%0Alines.txt"),
        ("résumé 履歴書 😀.pdf", "résumé 履歴書 😀.pdf"),
        (String(repeating: "ж", count: 296) + ".txt", String(repeating: "ж", count: 296) + ".txt"),
        ("tab\tname", "tab%09name"),
        ("end\\", "end%5C"),
    ])
    func hostileFilenames(filename: String, onTheWire: String) async throws {
        let file = try TemporaryFile(bytes: Array("hello".utf8))
        defer { file.remove() }
        try await LiveServer.with { server in
            let receipt = try await server.pipeline().send(Attachment(path: file.path, filename: filename))
            #expect(receipt.filename == filename)
            #expect(receipt.server["filename"]?.stringValue == onTheWire)
            #expect(receipt.server["size"]?.intValue == 5)
            #expect(receipt.server["parts"]?.arrayValue?.count == 1)
        }
    }

    @Test("an empty filename is refused before sending")
    func emptyFilename() async throws {
        let file = try TemporaryFile(bytes: [1])
        defer { file.remove() }
        try await LiveServer.with { server in
            let error = await #expect(throws: AttacheError.self) {
                try await server.pipeline().send(Attachment(path: file.path, filename: ""))
            }
            #expect(error?.code == .invalidArgument)
            #expect(error?.file == file.path)
            let statsRequests = try await server.stats().requests
            #expect(statsRequests == 0)
        }
    }

    @Test("503 then success stores exactly one file")
    func serviceUnavailableThenSuccess() async throws {
        let file = try TemporaryFile(bytes: randomBytes(300_000))
        defer { file.remove() }
        try await LiveServer.with { server in
            let pipeline = try server.pipeline(headers: [HeaderField(name: "X-Attache-Fault", value: "503@1")])
            let receipt = try await pipeline.send(Attachment(path: file.path))
            #expect(receipt.attempts == 2)
            let stats = try await server.stats()
            #expect(stats.requests == 2)
            #expect(stats.files == 1)
            #expect(stats.idempotencyKeys == 1)
        }
    }

    @Test("a retried upload whose first answer was lost is deduplicated by its key")
    func idempotencyKeyDeduplicates() async throws {
        let file = try TemporaryFile(bytes: randomBytes(1000))
        defer { file.remove() }
        try await LiveServer.with { server in
            let pipeline = try server.pipeline()
            let first = try await pipeline.send(Attachment(path: file.path, idempotencyKey: "same-key-1"))
            let second = try await pipeline.send(Attachment(path: file.path, idempotencyKey: "same-key-1"))
            #expect(first.fileId == second.fileId)
            #expect(!first.replayed)
            #expect(second.replayed)
            let stats = try await server.stats()
            #expect(stats.files == 1)
            #expect(stats.requests == 2)
        }
    }

    @Test("429 with Retry-After is honoured")
    func tooManyRequestsWaits() async throws {
        let file = try TemporaryFile(bytes: [1, 2, 3])
        defer { file.remove() }
        try await LiveServer.with { server in
            let pipeline = try server.pipeline(headers: [HeaderField(name: "X-Attache-Fault", value: "429@1:retry-after=1")])
            let clock = ContinuousClock()
            let start = clock.now
            let receipt = try await pipeline.send(Attachment(path: file.path))
            // The policy's own delay is at most 200 ms here; only Retry-After explains a wait of 1 s.
            #expect(clock.now - start >= .seconds(1))
            #expect(receipt.attempts == 2)
            let statsFiles = try await server.stats().files
            #expect(statsFiles == 1)
        }
    }

    @Test("413 is a rejection and is not retried")
    func payloadTooLargeIsNotRetried() async throws {
        let file = try TemporaryFile(bytes: randomBytes(2_000_000))
        defer { file.remove() }
        try await LiveServer.with(maxBodySize: 100_000) { server in
            let error = await #expect(throws: AttacheError.self) {
                try await server.pipeline().send(Attachment(path: file.path))
            }
            #expect(error?.code == .rejected)
            #expect(error?.stage == .interpret)
            #expect(error?.message.contains("too large") == true)
            #expect(error?.file == file.path)
            let stats = try await server.stats()
            #expect(stats.requests == 1)
            #expect(stats.files == 0)
        }
    }

    @Test("an HTML answer is a clear error, not a crash and not a success")
    func garbageAnswer() async throws {
        let file = try TemporaryFile(bytes: [1])
        defer { file.remove() }
        try await LiveServer.with { server in
            let error = await #expect(throws: AttacheError.self) {
                try await server.pipeline(headers: [HeaderField(name: "X-Attache-Fault", value: "garbage")]).send(Attachment(path: file.path))
            }
            #expect(error?.code == .badResponse)
            #expect(error?.message.contains("HTML") == true)
            let statsRequests = try await server.stats().requests
            #expect(statsRequests == 1)
        }
    }

    @Test("an empty 200 answer is a clear error")
    func emptyAnswer() async throws {
        let file = try TemporaryFile(bytes: [1])
        defer { file.remove() }
        try await LiveServer.with { server in
            let error = await #expect(throws: AttacheError.self) {
                try await server.pipeline(headers: [HeaderField(name: "X-Attache-Fault", value: "empty")]).send(Attachment(path: file.path))
            }
            #expect(error?.code == .badResponse)
            #expect(error?.message.contains("empty") == true)
        }
    }

    @Test("a business error code is a rejection carrying the server's message")
    func businessError() async throws {
        let file = try TemporaryFile(bytes: [1])
        defer { file.remove() }
        try await LiveServer.with { server in
            let pipeline = try server.pipeline(headers: [HeaderField(name: "X-Attache-Fault", value: "business:code=1007:message=chat closed")])
            let error = await #expect(throws: AttacheError.self) { try await pipeline.send(Attachment(path: file.path)) }
            #expect(error?.code == .rejected)
            #expect(error?.message.contains("1007") == true)
            #expect(error?.message.contains("chat closed") == true)
            let statsRequests = try await server.stats().requests
            #expect(statsRequests == 1)
        }
    }

    @Test("a truncated answer is retried")
    func truncatedAnswerIsRetried() async throws {
        let file = try TemporaryFile(bytes: [1, 2])
        defer { file.remove() }
        try await LiveServer.with { server in
            let receipt = try await server.pipeline(headers: [HeaderField(name: "X-Attache-Fault", value: "truncated@1")])
                .send(Attachment(path: file.path))
            #expect(receipt.attempts == 2)
            let statsFiles = try await server.stats().files
            #expect(statsFiles == 1)
        }
    }

    @Test("a connection closed mid-body is retried and the file stored once")
    func droppedConnectionIsRetried() async throws {
        let content = randomBytes(3_000_000)
        let file = try TemporaryFile(bytes: content)
        defer { file.remove() }
        try await LiveServer.with { server in
            let pipeline = try server.pipeline(headers: [HeaderField(name: "X-Attache-Fault", value: "drop@1:after=100000")])
            let receipt = try await pipeline.send(Attachment(path: file.path))
            #expect(receipt.attempts == 2)
            #expect(receipt.server["sha256"]?.stringValue == (try await sha256Hex(content)))
            let stats = try await server.stats()
            #expect(stats.files == 1)
            #expect(stats.requests == 2)
        }
    }

    @Test("a stalled server trips the stall timeout and the retry succeeds")
    func stallTimeout() async throws {
        let file = try TemporaryFile(bytes: randomBytes(10_000))
        defer { file.remove() }
        try await LiveServer.with { server in
            // A stall far longer than the stall timeout (600 s against 60 s), and the timeout long
            // enough that the second, live attempt does not trip it on a loaded machine.
            let pipeline = try server.pipeline(
                headers: [HeaderField(name: "X-Attache-Fault", value: "stall@1:seconds=600")], stallTimeout: .seconds(60))
            let receipt = try await pipeline.send(Attachment(path: file.path))
            #expect(receipt.attempts == 2)
            let statsFiles = try await server.stats().files
            #expect(statsFiles == 1)
        }
    }

    @Test("retries stop at the attempt limit with a clear error")
    func retriesExhausted() async throws {
        let file = try TemporaryFile(bytes: [1])
        defer { file.remove() }
        try await LiveServer.with { server in
            let pipeline = try server.pipeline(headers: [HeaderField(name: "X-Attache-Fault", value: "500@*")], attempts: 3)
            let error = await #expect(throws: AttacheError.self) { try await pipeline.send(Attachment(path: file.path)) }
            #expect(error?.code == .retriesExhausted)
            #expect(error?.message.contains("3 attempts") == true)
            #expect(error?.message.contains("500") == true)
            let stats = try await server.stats()
            #expect(stats.requests == 3)
            #expect(stats.files == 0)
        }
    }

    @Test("cancelling the task stops a running transfer")
    func cancellationStopsTheTransfer() async throws {
        let file = try TemporaryFile(bytes: randomBytes(2_000_000))
        defer { file.remove() }
        try await LiveServer.with { server in
            let pipeline = try server.pipeline(
                headers: [HeaderField(name: "X-Attache-Fault", value: "stall:seconds=300")], stallTimeout: .seconds(300))
            let (started, startedContinuation) = AsyncStream.makeStream(of: Void.self)
            let task = Task {
                try await pipeline.send(Attachment(path: file.path)) { event in
                    if case .upload = event { startedContinuation.yield() }
                }
            }
            var iterator = started.makeAsyncIterator()
            _ = await iterator.next()
            let clock = ContinuousClock()
            let cancelledAt = clock.now
            task.cancel()
            let result = await task.result
            guard case .failure(let error as AttacheError) = result else {
                Issue.record("expected a cancellation error, got \(result)")
                return
            }
            #expect(error.code == .cancelled)
            // Without cancellation the stall, and the stall timeout, would last 300 s: a minute's margin
            // for a loaded machine still tells the two apart.
            #expect(clock.now - cancelledAt < .seconds(60))
            let statsFiles = try await server.stats().files
            #expect(statsFiles == 0)
        }
    }

    @Test("progress starts at 0, ends at 1 and never goes back, across a retry")
    func progressIsMonotonic() async throws {
        let file = try TemporaryFile(bytes: randomBytes(4_000_000))
        defer { file.remove() }
        try await LiveServer.with { server in
            let seen = Mutex<[Double]>([])
            let pipeline = try server.pipeline(headers: [HeaderField(name: "X-Attache-Fault", value: "drop@1:after=2000000")])
            let receipt = try await pipeline.send(Attachment(path: file.path)) { event in
                if case .upload(let update) = event { seen.withLock { $0.append(update.fractionCompleted) } }
            }
            #expect(receipt.attempts == 2)
            let fractions = seen.withLock { $0 }
            #expect(fractions.first == 0)
            #expect(fractions.last == 1)
            #expect(fractions.count > 2)
            #expect(zip(fractions, fractions.dropFirst()).allSatisfy { $0 <= $1 })
        }
    }

    @Test("uploads run concurrently")
    func concurrentUploads() async throws {
        let files = try (0..<6).map { _ in try TemporaryFile(bytes: randomBytes(500_000)) }
        defer { files.forEach { $0.remove() } }
        try await LiveServer.with { server in
            let pipeline = try server.pipeline()
            let ids = try await withThrowingTaskGroup(of: String?.self) { group in
                for file in files {
                    group.addTask { try await pipeline.send(Attachment(path: file.path)).fileId }
                }
                return try await group.reduce(into: Set<String>()) { if let id = $1 { $0.insert(id) } }
            }
            #expect(ids.count == 6)
            let statsFiles = try await server.stats().files
            #expect(statsFiles == 6)
        }
    }

    @Test("an unreachable server is connection-failed (exit 69) after the retries, not retries-exhausted")
    func unreachableServer() async throws {
        let file = try TemporaryFile(bytes: [1])
        defer { file.remove() }
        var configuration = PipelineConfiguration(url: "http://127.0.0.1:9/upload")
        configuration.connection.retry = RetryPolicy(maximumAttempts: 2, initialDelay: .milliseconds(10))
        let error = await #expect(throws: AttacheError.self) {
            try await AttachmentPipeline(configuration: configuration).send(Attachment(path: file.path))
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.contains("gave up after 2 attempts") == true)
        #expect((error?.cause as? AttacheError)?.code == .connectionFailed)
    }
}

extension JSONValue {
    var arrayValue: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }
}
