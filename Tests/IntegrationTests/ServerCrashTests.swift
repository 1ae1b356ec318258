import Attache
import AttacheServer
import Foundation
import Synchronization
import AttacheTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The `attache-server` executable killed in the middle of commits, then restarted on the same store:
/// a retry under the same `Idempotency-Key` must find the one stored copy (and answer its receipt
/// again) or store the upload once, never twice.
@Suite("Server crash consistency", .serialized)
struct ServerCrashTests {
    // MARK: Tests

    @Test("a crash at each point of the commit, then the retry: one copy, one receipt", arguments: CrashPoint.allCases)
    func crashAtEachCommitPoint(point: CrashPoint) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let content = randomBytes(5_000)
        let file = try scratch.file("photo.bin", content)
        let key = "crash-\(point.rawValue)-\(UUID().uuidString)"

        var server = try await ServerProcess.start(store: scratch.store, extra: ["--fault", "crash@1:at=\(point.rawValue)"])
        let first = await #expect(throws: AttacheError.self) {
            _ = try await scratch.pipeline(port: server.port, attempts: 1).send(Attachment(path: file, idempotencyKey: key))
        }
        #expect(first?.code != .rejected, "the first attempt must die with the server, not be refused")
        #expect(try await server.waitForExit() == .killed, "the server should have killed itself at \(point.rawValue)")

        server = try await ServerProcess.start(store: scratch.store, port: server.port)
        defer { server.kill() }
        let pipeline = try scratch.pipeline(port: server.port, attempts: 1)
        let retry = try await pipeline.send(Attachment(path: file, idempotencyKey: key))
        let digest = try await sha256Hex(content)
        #expect(retry.server["sha256"]?.stringValue == digest)
        // A crash after the commit point leaves a committed upload: the retry is its replay.
        #expect(retry.replayed == (point == .afterKey))

        let replay = try await pipeline.send(Attachment(path: file, idempotencyKey: key))
        #expect(replay.replayed)
        #expect(replay.fileId == retry.fileId)
        #expect(replay.server == retry.server, "a replay answers the same receipt")

        let stored = try await scratch.storedFiles()
        #expect(stored.count == 1, "stored copies: \(stored)")
        #expect(stored.first?.sha256 == digest)
        #expect(stored.first?.fileId == retry.fileId)
        #expect(try scratch.keyRecords() == 1)
        #expect(try scratch.pendingRecords() == 0)
    }

    @Test func aCrashBeforeTheCommitPointWithoutARetryLeavesNothingAfterARestart() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = try scratch.file("lost.bin", randomBytes(3_000))
        var server = try await ServerProcess.start(store: scratch.store, extra: ["--fault", "crash@1:at=after-files"])
        _ = try? await scratch.pipeline(port: server.port, attempts: 1).send(Attachment(path: file, idempotencyKey: "never-retried"))
        #expect(try await server.waitForExit() == .killed)
        // The crashed upload's part and receipt are on disk until the next start rolls them back.
        #expect(try scratch.pendingRecords() == 1)
        server = try await ServerProcess.start(store: scratch.store, port: server.port)
        defer { server.kill() }
        #expect(try await scratch.storedFiles().isEmpty)
        #expect(try scratch.pendingRecords() == 0)
        #expect(try scratch.keyRecords() == 0)
    }

    @Test func killedTwentyTimesDuringUploadsEveryKeyHasExactlyOneStoredCopy() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let rounds = 20
        let perRound = 16
        var uploads: [(path: String, key: String, digest: String)] = []
        for round in 0..<rounds {
            for index in 0..<perRound {
                let content = randomBytes(Int.random(in: 200...20_000))
                let path = try scratch.file("r\(round)-\(index).bin", content)
                uploads.append((path, "kill-test-\(round)-\(index)-\(UUID().uuidString)", try await sha256Hex(content)))
            }
        }
        var server = try await ServerProcess.start(store: scratch.store)
        defer { server.kill() }
        let port = server.port
        let pipeline = try scratch.pipeline(port: port, attempts: 200)
        var receipts: [String: UploadReceipt] = [:]

        for round in 0..<rounds {
            let batch = uploads[(round * perRound)..<((round + 1) * perRound)]
            let finished = Counter()
            // The kill lands once `killAfter` uploads of the round have their answer, while the others
            // are somewhere between their first byte and their commit.
            let killAfter = 1 + round % (perRound / 2)
            try await withThrowingTaskGroup(of: (String, UploadReceipt).self) { group in
                for upload in batch {
                    group.addTask {
                        // Counted also when it fails, so that the kill below never waits forever.
                        defer { finished.increment() }
                        let receipt = try await pipeline.send(Attachment(path: upload.path, idempotencyKey: upload.key))
                        return (upload.key, receipt)
                    }
                }
                await finished.wait(for: killAfter)
                server.kill()
                #expect(try await server.waitForExit() == .killed)
                server = try await ServerProcess.start(store: scratch.store, port: port)
                for try await (key, receipt) in group { receipts[key] = receipt }
            }
        }
        #expect(receipts.count == uploads.count)

        // Retry everything: every key is answered from its one stored copy.
        for upload in uploads {
            let again = try await pipeline.send(Attachment(path: upload.path, idempotencyKey: upload.key))
            #expect(again.replayed, "\(upload.key) was stored again")
            #expect(again.fileId == receipts[upload.key]?.fileId)
            #expect(again.server["sha256"]?.stringValue == upload.digest)
        }

        let stored = try await scratch.storedFiles()
        let copies = Dictionary(grouping: stored, by: \.sha256).mapValues(\.count)
        let duplicates = copies.filter { $0.value > 1 }
        #expect(duplicates.isEmpty, "\(duplicates.count) uploads were stored more than once")
        #expect(stored.count == uploads.count, "\(stored.count) stored files for \(uploads.count) uploads")
        for upload in uploads {
            #expect(copies[upload.digest] == 1, "\(upload.key): \(copies[upload.digest] ?? 0) stored copies")
        }
        #expect(try scratch.keyRecords() == uploads.count)
    }

    // MARK: Support

    /// A count that tasks raise and a waiter awaits, without polling.
    final class Counter: Sendable {
        private struct State {
            var value = 0
            var waiters: [(Int, CheckedContinuation<Void, Never>)] = []
        }
        private let state = Mutex(State())

        func increment() {
            let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.value += 1
                let value = state.value
                let ready = state.waiters.filter { $0.0 <= value }.map(\.1)
                state.waiters.removeAll { $0.0 <= value }
                return ready
            }
            for continuation in ready { continuation.resume() }
        }

        func wait(for target: Int) async {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if state.value >= target { return true }
                    state.waiters.append((target, continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        }
    }

    /// Source files and the server's store under one temporary folder.
    struct Scratch {
        let root: String
        var store: String { root + "/store" }

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("attache-crash-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: root + "/files", withIntermediateDirectories: true)
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }

        func file(_ name: String, _ bytes: [UInt8]) throws -> String {
            let path = root + "/files/" + name
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return path
        }

        func pipeline(port: Int, attempts: Int) throws -> AttachmentPipeline {
            var configuration = PipelineConfiguration(url: "http://127.0.0.1:\(port)/upload")
            configuration.seal = .none
            configuration.sendMetadataFields = false
            configuration.connection.retry = RetryPolicy(
                maximumAttempts: attempts, initialDelay: .milliseconds(10), maximumDelay: .milliseconds(100),
                budget: .seconds(120))
            return try AttachmentPipeline(configuration: configuration)
        }

        /// Every stored file part with the SHA-256 of its bytes (read from disk, not from a receipt).
        func storedFiles() async throws -> [(fileId: String, sha256: String)] {
            let folder = store + "/files"
            var files: [(fileId: String, sha256: String)] = []
            for name in try FileManager.default.contentsOfDirectory(atPath: folder)
            where !name.hasSuffix(".json") && !name.hasPrefix(".") {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))
                files.append((name, try await sha256Hex(Array(bytes))))
            }
            return files
        }

        func keyRecords() throws -> Int { try FileManager.default.contentsOfDirectory(atPath: store + "/keys").count }

        func pendingRecords() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: store + "/pending").count
        }
    }
}
