import Attache
import AttacheBatch
import AttacheServer
import Foundation
import Synchronization
import AttacheTestSupport
import Testing

/// What a user checks after a flaky network or a crash: the stored file, downloaded and decrypted with
/// the key in its receipt, is the source; no file vanished; a torn file never completes.
@Suite("Trust, end to end", .serialized)
struct TrustIntegrationTests {
    // MARK: The right key after a replay (issue item 1)

    @Test func uploadingTwiceUnderOneIdempotencyKeyGivesAKeyThatOpensTheStoredFile() async throws {
        let scratch = try TrustScratch()
        defer { scratch.remove() }
        let source = try scratch.file("photo.bin", randomBytes(150_000))
        try await LiveServer.with { server in
            var receipts: [[String: Any]] = []
            for _ in 0..<2 {
                let process = try ChildProcess(
                    executable: try attacheBinary(),
                    arguments: [
                        "upload", source, "--url", server.uploadURL, "--idempotency-key", "order-42", "--json",
                        "--seal-material-dir", scratch.root + "/state",
                    ])
                #expect(try await process.wait(upTo: 60) == 0, "\(process.standardError)")
                receipts.append(try jsonObject(process.standardOutput))
            }
            #expect(receipts[1]["replayed"] as? Bool == true)
            let stats = try await server.stats()
            #expect(stats.files == 1)
            for receipt in receipts {
                try await expectStoredFileOpens(receipt, source: source, port: server.port, scratch: scratch)
            }
        }
    }

    @Test func aReplayOfBytesSealedWithAnotherKeyIsAnErrorNotASuccess() async throws {
        let scratch = try TrustScratch()
        defer { scratch.remove() }
        let source = try scratch.file("voice.bin", randomBytes(40_000))
        try await LiveServer.with { server in
            // Two runs that do not share their seal material (the state folder was lost in between).
            var statuses: [Int32?] = []
            var errors: [String] = []
            for state in ["/state-a", "/state-b"] {
                let process = try ChildProcess(
                    executable: try attacheBinary(),
                    arguments: [
                        "upload", source, "--url", server.uploadURL, "--idempotency-key", "k-1", "--json",
                        "--seal-material-dir", scratch.root + state,
                    ])
                statuses.append(try await process.wait(upTo: 60))
                errors.append(process.standardOutput)
            }
            #expect(statuses[0] == 0)
            #expect(statuses[1] != 0, "a replayed receipt whose key cannot open the stored bytes was reported as success")
            #expect(errors[1].contains("replay-mismatch"), "\(errors[1])")
        }
    }

    @Test func aBatchWhoseAnswersWereLostResendsIdenticalBytesAndEveryKeyOpensItsFile() async throws {
        let scratch = try TrustScratch()
        defer { scratch.remove() }
        for i in 0..<12 { _ = try scratch.file("files/\(String(format: "%02d", i)).bin", randomBytes(Int.random(in: 1_000...90_000))) }
        try await LiveServer.with { server in
            // Every answer is lost after the server stored the upload; one attempt each, so the files end
            // `failed` with their keys, as when a process dies before it hears back.
            let proxy = try await DropAnswersProxy(upstream: server.port, drop: 1.0)
            defer { proxy.stop() }
            let lost = try ChildProcess(
                executable: try attacheBinary(),
                arguments: [
                    "batch", scratch.root + "/files", "--url", "http://127.0.0.1:\(proxy.port)/upload",
                    "--journal", scratch.journal, "--attempts", "1",
                ])
            #expect(try await lost.wait(upTo: 60) != 0)
            #expect(try await server.stats().files == 12, "the server should have stored every upload")

            let again = try ChildProcess(
                executable: try attacheBinary(),
                arguments: [
                    "batch", scratch.root + "/files", "--url", server.uploadURL, "--journal", scratch.journal,
                    "--retry-failed",
                ])
            #expect(try await again.wait(upTo: 60) == 0, "\(again.standardError)")
            let stats = try await server.stats()
            #expect(stats.files == 12)
            #expect(stats.replays == 12)
            try await expectJournalReceiptsOpen(scratch: scratch, port: server.port, count: 12)
        }
    }

    // MARK: Names that are not UTF-8 (item 3)

