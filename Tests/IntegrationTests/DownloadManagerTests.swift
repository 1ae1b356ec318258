import Attache
import AttacheBatch
import AttacheServer
import Foundation
import Synchronization
import AttacheTestSupport
import Testing

/// `DownloadManager` and `attache download` for many files against the reference server, whose
/// file faults (throttle, change) hold transfers in flight long enough to pause them, and whose request
/// log shows the `Range` and `If-Range` headers the client sent and the bytes it was sent.
@Suite("Download manager", .serialized)
struct DownloadManagerTests {
    /// A reference server with file faults and a request log, and a scratch folder.
    struct Setup: Sendable {
        let server: LiveServer
        let folder: String
        let log: String

        /// Uploads `bytes` unsealed and returns their URL.
        func store(_ bytes: [UInt8]) async throws -> String {
            let file = try TemporaryFile(name: "payload.bin", bytes: bytes)
            defer { file.remove() }
            let receipt = try await server.pipeline().send(Attachment(path: file.path))
            return "http://127.0.0.1:\(server.port)/files/\(try #require(receipt.fileId))"
        }

        /// The log's lines for the file at `url`.
        func requests(for url: String) throws -> [[String: Any]] {
            let id = String(url.split(separator: "/").last ?? "")
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return try text.split(separator: "\n").compactMap { line in
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                return object["id"] as? String == id && object["status"] != nil ? object : nil
            }
        }

        func totalBytesSent() throws -> Int64 {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return try text.split(separator: "\n").reduce(0) { sum, line in
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                return sum + ((object["sent"] as? NSNumber)?.int64Value ?? 0)
            }
        }
    }

