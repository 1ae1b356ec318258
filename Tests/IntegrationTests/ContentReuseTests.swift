import Attache
import AttacheBatch
import AttacheCore
import AttacheTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// `attache batch --dedup reuse` and `verify` against the reference server: each content is sent once and
/// its copies take its receipt, across runs too; what a user checks is that every receipt's URL serves bytes
/// its key opens to the file. The faults: a batch killed mid-send and run again, an object deleted on the
/// server, a journal entry edited to point at another object.
@Suite("Content reuse (--dedup reuse, verify)")
struct ContentReuseTests {
    static var samples: URL { ExitStatusTests.packageRoot.appendingPathComponent("Samples") }

    /// A folder of copies: 4 of a photo, 3 of a sticker, 2 of a text file, and one screenshot.
    struct Copies {
        let folder: ScratchFolder
        var files: String { folder.path + "/files" }
        var journal: String { folder.path + "/journal.sqlite" }

        init(prefix: String) throws {
            folder = try ScratchFolder(prefix: prefix)
            try FileManager.default.createDirectory(atPath: folder.path + "/files", withIntermediateDirectories: true)
            let photo = try Data(contentsOf: ContentReuseTests.samples.appendingPathComponent("photo.jpg"))
            let sticker = try Data(contentsOf: ContentReuseTests.samples.appendingPathComponent("sticker.webp"))
            for index in 1...4 { try photo.write(to: URL(fileURLWithPath: files + "/p\(index).jpg")) }
            for index in 1...3 { try sticker.write(to: URL(fileURLWithPath: files + "/s\(index).webp")) }
            for index in 1...2 { try folder.write("files/notes\(index).txt", String(repeating: "minutes of the meeting\n", count: 400)) }
            try Data(contentsOf: ContentReuseTests.samples.appendingPathComponent("screenshot.png"))
                .write(to: URL(fileURLWithPath: files + "/screenshot.png"))
        }

        func copy(_ name: String, to copy: String) throws {
            try FileManager.default.copyItem(atPath: files + "/" + name, toPath: files + "/" + copy)
        }
    }

    /// The receipts of the `succeeded` events of a `--json` batch, and the warnings of `reuseRefused` ones.
    static func events(_ output: String) throws -> (receipts: [UploadReceipt], refused: [String]) {
        struct Line: Decodable {
            var event: String
            var path: String?
            var receipt: UploadReceipt?
            var message: String?
        }
        var receipts: [UploadReceipt] = []
        var refused: [String] = []
        for line in output.split(separator: "\n") {
            let event = try JSONDecoder().decode(Line.self, from: Data(line.utf8))
            if event.event == "succeeded", let receipt = event.receipt { receipts.append(receipt) }
            if event.event == "reuseRefused" { refused.append((event.path ?? "") + ": " + (event.message ?? "")) }
        }
        return (receipts, refused)
    }

    static func batch(_ copies: Copies, _ server: LiveServer, _ extra: [String]) async throws -> [UploadReceipt] {
        let result = await attache(
            ["batch", copies.files, "--url", server.uploadURL, "--journal", copies.journal, "--json"] + extra)
        #expect(result.status == 0, "\(result.all.suffix(2000))")
        return try events(result.standardOutput).receipts
    }

    /// What a user checks: the receipt's URL serves bytes that its key opens, to what the source became.
    static func expectOpens(_ receipt: UploadReceipt, _ server: LiveServer) async throws -> [UInt8] {
        let (stored, response) = try await server.get("/files/\(try #require(receipt.fileId))")
        #expect(response.statusCode == 200, "\(receipt.path): \(response.statusCode)")
        let key = try #require(receipt.seal.key, "\(receipt.path): no key in the receipt")
        let plain = try Unsealer(scheme: receipt.seal.scheme, key: key, transferEncoding: receipt.seal.transferEncoding)
            .unseal(DataSource(Array(stored))).readToEnd()
        #expect(Int64(plain.count) == receipt.transform.byteCount, "\(receipt.path)")
        return plain
    }

