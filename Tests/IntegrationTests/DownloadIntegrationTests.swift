import Attache
import AttacheServer
import Foundation
import Synchronization
import AttacheTestSupport
import Testing

/// `Downloader` against the reference server's `GET /files/{id}` (and, for a connection that breaks
/// in the middle of a body, against a small socket server of the test's own).
@Suite("Downloads")
struct DownloadIntegrationTests {
    func downloader(attempts: Int = 3, budget: Duration = .seconds(30)) -> Downloader {
        var configuration = ConnectionConfiguration()
        configuration.retry = RetryPolicy(
            maximumAttempts: attempts, initialDelay: .milliseconds(10), maximumDelay: .milliseconds(50),
            budget: budget)
        return Downloader(configuration: configuration)
    }

    /// Uploads `bytes` (not sealed, not transformed) and returns the URL the server serves them at.
    func store(_ bytes: [UInt8], on server: LiveServer, seal: SealConfiguration = .none) async throws -> String {
        let file = try TemporaryFile(name: "payload.bin", bytes: bytes)
        defer { file.remove() }
        let receipt = try await server.pipeline { $0.seal = seal }.send(Attachment(path: file.path))
        let fileId = try #require(receipt.fileId)
        return "http://127.0.0.1:\(server.port)/files/\(fileId)"
    }

    func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("attache-dl-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func aStoredFileComesBackByteForByteAndMatchesItsETag() async throws {
        let bytes = randomBytes(300_000)
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await LiveServer.with { server in
            let url = try await store(bytes, on: server)
            let progress = Mutex<[DownloadProgress]>([])
            let receipt = try await downloader().download(
                DownloadRequest(url: url, destination: directory + "/out.bin")) { update in
                progress.withLock { $0.append(update) }
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/out.bin")) == Data(bytes))
            #expect(receipt.byteCount == 300_000 && receipt.transferredByteCount == 300_000)
            #expect(receipt.resumedFrom == 0 && receipt.attempts == 1)
            #expect(receipt.verifiedByETag)
            #expect(receipt.sha256 == (try await sha256Hex(bytes)))
            #expect(!FileManager.default.fileExists(atPath: directory + "/out.bin.part"))
            #expect(progress.withLock { $0.last?.receivedBytes } == 300_000)
        }
    }

    @Test func aPartialFileIsContinuedWithARangeRequest() async throws {
        let bytes = randomBytes(250_000)
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await LiveServer.with { server in
            let url = try await store(bytes, on: server)
            try Data(bytes[..<70_000]).write(to: URL(fileURLWithPath: directory + "/out.bin.part"))
            let receipt = try await downloader().download(
                DownloadRequest(url: url, destination: directory + "/out.bin", resume: true))
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/out.bin")) == Data(bytes))
            #expect(receipt.resumedFrom == 70_000)
            #expect(receipt.transferredByteCount == 180_000)
            #expect(receipt.verifiedByETag)
        }
    }

    @Test func aPartialFileOfOtherBytesIsDetectedAndTheDownloadStartsOver() async throws {
        let bytes = randomBytes(120_000)
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await LiveServer.with { server in
            let url = try await store(bytes, on: server)
            try Data(randomBytes(50_000)).write(to: URL(fileURLWithPath: directory + "/out.bin.part"))
            let receipt = try await downloader().download(
                DownloadRequest(url: url, destination: directory + "/out.bin", resume: true))
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/out.bin")) == Data(bytes))
            #expect(receipt.attempts == 2)
            #expect(receipt.transferredByteCount == 70_000 + 120_000)
        }
    }

    @Test func withoutResumeAnOldPartialFileIsDiscarded() async throws {
        let bytes = randomBytes(90_000)
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await LiveServer.with { server in
            let url = try await store(bytes, on: server)
            try Data(bytes[..<40_000]).write(to: URL(fileURLWithPath: directory + "/out.bin.part"))
            let receipt = try await downloader().download(DownloadRequest(url: url, destination: directory + "/out.bin"))
            #expect(receipt.resumedFrom == 0 && receipt.transferredByteCount == 90_000)
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/out.bin")) == Data(bytes))
        }
    }

    @Test func aMissingFileIsRejectedWithoutRetriesAndLeavesNothing() async throws {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await LiveServer.with { server in
            let error = await #expect(throws: AttacheError.self) {
                try await downloader(attempts: 5).download(
                    DownloadRequest(url: "http://127.0.0.1:\(server.port)/files/nope", destination: directory + "/out.bin"))
            }
            #expect(error?.code == .rejected && error?.stage == .download)
            #expect(error?.isRetryable == false)
            #expect(error?.message.contains("404") == true)
            let left = try FileManager.default.contentsOfDirectory(atPath: directory)
            #expect(left.isEmpty)
            // One request for the upload-free server: the 404 was not retried.
            #expect(try await server.stats().requests <= 2)
        }
    }