    static func with<T: Sendable>(fileFaults: String, _ body: @Sendable (Setup) async throws -> T) async throws -> T {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("attache-dm-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root + "/out", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var configuration = ReferenceServerConfiguration(storeDirectory: root + "/store", port: 0, logLevel: .critical)
        configuration.fileFaults = try FileFaultPlan(parsing: fileFaults)
        configuration.fileLogPath = root + "/files.log"
        return try await withReferenceServerProcess(configuration: configuration) { port in
            try await body(Setup(server: LiveServer(port: port, store: root + "/store"), folder: root + "/out", log: root + "/files.log"))
        }
    }

    func manager(_ journal: (any DownloadJournaling)? = InMemoryDownloadJournal()) -> DownloadManager {
        var connection = ConnectionConfiguration()
        connection.retry = RetryPolicy(
            maximumAttempts: 3, initialDelay: .milliseconds(10), maximumDelay: .milliseconds(50), budget: .seconds(30))
        return DownloadManager(
            configuration: .init(maximumConcurrentTransfers: 4, progressInterval: .milliseconds(20)),
            connection: connection, journal: journal)
    }

    /// Reads events until one satisfies `condition`; an event for which `unexpected` holds fails the
    /// test at once, naming it.
    func next(
        _ events: inout AsyncStream<DownloadEvent>.Iterator, where condition: (DownloadEvent) -> Bool,
        unexpected: (DownloadEvent) -> Bool = { _ in false }
    ) async throws -> DownloadEvent {
        // A bound on a hang only (an event that never comes), far above any wait the tests expect: the
        // iterator races a sleep, and the test fails naming what it saw last instead of stalling the run.
        let box = IteratorBox(events)
        defer { events = box.iterator }
        var seen: [String] = []
        while true {
            let event = try await withThrowingTaskGroup(of: DownloadEvent??.self) { group in
                group.addTask { .some(await box.next()) }
                group.addTask {
                    try await Task.sleep(for: .seconds(300))
                    return .none
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            guard let event else {
                throw TestFailure("no download event within 300 s; the last ones: \(seen.suffix(12).joined(separator: "; "))")
            }
            guard let event else { throw TestFailure("the events ended") }
            if unexpected(event) { throw TestFailure("unexpected event: \(event); before it: \(seen.suffix(12).joined(separator: "; "))") }
            if condition(event) { return event }
            seen.append("\(event)")
        }
    }

    /// The events iterator, handed to the racing task (only one task reads it at a time).
    final class IteratorBox: @unchecked Sendable {
        var iterator: AsyncStream<DownloadEvent>.Iterator
        init(_ iterator: AsyncStream<DownloadEvent>.Iterator) { self.iterator = iterator }
        func next() async -> DownloadEvent? { await iterator.next() }
    }

    func isProgress(beyond bytes: Int64) -> (DownloadEvent) -> Bool {
        { event in
            if case .progress(_, let figures, _) = event { return figures.receivedBytes > bytes }
            return false
        }
    }

    @Test func aGroupPausedThenResumedContinuesFromTheSameByte() async throws {
        // The group's two first requests crawl (2-2.5 minutes a file), so that the pause lands mid-transfer
        // however long a loaded machine keeps this test from reading its events; the resumed ones, and
        // the other group's, go at full speed.
        try await Self.with(fileFaults: "throttle@1-2:rate=5000") { setup in
            let contents = [randomBytes(600_000), randomBytes(500_000)]
            var urls: [String] = []
            for bytes in contents { urls.append(try await setup.store(bytes)) }
            let manager = manager()
            var events = manager.events.makeAsyncIterator()
            var ids: [DownloadID] = []
            for (index, url) in urls.enumerated() {
                ids.append(try manager.add(DownloadItem(url: url, destination: setup.folder + "/\(index).bin", group: "export")))
            }
            // A download of the group that ends before the pause would leave the test waiting for ever.
            let group = ids
            let ended: (DownloadEvent) -> Bool = { event in
                switch event {
                case .completed(let id, _), .failed(let id, _): group.contains(id)
                default: false
                }
            }
            var moving: Set<DownloadID> = []
            while moving.count < 2 {
                let event = try await next(&events, where: isProgress(beyond: 20_000), unexpected: ended)
                if case .progress(let id, _, _) = event, ids.contains(id) { moving.insert(id) }
            }
            // Added once the group's two are moving, so that the two slow first requests are theirs.
            let otherURL = try await setup.store(randomBytes(100_000))
            try manager.add(DownloadItem(url: otherURL, destination: setup.folder + "/other.bin", group: "other"))
            manager.pause(group: "export")
            var pausedAt: [DownloadID: Int64] = [:]
            while pausedAt.count < 2 {
                let event = try await next(&events, where: { if case .paused = $0 { true } else { false } }, unexpected: ended)
                if case .paused(let id, let bytes) = event {
                    pausedAt[id] = bytes
                }
            }
            let settled = try await manager.waitUntilSettled()
            #expect(settled.paused == 2 && settled.completed == 1)
            for (index, id) in ids.enumerated() {
                let bytes = try #require(pausedAt[id])
                #expect(bytes > 0 && bytes < Int64(contents[index].count), "paused mid-file")
                #expect(FileManager.default.fileExists(atPath: id.path + ".part"))
                #expect(!FileManager.default.fileExists(atPath: id.path))
            }

            manager.resume(group: "export")
            let summary = try await manager.waitUntilSettled()
            #expect(summary.completed == 3 && summary.paused == 0)
            for (index, id) in ids.enumerated() {
                #expect(try Data(contentsOf: URL(fileURLWithPath: id.path)) == Data(contents[index]))
                let requests = try setup.requests(for: urls[index])
                let last = try #require(requests.last)
                // The second request continued at exactly the byte the pause kept, under the first ETag.
                #expect(last["range"] as? String == "bytes=\(pausedAt[id] ?? -1)-")
                #expect((last["ifRange"] as? String)?.hasPrefix("\"") == true)
                #expect(last["status"] as? Int == 206)
            }
            manager.close()
        }
    }

    @Test func aCancelledTransferLeavesNoOutput() async throws {
        // Slow enough (40 s for the file) that the cancel always lands mid-transfer, however late a loaded
        // machine lets the test read the progress event.
        try await Self.with(fileFaults: "throttle:rate=20000") { setup in
            let url = try await setup.store(randomBytes(800_000))
            let manager = manager()
            var events = manager.events.makeAsyncIterator()
            let id = try manager.add(DownloadItem(url: url, destination: setup.folder + "/a.bin"))
            _ = try await next(&events, where: isProgress(beyond: 30_000))
            manager.cancel(id)
            _ = try await next(&events, where: { if case .cancelled = $0 { true } else { false } })
            let summary = try await manager.waitUntilSettled()
            #expect(summary.cancelled == 1 && summary.completed == 0)
            let left = try FileManager.default.contentsOfDirectory(atPath: setup.folder)
            #expect(left.isEmpty, "\(left)")
            #expect(manager.status(id)?.phase == .cancelled)
            manager.close()
        }
    }

    @Test func aRestartedTransferDownloadsFromZero() async throws {
        // The first request slow (25 s), so that the restart always lands mid-transfer; the second at
        // full speed.
        try await Self.with(fileFaults: "throttle@1:rate=20000") { setup in
            let bytes = randomBytes(500_000)
            let url = try await setup.store(bytes)
            let manager = manager()
            var events = manager.events.makeAsyncIterator()
            let id = try manager.add(DownloadItem(url: url, destination: setup.folder + "/a.bin"))
            _ = try await next(&events, where: isProgress(beyond: 40_000))
            manager.restart(id)
            let completed = try await next(&events, where: { if case .completed = $0 { true } else { false } })
            guard case .completed(_, let receipt) = completed else { return }
            #expect(receipt.resumedFrom == 0)
            #expect(try Data(contentsOf: URL(fileURLWithPath: id.path)) == Data(bytes))
            let requests = try setup.requests(for: url)
            #expect(requests.count == 2)
            #expect(requests.allSatisfy { $0["range"] == nil && $0["status"] as? Int == 200 })
            manager.close()
        }
    }

    @Test func aFileChangedBetweenPauseAndResumeIsDownloadedWholeAgain() async throws {
        // The first request slow (20 s), so that the pause always lands mid-transfer.
        try await Self.with(fileFaults: "change@2,throttle@1:rate=20000") { setup in
            let bytes = randomBytes(400_000)
            let url = try await setup.store(bytes)
            let manager = manager()
            var events = manager.events.makeAsyncIterator()
            let id = try manager.add(DownloadItem(url: url, destination: setup.folder + "/a.bin"))
            _ = try await next(&events, where: isProgress(beyond: 50_000))
            manager.pause(id)
            _ = try await next(&events, where: { if case .paused = $0 { true } else { false } })
            manager.resume(id)
            let summary = try await manager.waitUntilSettled()
            #expect(summary.completed == 1)
            // The server's copy is now every byte complemented; nothing of the old bytes may remain.
            let changed = bytes.map { $0 ^ 0xFF }
            #expect(try Data(contentsOf: URL(fileURLWithPath: id.path)) == Data(changed))
            let requests = try setup.requests(for: url)
            try #require(requests.count == 2)
            #expect((requests[1]["range"] as? String)?.hasPrefix("bytes=") == true)
            #expect(requests[1]["ifRange"] != nil)
            #expect(requests[1]["status"] as? Int == 200)
            manager.close()
        }
    }

    @Test func aWrongExpectedDigestFailsThatFileOnly() async throws {
        try await Self.with(fileFaults: "") { setup in
            let contents = [randomBytes(70_000), randomBytes(80_000), randomBytes(90_000)]
            var urls: [String] = []
            for bytes in contents { urls.append(try await setup.store(bytes)) }
            let manager = manager()
            let collected = Task { [events = manager.events] in
                var failures: [AttacheError] = []
                for await event in events { if case .failed(_, let error) = event { failures.append(error) } }
                return failures
            }
            try manager.add(DownloadItem(url: urls[0], destination: setup.folder + "/0.bin", expectedSHA256: try await sha256Hex(contents[0])))
            try manager.add(DownloadItem(url: urls[1], destination: setup.folder + "/1.bin", expectedSHA256: String(repeating: "ab", count: 32)))
            try manager.add(DownloadItem(url: urls[2], destination: setup.folder + "/2.bin"))
            let summary = try await manager.waitUntilSettled()
            manager.close()
            let failures = await collected.value
            #expect(summary.completed == 2 && summary.failed == 1)
            #expect(failures.count == 1)
            #expect(failures.first?.code == .corruptInput)
            #expect(failures.first?.message.contains("not the expected") == true)
            #expect(!FileManager.default.fileExists(atPath: setup.folder + "/1.bin"))
            #expect(!FileManager.default.fileExists(atPath: setup.folder + "/1.bin.part"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: setup.folder + "/2.bin")) == Data(contents[2]))
        }
    }

    @Test func theJournalRemembersDoneFilesAcrossManagers() async throws {
        try await Self.with(fileFaults: "") { setup in
            let bytes = randomBytes(50_000)
            let url = try await setup.store(bytes)
            let path = setup.folder + "/../journal.sqlite"
            do {
                let journal = try DownloadJournal(path: path)
                let first = manager(journal)
                try first.add(DownloadItem(url: url, destination: setup.folder + "/a.bin"))
                #expect(try await first.waitUntilSettled().completed == 1)
                journal.close()
            }
            let journal = try DownloadJournal(path: path)
            #expect(try journal.counts() == [.done: 1])
            let second = manager(journal)
            try second.add(DownloadItem(url: url, destination: setup.folder + "/a.bin"))
            let summary = try await second.waitUntilSettled()
            #expect(summary.alreadyDone == 1 && summary.completed == 0)
            #expect(try setup.requests(for: url).count == 1)
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber
            #expect(mode?.intValue == 0o600)
        }
    }

    /// SIGKILL of `attache download --from` over 200 files, then the same command: every file complete
    /// and verified, and the server sent at most 5 % more bytes than the files hold.
    @Test func aKilledManyFileDownloadResumesWithoutFetchingTwice() async throws {
        try await Self.with(fileFaults: "throttle:rate=200000") { setup in
            var lines: [String] = []
            var expected: [String: [UInt8]] = [:]
            var total: Int64 = 0
            for index in 0..<200 {
                let bytes = randomBytes(Int.random(in: 20_000...60_000))
                let url = try await setup.store(bytes)
                let name = String(format: "file-%03d.bin", index)
                lines.append("\(url) \(name)" + (index % 2 == 0 ? " sha256=\(try await sha256Hex(bytes))" : ""))
                expected[name] = bytes
                total += Int64(bytes.count)
            }
            let list = setup.folder + "/../list.txt"
            try lines.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
            let arguments = ["download", "--from", list, "-d", setup.folder, "--concurrency", "8", "--json",
                             "--journal", setup.folder + "/../downloads.sqlite"]

            let first = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
            // At the 30th file's line, from the thread that reads it (a starved test task would be late).
            try first.signal(SIGKILL, whenOutputHolds: "\"event\":\"completed\"", count: 30)
            _ = try await first.wait(upTo: 120)
            #expect(first.endedBySignal, "the run ended before its kill: \(first.standardError)")
            let partial = try FileManager.default.contentsOfDirectory(atPath: setup.folder)
            #expect(partial.contains { $0.hasSuffix(".part") }, "the kill landed between files; the test proved less")

            let second = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
            let status = try await second.wait(upTo: 180)
            #expect(status == 0, "\(second.standardError)")
            #expect(second.standardOutput.contains("\"event\":\"alreadyDone\""))
            for (name, bytes) in expected {
                #expect(try Data(contentsOf: URL(fileURLWithPath: setup.folder + "/" + name)) == Data(bytes), "\(name)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: setup.folder).count == 200)
            let sent = try setup.totalBytesSent()
            #expect(Double(sent) <= Double(total) * 1.05, "sent \(sent) bytes for \(total)")
        }
    }

    @Test func aWrongDigestInTheListFailsThatFileWithExitThree() async throws {
        try await Self.with(fileFaults: "") { setup in
            let good = randomBytes(30_000)
            let bad = randomBytes(30_000)
            let goodURL = try await setup.store(good)
            let badURL = try await setup.store(bad)
            let list = setup.folder + "/../list.jsonl"
            try """
                {"url":"\(goodURL)","output":"good.bin","sha256":"\(try await sha256Hex(good))"}
                # a comment
                \(badURL) bad.bin sha256=\(String(repeating: "0", count: 64))
                """.write(toFile: list, atomically: true, encoding: .utf8)
            let process = await attache(
                ["download", "--from", list, "-d", setup.folder, "--journal", setup.folder + "/../j.sqlite"])
            #expect(process.status == 3)
            #expect(process.standardOutput.contains("downloaded \(setup.folder)/good.bin"))
            #expect(process.standardOutput.contains("failed \(setup.folder)/bad.bin: download:"))
            #expect(process.standardOutput.contains("not the expected"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: setup.folder) == ["good.bin"])
        }
    }

    @Test func ctrlCPausesWithExit130AndTheSameCommandResumesFromTheKeptBytes() async throws {
        try await Self.with(fileFaults: "throttle:rate=200000") { setup in
            var urls: [String] = []
            var contents: [[UInt8]] = []
            for _ in 0..<3 {
                let bytes = randomBytes(400_000)
                contents.append(bytes)
                urls.append(try await setup.store(bytes))
            }
            let arguments = ["download"] + urls + ["-d", setup.folder, "--journal", setup.folder + "/../j.sqlite", "--json"]
            let first = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
            // At the sixth progress line, from the thread that reads it: the three files take about 2 s,
            // which a starved test task could miss.
            try first.signal(SIGINT, whenOutputHolds: "\"event\":\"progress\"", count: 6)
            #expect(try await first.wait(upTo: 60) == 130)
            #expect(first.standardError.contains("To resume, run the same command again"))
            #expect(first.standardOutput.contains("\"event\":\"paused\""))

            let second = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
            #expect(try await second.wait(upTo: 60) == 0, "\(second.standardError)")
            for (index, url) in urls.enumerated() {
                let name = String(url.split(separator: "/").last ?? "")
                #expect(try Data(contentsOf: URL(fileURLWithPath: setup.folder + "/" + name)) == Data(contents[index]))
                let requests = try setup.requests(for: url)
                #expect(requests.count == 2)
                #expect((requests.last?["range"] as? String)?.hasPrefix("bytes=") == true, "resumed, not started over")
            }
        }
    }

    @Test func aConnectionCutMidBodyIsContinuedByRange() async throws {
        try await Self.with(fileFaults: "cut@1:after=100000") { setup in
            let bytes = randomBytes(300_000)
            let url = try await setup.store(bytes)
            let manager = manager()
            let id = try manager.add(DownloadItem(url: url, destination: setup.folder + "/a.bin"))
            let summary = try await manager.waitUntilSettled()
            #expect(summary.completed == 1)
            #expect(try Data(contentsOf: URL(fileURLWithPath: id.path)) == Data(bytes))
            let requests = try setup.requests(for: url)
            #expect(requests.count == 2)
            #expect(requests.last?["range"] as? String == "bytes=100000-")
            manager.close()
        }
    }

    @Test func aSealedFileInTheListIsDecryptedWithItsKeyFromTheEnvironment() async throws {
        try await Self.with(fileFaults: "cut@1-2:after=5000") { setup in
            let plaintext = randomBytes(150_000)
            let key = AttachmentKey.random(for: .streamGCM)
            let file = try TemporaryFile(name: "payload.bin", bytes: plaintext)
            defer { file.remove() }
            let receipt = try await setup.server.pipeline {
                $0.seal.scheme = .streamGCM
                $0.seal.key = key
            }.send(Attachment(path: file.path))
            let url = "http://127.0.0.1:\(setup.server.port)/files/\(try #require(receipt.fileId))"
            let plainURL = try await setup.store(randomBytes(10_000))
            let list = setup.folder + "/../list.txt"
            try "\(url) secret.bin key-env=DM_TEST_KEY\n\(plainURL) plain.bin\n".write(toFile: list, atomically: true, encoding: .utf8)
            let process = await attache(
                ["download", "--from", list, "-d", setup.folder, "--journal", setup.folder + "/../j.sqlite"],
                environment: ["DM_TEST_KEY": key.base64EncodedString])
            #expect(process.status == 0, "\(process.standardError)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: setup.folder + "/secret.bin")) == Data(plaintext))
            #expect(FileManager.default.fileExists(atPath: setup.folder + "/plain.bin"))
            // Both first requests were cut: the sealed bytes came in two requests and were decrypted once whole.
            #expect(try setup.requests(for: url).count == 2)
            #expect(!process.standardOutput.contains(key.base64EncodedString) && !process.standardError.contains(key.base64EncodedString))
        }
    }
}