    static func sha256(_ path: String) throws -> String {
        ContentDigest.sha256Hex(of: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    @Test("reuse: each content sent once, its copies take its receipt and key; a rerun and new copies send nothing")
    func eachContentIsSentOnce() async throws {
        let copies = try Copies(prefix: "attache-reuse")
        defer { copies.folder.remove() }
        try await LiveServer.with { server in
            let receipts = try await Self.batch(copies, server, ["--dedup", "reuse"])
            #expect(receipts.count == 10)
            #expect(try await server.stats().idempotencyKeys == 4, "one upload per distinct content")
            let sent = receipts.filter { $0.dedup == nil }
            #expect(sent.count == 4)
            var opened: [String: [UInt8]] = [:]
            for receipt in sent { opened[try Self.sha256(receipt.path)] = try await Self.expectOpens(receipt, server) }
            for receipt in receipts where receipt.dedup != nil {
                let dedup = try #require(receipt.dedup)
                let digest = try Self.sha256(receipt.path)
                #expect(dedup.sha256 == digest)
                let source = try #require(sent.first { $0.idempotencyKey == dedup.reusedFrom }, "\(receipt.path)")
                #expect(try Self.sha256(source.path) == digest, "\(receipt.path) reused another content")
                #expect(receipt.url == source.url && receipt.seal.key == source.seal.key)
                #expect(try await Self.expectOpens(receipt, server) == opened[digest])
            }
            let notes = try #require(receipts.first { $0.path.hasSuffix("notes2.txt") })
            #expect(try await Self.expectOpens(notes, server) == Array(try Data(contentsOf: URL(fileURLWithPath: notes.path))))

            // The same folder again: nothing is sent, and the journal's receipts are the first run's.
            let before = try UploadJournal(path: copies.journal).entries().map(\.receipt)
            let again = try await Self.batch(copies, server, ["--dedup", "reuse"])
            #expect(again.isEmpty)
            #expect(try UploadJournal(path: copies.journal).entries().map(\.receipt) == before)

            // New copies of stored content: reused, nothing sent.
            try copies.copy("p1.jpg", to: "forwarded.jpg")
            try copies.copy("s1.webp", to: "forwarded.webp")
            let later = try await Self.batch(copies, server, ["--dedup", "reuse"])
            #expect(later.count == 2 && later.allSatisfy { $0.dedup != nil })
            #expect(try await server.stats().idempotencyKeys == 4)
            for receipt in later { _ = try await Self.expectOpens(receipt, server) }
        }
    }

    @Test("verify: an object deleted on the server is sent again, and the index then points at the new one")
    func verifySendsAGoneObjectAgain() async throws {
        let copies = try Copies(prefix: "attache-reuse-verify")
        defer { copies.folder.remove() }
        try await LiveServer.with { server in
            let first = try await Self.batch(copies, server, ["--dedup", "reuse"])
            let photo = try #require(first.first { $0.path.hasSuffix("p1.jpg") })
            let fileId = try #require(photo.fileId)
            try FileManager.default.removeItem(atPath: server.store + "/files/" + fileId)
            try? FileManager.default.removeItem(atPath: server.store + "/files/" + fileId + ".json")

            try copies.copy("p1.jpg", to: "forwarded.jpg")
            try copies.copy("s1.webp", to: "forwarded.webp")
            let result = await attache(
                ["batch", copies.files, "--url", server.uploadURL, "--journal", copies.journal, "--json", "--dedup", "verify"])
            #expect(result.status == 0, "\(result.all.suffix(2000))")
            let (receipts, refused) = try Self.events(result.standardOutput)
            #expect(refused.count == 1 && refused.first?.contains("gone") == true, "\(refused)")
            let forwarded = try #require(receipts.first { $0.path.hasSuffix("forwarded.jpg") })
            #expect(forwarded.dedup == nil, "the photo was not sent again")
            #expect(forwarded.fileId != fileId)
            _ = try await Self.expectOpens(forwarded, server)
            let sticker = try #require(receipts.first { $0.path.hasSuffix("forwarded.webp") })
            #expect(sticker.dedup != nil, "a stored object that is there was not reused")

            // The index was corrected: the next copy reuses the new upload.
            try copies.copy("p1.jpg", to: "again.jpg")
            let next = try await Self.batch(copies, server, ["--dedup", "verify"])
            #expect(next.count == 1 && next.first?.dedup?.reusedFrom == forwarded.idempotencyKey)
            _ = try await Self.expectOpens(try #require(next.first), server)
        }
    }

    @Test("a journal entry edited to point at another object is caught: by the size with reuse, by opening it with verify")
    func editedEntryIsCaught() async throws {
        let copies = try Copies(prefix: "attache-reuse-edited")
        defer { copies.folder.remove() }
        try await LiveServer.with { server in
            let first = try await Self.batch(copies, server, ["--dedup", "reuse"])
            // The copy that was sent: whichever of s1-s3 came to the content's turn first (they run at once).
            let sticker = try #require(first.first { $0.path.hasSuffix(".webp") && $0.dedup == nil })
            let screenshot = try #require(first.first { $0.path.hasSuffix("screenshot.png") })
            // Every row of the sticker's content now names the screenshot's object (its URL and id).
            let edit = try ChildProcess(
                executable: "/usr/bin/python3",
                arguments: [
                    "-c",
                    """
                    import json, sqlite3, sys
                    db = sqlite3.connect(sys.argv[1])
                    for path, text in db.execute("SELECT path, receipt FROM file WHERE idempotencyKey = ?", (sys.argv[2],)).fetchall():
                        receipt = json.loads(text)
                        receipt["url"], receipt["fileId"] = sys.argv[3], sys.argv[4]
                        db.execute("UPDATE file SET receipt = ? WHERE path = ?", (json.dumps(receipt), path))
                    db.commit()
                    """,
                    copies.journal, sticker.idempotencyKey, try #require(screenshot.url), try #require(screenshot.fileId),
                ])
            #expect(try await edit.wait(upTo: 60) == 0, "\(edit.standardError)")

            try copies.copy("s1.webp", to: "forwarded.webp")
            let result = await attache(
                ["batch", copies.files, "--url", server.uploadURL, "--journal", copies.journal, "--json", "--dedup", "verify"])
            #expect(result.status == 0, "\(result.all.suffix(2000))")
            let (receipts, refused) = try Self.events(result.standardOutput)
            #expect(!refused.isEmpty, "the edited entry was trusted")
            let forwarded = try #require(receipts.first)
            #expect(forwarded.dedup == nil && forwarded.fileId != screenshot.fileId)
            _ = try await Self.expectOpens(forwarded, server)

            // Without verify, an entry for bytes of another size is caught too: the screenshot's receipt
            // given to the photo's rows.
            let photo = try #require(first.first { $0.path.hasSuffix(".jpg") && $0.dedup == nil })
            let swap = try ChildProcess(
                executable: "/usr/bin/python3",
                arguments: [
                    "-c",
                    """
                    import sqlite3, sys
                    db = sqlite3.connect(sys.argv[1])
                    other = db.execute("SELECT receipt FROM file WHERE path LIKE '%screenshot.png'").fetchone()[0]
                    db.execute("UPDATE file SET receipt = ? WHERE idempotencyKey = ?", (other, sys.argv[2]))
                    db.commit()
                    """,
                    copies.journal, photo.idempotencyKey,
                ])
            #expect(try await swap.wait(upTo: 60) == 0, "\(swap.standardError)")
            try copies.copy("p1.jpg", to: "forwarded.jpg")
            let plain = await attache(
                ["batch", copies.files, "--url", server.uploadURL, "--journal", copies.journal, "--json", "--dedup", "reuse"])
            #expect(plain.status == 0, "\(plain.all.suffix(2000))")
            let (photos, photoRefusals) = try Self.events(plain.standardOutput)
            #expect(photoRefusals.count == 1 && photoRefusals.first?.contains("another size") == true, "\(photoRefusals)")
            let sentPhoto = try #require(photos.first)
            #expect(sentPhoto.dedup == nil)
            _ = try await Self.expectOpens(sentPhoto, server)
        }
    }

    @Test("library: a ContentIndex makes copies sent at once and later one upload; a forgotten object is sent again")
    func libraryIndex() async throws {
        let folder = try ScratchFolder(prefix: "attache-reuse-library")
        defer { folder.remove() }
        let photo = Array(try Data(contentsOf: Self.samples.appendingPathComponent("photo.jpg")))
        let paths = try (0..<4).map { try folder.write("copy\($0).jpg", photo) }
        let index = InMemoryContentIndex()
        try await LiveServer.with { server in
            let pipeline = try server.pipeline {
                $0.seal = SealConfiguration()
                $0.contentIndex = index
                $0.contentReuse = .verify
            }
            let atOnce = try await withThrowingTaskGroup(of: UploadReceipt.self) { group in
                for path in paths.prefix(3) { group.addTask { try await pipeline.send(Attachment(path: path)) } }
                var receipts: [UploadReceipt] = []
                for try await receipt in group { receipts.append(receipt) }
                return receipts
            }
            // In memory, the same bytes: the same content.
            let inMemory = try await pipeline.send(Attachment(bytes: photo, filename: "again.jpg"))
            #expect(try await server.stats().idempotencyKeys == 1)
            let sent = try #require(atOnce.first { $0.dedup == nil })
            #expect(atOnce.filter { $0.dedup != nil }.count == 2)
            #expect(inMemory.dedup?.reusedFrom == sent.idempotencyKey)
            for receipt in atOnce + [inMemory] { _ = try await Self.expectOpens(receipt, server) }

            // The object is deleted: verify sends the next copy again and the index takes the new upload.
            try FileManager.default.removeItem(atPath: server.store + "/files/" + (try #require(sent.fileId)))
            let resent = try await pipeline.send(Attachment(path: paths[3]))
            #expect(resent.dedup == nil && resent.fileId != sent.fileId)
            #expect(try await index.storedUpload(for: ContentKey(sha256: try Self.sha256(paths[3]), settings: pipeline.configuration.settingsFingerprint))?.idempotencyKey == resent.idempotencyKey)
            _ = try await Self.expectOpens(resent, server)
        }
    }

    @Test("a copy takes over the key of a send whose answer was lost: the server answers it again, stores nothing new")
    func unfinishedSendIsTakenOver() async throws {
        let folder = try ScratchFolder(prefix: "attache-reuse-takeover")
        defer { folder.remove() }
        let store = folder.path + "/store"
        let journal = folder.path + "/journal.sqlite"
        let original = try folder.write("files/a.bin", String(repeating: "a send whose answer never came\n", count: 2_000))
        func batch(_ port: Int, _ extra: [String] = []) async -> CommandResult {
            await attache(
                ["batch", folder.path + "/files", "--url", "http://127.0.0.1:\(port)/upload", "--journal", journal,
                 "--dedup", "reuse", "--json"] + extra)
        }
        func keys(_ port: Int) async throws -> Int {
            let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/stats")!)
            return try JSONDecoder().decode(LiveServer.Stats.self, from: data).idempotencyKeys
        }
        // The server stores the upload and its key, then dies before answering.
        var server = try await ServerProcess.start(store: store, extra: ["--fault", "crash@1:at=after-key"])
        let lost = await batch(server.port, ["--attempts", "1"])
        #expect(lost.status != 0)
        #expect(try await server.waitForExit() == .killed)
        server = try await ServerProcess.start(store: store, port: server.port)
        defer { server.kill() }
        #expect(try await keys(server.port) == 1)

        try FileManager.default.copyItem(atPath: original, toPath: folder.path + "/files/b.bin")
        let copy = try Self.events(await batch(server.port).standardOutput).receipts
        let taken = try #require(copy.first { $0.path.hasSuffix("b.bin") })
        #expect(taken.replayed, "the copy was stored again instead of taking over the lost send's key")
        #expect(try await keys(server.port) == 1)

        let retried = try Self.events(await batch(server.port, ["--retry-failed"]).standardOutput).receipts
        let first = try #require(retried.first { $0.path.hasSuffix("a.bin") })
        #expect(first.dedup?.reusedFrom == taken.idempotencyKey)
        #expect(try await keys(server.port) == 1)
        for receipt in [taken, first] {
            let (stored, _) = try await URLSession.shared.data(from: URL(string: try #require(receipt.url))!)
            let plain = try Unsealer(
                scheme: receipt.seal.scheme, key: try #require(receipt.seal.key), transferEncoding: receipt.seal.transferEncoding
            ).unseal(DataSource(Array(stored))).readToEnd()
            #expect(plain == Array(try Data(contentsOf: URL(fileURLWithPath: original))))
        }
    }

    @Test("killed mid-run under reuse and run again: every content stored once, every receipt opens its file")
    func killedMidRunStoresEachContentOnce() async throws {
        let folder = try ScratchFolder(prefix: "attache-reuse-kill")
        defer { folder.remove() }
        let files = folder.path + "/files"
        let journal = folder.path + "/journal.sqlite"
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        // 10 contents, 3 copies each, in an order that mixes them.
        var generator = SeededGenerator(seed: SeededGenerator.forTest("reuse kill").seed)
        for content in 0..<10 {
            let bytes = (0..<(40_000 + content * 3_000)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            for copy in 0..<3 {
                try Data(bytes).write(to: URL(fileURLWithPath: files + "/\(copy)-\(content).bin"))
            }
        }
        // Retry-After waits stretch the run, so that the kills land mid-run.
        try await LiveServer.with(faults: "429@40%:retry-after=1") { server in
            var kills = 0
            for round in 0..<3 {
                let before = try await server.stats().idempotencyKeys
                let process = try ChildProcess(
                    executable: try attacheBinary(),
                    arguments: [
                        "batch", files, "--url", server.uploadURL, "--journal", journal, "--dedup", "reuse",
                        "--concurrency", "4", "--attempts", "40",
                    ])
                let killer = try StatsKiller.start(
                    pid: process.processIdentifier, statsURL: "http://127.0.0.1:\(server.port)/stats",
                    key: "idempotencyKeys", atLeast: before + 1, delay: 0.1 * Double(round))
                _ = try await process.wait(upTo: 120)
                _ = try await killer.wait(upTo: 30)
                if process.endedBySignal { kills += 1 }
            }
            let final = try ChildProcess(
                executable: try attacheBinary(),
                arguments: [
                    "batch", files, "--url", server.uploadURL, "--journal", journal, "--dedup", "reuse", "--attempts", "40",
                ])
            #expect(try await final.wait(upTo: 180) == 0, "\(final.standardError.suffix(2000))")
            #expect(kills >= 1, "no run was killed mid-way; the test proved nothing")

            let stats = try await server.stats()
            #expect(stats.idempotencyKeys == 10, "each content stored once")
            let entries = try UploadJournal(path: journal).entries()
            #expect(entries.count == 30 && entries.allSatisfy { $0.state == .done })
            for entry in entries {
                let receipt = try #require(entry.receipt, "\(entry.path)")
                let plain = try await Self.expectOpens(receipt, server)
                #expect(plain == Array(try Data(contentsOf: URL(fileURLWithPath: entry.path))), "\(entry.path)")
            }
        }
    }
}