    @Test func aFileWhoseNameIsNotUTF8IsSentByBatchAndByUpload() async throws {
        let scratch = try TrustScratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.root + "/files", withIntermediateDirectories: true)
        // "café.txt" in Latin-1, and a normal neighbour.
        let latin1 = PlatformPath.string(fromBytes: Array("caf".utf8) + [0xE9] + Array(".txt".utf8))
        let path = scratch.root + "/files/" + latin1
        let fd = PlatformPath.withCString(path) { open($0, O_WRONLY | O_CREAT, 0o644) }
        #expect(fd >= 0)
        _ = write(fd, "bonjour", 7)
        close(fd)
        _ = try scratch.file("files/plain.txt", Array("hello".utf8))
        try await LiveServer.with { server in
            let batch = try ChildProcess(
                executable: try attacheBinary(),
                arguments: [
                    "batch", scratch.root + "/files", "--url", server.uploadURL, "--journal", scratch.journal,
                    "--scheme", "none", "--json",
                ])
            #expect(try await batch.wait(upTo: 60) == 0, "\(batch.standardError)")
            let succeeded = batch.standardOutput.split(separator: "\n").filter { $0.contains("\"event\":\"succeeded\"") }
            #expect(succeeded.count == 2, "\(batch.standardOutput)")
            #expect(try await server.stats().files == 2)
            let names = try storedFilenames(server.store)
            #expect(names.contains("caf\u{FFFD}.txt"), "\(names)")

            // The same file named on a command line, raw bytes and all (sh passes them through).
            let upload = try ChildProcess(
                executable: "/bin/sh",
                arguments: [
                    "-c", "exec \"$0\" upload \"$(printf '\(scratch.root)/files/caf\\351.txt')\" --url \"$1\" --scheme none --json",
                    try attacheBinary(), server.uploadURL,
                ])
            #expect(try await upload.wait(upTo: 60) == 0, "\(upload.standardError)")
            #expect(try await server.stats().files == 3)
        }
    }

    // MARK: Torn reads (item 5)

    @Test func aFileRewrittenDuringTheUploadWithItsTimeRestoredNeverCompletes() async throws {
        let scratch = try TrustScratch()
        defer { scratch.remove() }
        let size = 24 << 20
        let path = try scratch.file("video.bin", [UInt8](repeating: 1, count: size))
        var info = stat()
        stat(path, &info)
        let times = [info.st_atim, info.st_mtim]
        try await LiveServer.with { server in
            let pipeline = try server.pipeline(attempts: 1)
            let rewritten = Flag()
            let error = await #expect(throws: AttacheError.self) {
                _ = try await pipeline.send(Attachment(path: path)) { event in
                    guard case .upload(let progress) = event, progress.fractionCompleted > 0.3, rewritten.set() else {
                        return
                    }
                    // rsync --inplace -t: same size, new bytes, the old time put back.
                    let fd = open(path, O_WRONLY)
                    let block = [UInt8](repeating: 2, count: 1 << 20)
                    for offset in stride(from: 0, to: size, by: block.count) {
                        _ = block.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
                    }
                    var restore = times
                    futimens(fd, &restore)
                    close(fd)
                }
            }
            #expect(rewritten.isSet, "the file was not rewritten mid-upload; the test proved nothing")
            #expect(error?.code == .fileChanged)
            let stored = try await server.stats().files
            #expect(stored == 0, "a torn copy was stored")
        }
    }

    // MARK: A server restart (item 11)

    @Test func aBatchWaitsForAServerThatIsDownForLongerThanTheOldRetriesLasted() async throws {
        let scratch = try TrustScratch()
        defer { scratch.remove() }
        let files = 3
        for i in 0..<files { _ = try scratch.file("files/\(i).bin", randomBytes(5_000)) }
        // Until the server starts, the port resets every connection it accepts, and counts them: the
        // batch's attempts are awaited as they happen rather than slept through.
        let down = try ResettingListener()
        let port = down.port
        let batch = try ChildProcess(
            executable: try attacheBinary(),
            arguments: [
                "batch", scratch.root + "/files", "--url", "http://127.0.0.1:\(port)/upload", "--journal",
                scratch.journal,
            ])
        // Down for longer than the old defaults (6 attempts, 250 ms doubling) lasted: with 6 attempts
        // per file at the most, 6 × 3 + 1 connections mean that some file has made a seventh attempt.
        let reached = await down.waitForConnections(6 * files + 1, upTo: 120)
        down.stop()
        try #require(reached, "the batch made \(down.connections) attempts and stopped: \(batch.standardError)")
        let server = try await ServerProcess.start(store: scratch.root + "/store", port: port)
        #expect(try await batch.wait(upTo: 90) == 0, "\(batch.standardError)")
        server.kill()
    }

    // MARK: Support

    private func expectStoredFileOpens(
        _ receipt: [String: Any], source: String, port: Int, scratch: TrustScratch
    ) async throws {
        let fileId = try #require(receipt["fileId"] as? String)
        let seal = try #require(receipt["seal"] as? [String: Any])
        let key = try #require(seal["key"] as? String, "the receipt carries no key")
        let stored = scratch.root + "/dl-\(fileId)"
        let curl = try ChildProcess(
            executable: "/usr/bin/curl", arguments: ["-sSf", "-o", stored, "http://127.0.0.1:\(port)/files/\(fileId)"])
        #expect(try await curl.wait(upTo: 30) == 0)
        let keyFile = scratch.root + "/key-\(fileId)"
        try Data(key.utf8).write(to: URL(fileURLWithPath: keyFile))
        let opened = scratch.root + "/opened-\(fileId)"
        let decrypt = try ChildProcess(
            executable: try attacheBinary(), arguments: ["decrypt", stored, "-o", opened, "--key-file", keyFile])
        #expect(try await decrypt.wait(upTo: 30) == 0, "the receipt's key does not open the stored file: \(decrypt.standardError)")
        #expect(FileManager.default.contents(atPath: opened) == FileManager.default.contents(atPath: source))
    }

    func expectJournalReceiptsOpen(scratch: TrustScratch, port: Int, count: Int) async throws {
        let entries = try UploadJournal(path: scratch.journal).entries()
        #expect(entries.count == count)
        for entry in entries {
            let receipt = try #require(entry.receipt, "\(entry.path) has no receipt")
            let object: [String: Any] = [
                "fileId": receipt.fileId as Any, "seal": ["key": receipt.seal.key?.base64 as Any],
            ]
            try await expectStoredFileOpens(object, source: entry.path, port: port, scratch: scratch)
        }
    }
}