    @Test func aSealedUploadIsDownloadedAndDecrypted() async throws {
        let plaintext = randomBytes(200_001)
        let key = AttachmentKey.random(for: .streamGCM)
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await LiveServer.with { server in
            var seal = SealConfiguration()
            seal.scheme = .streamGCM
            seal.key = key
            let url = try await store(plaintext, on: server, seal: seal)
            let receipt = try await downloader().download(
                DownloadRequest(
                    url: url, destination: directory + "/plain.bin",
                    unsealing: .init(scheme: .streamGCM, key: key)))
            #expect(receipt.unsealed && receipt.storedByteCount == 200_001 && receipt.byteCount > 200_001)
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/plain.bin")) == Data(plaintext))

            // The wrong key: nothing appears under the destination's name.
            let wrong = await #expect(throws: AttacheError.self) {
                try await downloader().download(
                    DownloadRequest(
                        url: url, destination: directory + "/wrong.bin",
                        unsealing: .init(scheme: .streamGCM, key: .random(for: .streamGCM))))
            }
            #expect(wrong?.code == .invalidKey)
            #expect(!FileManager.default.fileExists(atPath: directory + "/wrong.bin"))
        }
    }

    @Test func aConnectionBrokenMidBodyIsResumedWhereItStopped() async throws {
        let bytes = randomBytes(100_000)
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try BreakingServer(body: bytes, breakAfter: 30_000)
        defer { server.stop() }
        // What is checked is where the second attempt starts, not how fast: in full runs the first attempt
        // has been seen to take over 30 s to end (its connection's end reached the client that late),
        // so the budget here is generous.
        let receipt = try await downloader(budget: .seconds(180)).download(
            DownloadRequest(url: "http://127.0.0.1:\(server.port)/f", destination: directory + "/out.bin"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/out.bin")) == Data(bytes))
        #expect(receipt.attempts == 2)
        #expect(receipt.transferredByteCount == 100_000)
        #expect(server.rangeHeaders() == [nil, "bytes=30000-"])
    }
}

/// A one-purpose HTTP server on 127.0.0.1: the first request gets a 200 whose body stops after
/// `breakAfter` bytes (connection closed); later requests get the `Range` they ask for.
final class BreakingServer: Sendable {
    let port: Int
    private let listener: Int32
    private let ranges = Mutex<[String?]>([])

    init(body: [UInt8], breakAfter: Int) throws {
        (listener, port) = try bindLoopback(listening: 4)
        Thread.detachNewThread { [self] in serve(body: body, breakAfter: breakAfter) }
    }

    private func serve(body: [UInt8], breakAfter: Int) {
        var served = 0
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            // Not inherited by the processes other tests start meanwhile (one would keep the connection
            // open after the close below, and the client would wait for its stall timeout).
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            var request = [UInt8]()
            var chunk = [UInt8](repeating: 0, count: 4096)
            while request.count < 4 || Array(request.suffix(4)) != Array("\r\n\r\n".utf8) {
                let n = read(client, &chunk, chunk.count)
                if n <= 0 { break }
                request += chunk[..<n]
            }
            let text = String(decoding: request, as: UTF8.self)
            let range = text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("range:") }
                .map { $0.dropFirst(6).trimmingCharacters(in: .whitespaces) }
            ranges.withLock { $0.append(range) }
            var start = 0
            if let range, range.hasPrefix("bytes="), let dash = range.firstIndex(of: "-") {
                start = Int(range[range.index(range.startIndex, offsetBy: 6)..<dash]) ?? 0
            }
            let head: String
            let payload: ArraySlice<UInt8>
            if served == 0 {
                head = "HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
                payload = body[..<breakAfter]
            } else {
                head = "HTTP/1.1 206 Partial Content\r\nContent-Length: \(body.count - start)\r\n"
                    + "Content-Range: bytes \(start)-\(body.count - 1)/\(body.count)\r\nConnection: close\r\n\r\n"
                payload = body[start...]
            }
            served += 1
            let all = Array(head.utf8) + payload
            var offset = 0
            while offset < all.count {
                let n = all[offset...].withUnsafeBytes { write(client, $0.baseAddress!, $0.count) }
                if n <= 0 { break }
                offset += n
            }
            // shutdown ends the connection even where another process holds a copy of the descriptor.
            shutdown(client, Int32(SHUT_RDWR))
            close(client)
        }
    }

    func rangeHeaders() -> [String?] { ranges.withLock { $0 } }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