/// A temporary folder with a journal path.
struct TrustScratch {
    let root: String
    var journal: String { root + "/journal.sqlite" }

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("attache-trust-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    func file(_ name: String, _ bytes: [UInt8]) throws -> String {
        let path = root + "/" + name
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }
}

/// `Tests/IntegrationTests/Tools/drop_answers_proxy.py`, started on a free port and stopped by pid.
final class DropAnswersProxy {
    let service: ServiceProcess
    var port: Int { service.port }

    init(upstream: Int, drop: Double, seed: UInt64? = nil) async throws {
        var arguments = ["--upstream", String(upstream), "--drop", String(drop)]
        if let seed { arguments += ["--seed", String(seed)] }
        service = try await ServiceProcess.python("drop_answers_proxy.py", arguments)
    }

    func stop() { service.stop() }
}

/// A flag set once, from any thread.
final class Flag: Sendable {
    private let value = Mutex(false)
    /// Sets the flag; true only for the call that set it.
    func set() -> Bool { value.withLock { was in defer { was = true }; return !was } }
    var isSet: Bool { value.withLock { $0 } }
}

func jsonObject(_ text: String) throws -> [String: Any] {
    let line = try #require(text.split(separator: "\n").first.map(String.init), "no output")
    return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
}

/// The filenames the reference server recorded for its stored files.
func storedFilenames(_ store: String) throws -> [String] {
    var names: [String] = []
    let enumerator = FileManager.default.enumerator(atPath: store)
    while let item = enumerator?.nextObject() as? String {
        guard item.hasSuffix(".json") else { continue }
        let data = try Data(contentsOf: URL(fileURLWithPath: store + "/" + item))
        if let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
            names += collectFilenames(object)
        }
    }
    return names
}

private func collectFilenames(_ value: Any) -> [String] {
    if let object = value as? [String: Any] {
        var found = (object["filename"] as? String).map { [$0] } ?? []
        for (_, member) in object { found += collectFilenames(member) }
        return found
    }
    if let array = value as? [Any] { return array.flatMap(collectFilenames) }
    return []
}
