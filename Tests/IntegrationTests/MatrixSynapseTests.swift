import Attache
import AttacheBatch
import AttacheCore
import AttacheTestSupport
import Foundation
import Testing

/// `--matrix` against a real homeserver: Synapse (PyPI `matrix-synapse`, in the bootstrap's venv of its own),
/// started on 127.0.0.1 on a free port for each test and stopped by pid, with matrix-nio as the other
/// client (`Tests/IntegrationTests/Tools/synapse_server.py`, `matrix_client.py`).
@Suite("Matrix homeserver (Synapse)", .serialized)
struct MatrixSynapseTests {
    /// A Synapse of this test's own, with two users and a room they share.
    struct Homeserver {
        let service: ServiceProcess
        let folder: ScratchFolder
        let url: String
        let sender: [String: Any]
        let receiver: [String: Any]
        let room: String

        var senderToken: String { sender["access_token"] as? String ?? "" }
        var receiverToken: String { receiver["access_token"] as? String ?? "" }

        func stop() {
            service.stop()
            folder.remove()
        }
    }

    static func start(_ options: [String] = []) async throws -> Homeserver {
        let folder = try ScratchFolder(prefix: "attache-synapse")
        let service = try await ServiceProcess.python("synapse_server.py", ["--data", folder.path + "/data"] + options)
        let url = "http://127.0.0.1:\(service.port)"
        do {
            let sender = try await client(["register", "--homeserver", url, "--shared-secret", "attache-test-shared-secret", "--user", "sender", "--admin"])
            let receiver = try await client(["register", "--homeserver", url, "--shared-secret", "attache-test-shared-secret", "--user", "receiver"])
            let created = try await client([
                "create-room", "--homeserver", url, "--token", try #require(sender["access_token"] as? String),
                "--invite", try #require(receiver["user_id"] as? String),
            ])
            return Homeserver(
                service: service, folder: folder, url: url, sender: sender, receiver: receiver,
                room: try #require(created["room_id"] as? String))
        } catch {
            service.stop()
            folder.remove()
            throw error
        }
    }

    /// `matrix_client.py` with matrix-nio's Python: its one JSON object.
    static func client(_ arguments: [String]) async throws -> [String: Any] {
        let python = try python(with: ["nio"])
        let result = try await runCommand(python, [ServiceProcess.tools + "/matrix_client.py"] + arguments)
        let object = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        try #require(result.status == 0, "matrix_client.py \(arguments.first ?? ""): \(result.all)")
        return try #require(object, "matrix_client.py \(arguments.first ?? ""): \(result.all)")
    }

    static func attache(_ arguments: [String], token: String) async throws -> CommandResult {
        try await runCommand(try attacheBinary(), arguments, environment: ["MATRIX_TOKEN": token])
    }

    static var samples: URL { ExitStatusTests.packageRoot.appendingPathComponent("Samples") }

    /// Each kind goes up with `--matrix`; its receipt's content is sent as an event by one user, and the
    /// other user's matrix-nio client downloads the file and its thumbnail through authenticated media and
    /// opens both with the event's keys.
    @Test("photo, video, voice note, sticker and PDF: stored, sent as the receipt's content, opened by another client")
    func eachKindOpensInAnotherClient() async throws {
        let server = try await Self.start()
        defer { server.stop() }
        let names = ["photo.jpg", "clip.mp4", "voice.ogg", "sticker.webp", "document.pdf"]
        var receipts: [String: [String: Any]] = [:]
        for name in names {
            let result = try await Self.attache(
                ["upload", Self.samples.appendingPathComponent(name).path, "--matrix", server.url, "--bearer-env", "MATRIX_TOKEN",
                 "--json", "--no-progress"], token: server.senderToken)
            try #require(result.status == 0, "\(name): \(result.all)\n\(server.service.outputTail())")
            let receipt = try jsonObject(result.standardOutput)
            receipts[name] = receipt
            let matrix = try #require(receipt["matrix"] as? [String: Any], "\(name): no matrix receipt")
            let content = try #require(matrix["content"] as? [String: Any])
            let file = try #require(content["file"] as? [String: Any], "\(name): no EncryptedFile")
            #expect((file["url"] as? String)?.hasPrefix("mxc://localhost/") == true)
            #expect(((file["key"] as? [String: Any])?["k"] as? String)?.isEmpty == false)
            let contentFile = try server.folder.write("\(name).content.json", String(decoding: try JSONSerialization.data(withJSONObject: content), as: UTF8.self))
            _ = try await Self.client([
                "send", "--homeserver", server.url, "--token", server.senderToken, "--room", server.room,
                "--event-type", try #require(matrix["eventType"] as? String), "--content-file", contentFile,
            ])
        }
        let out = server.folder.path + "/received"
        let received = try await Self.client([
            "receive", "--homeserver", server.url, "--token", server.receiverToken, "--room", server.room, "--out", out,
        ])
        let events = try #require(received["events"] as? [[String: Any]])
        #expect(events.count == names.count, "\(received)")
        for name in names {
            let receipt = try #require(receipts[name])
            let event = try #require(events.first { $0["body"] as? String == receipt["filename"] as? String }, "\(name) not received")
            let matrix = try #require(receipt["matrix"] as? [String: Any])
            let kind = receipt["kind"] as? String
            switch kind {
            case "sticker": #expect(event["type"] as? String == "m.sticker")
            case "image": #expect(event["msgtype"] as? String == "m.image")
            case "video": #expect(event["msgtype"] as? String == "m.video")
            case "voice": #expect(event["msgtype"] as? String == "m.audio")
            default: #expect(event["msgtype"] as? String == "m.file")
            }
            // The file: opened with the event's key and hash, the bytes the receipt says were sent.
            let file = try #require(event["file"] as? [String: Any], "\(name): \(event)")
            #expect(file["encrypted"] as? Bool == true)
            let path = try #require(file["path"] as? String, "\(name): \(file)")
            let opened = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            let seal = try #require(receipt["seal"] as? [String: Any])
            #expect(opened.count == seal["plaintextByteCount"] as? Int, "\(name)")
            if name == "document.pdf" {
                #expect(opened == Array(try Data(contentsOf: Self.samples.appendingPathComponent(name))))
            }
            let info = try #require((matrix["content"] as? [String: Any])?["info"] as? [String: Any])
            #expect(info["size"] as? Int == opened.count)
            if name == "voice.ogg" {
                let content = try #require(matrix["content"] as? [String: Any])
                #expect(content["org.matrix.msc3245.voice"] != nil)
                let audio = try #require(content["org.matrix.msc1767.audio"] as? [String: Any])
                #expect((audio["duration"] as? Int ?? 0) > 0)
                let waveform = try #require(audio["waveform"] as? [Int])
                #expect(!waveform.isEmpty && waveform.allSatisfy { (0...1024).contains($0) })
            }
            // The thumbnail, where the receipt has one: a JPEG of the receipt's size, opened with its own IV and hash.
            let thumbnails = receipt["thumbnails"] as? [[String: Any]] ?? []
            if let first = thumbnails.first {
                let thumbnail = try #require(event["thumbnail"] as? [String: Any], "\(name): no thumbnail received")
                let thumbnailPath = try #require(thumbnail["path"] as? String, "\(name): \(thumbnail)")
                let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: thumbnailPath)))
                #expect(bytes.starts(with: [0xFF, 0xD8, 0xFF]), "\(name): the thumbnail is not a JPEG")
                #expect(bytes.count == first["byteCount"] as? Int)
                let thumbnailInfo = try #require(info["thumbnail_info"] as? [String: Any])
                // A key of its own: the attachment's key does not open the thumbnail.
                let thumbnailFile = try #require(info["thumbnail_file"] as? [String: Any])
                let fileKey = ((matrix["content"] as? [String: Any])?["file"] as? [String: Any])?["key"] as? [String: Any]
                #expect((thumbnailFile["key"] as? [String: Any])?["k"] as? String != fileKey?["k"] as? String)
                #expect(thumbnailInfo["w"] as? Int == first["width"] as? Int)
                #expect(thumbnailInfo["h"] as? Int == first["height"] as? Int)
            } else if ["photo.jpg", "clip.mp4"].contains(name) {
                Issue.record("\(name): no thumbnail in the receipt")
            }
        }
    }

    /// The homeserver's `m.upload.size` is read once, and a larger file is refused before it is sent.
    @Test("a file over the homeserver's upload limit is refused before anything is sent")
    func overTheLimitIsRefusedBeforeSending() async throws {
        let server = try await Self.start(["--max-upload-size", "10000"])
        defer { server.stop() }
        let result = try await Self.attache(
            ["upload", Self.samples.appendingPathComponent("report.docx").path, "--matrix", server.url,
             "--bearer-env", "MATRIX_TOKEN", "--no-progress"], token: server.senderToken)
        #expect(result.status == 65, "\(result.all)")
        #expect(result.standardError.contains("m.upload.size") && result.standardError.contains("10000"), "\(result.standardError)")
        let media = try await Self.client(["media-list", "--homeserver", server.url, "--admin-token", server.senderToken])
        #expect(media["count"] as? Int == 0)
    }

    /// `--matrix-no-reserve`: one request per file (a post), no reservation; the file is stored and opens.
    @Test("--matrix-no-reserve posts the file: stored, and the receipt's key opens it")
    func postedWithoutReservation() async throws {
        let server = try await Self.start(["--log-level", "INFO"])
        defer { server.stop() }
        let result = try await Self.attache(
            ["upload", Self.samples.appendingPathComponent("document.pdf").path, "--matrix", server.url, "--bearer-env", "MATRIX_TOKEN",
             "--matrix-no-reserve", "--json", "--no-progress"], token: server.senderToken)
        try #require(result.status == 0, "\(result.all)")
        let receipt = try JSONDecoder().decode(UploadReceipt.self, from: Data(result.standardOutput.utf8))
        let uri = try #require(receipt.fileId)
        #expect(uri.hasPrefix("mxc://localhost/"))
        let log = server.service.outputTail(lines: 100_000)
        #expect(!log.contains("/_matrix/media/v1/create") && log.contains("/_matrix/media/v3/upload"), "\(log.suffix(2000))")
        let info = try server.folder.write("info.json", String(decoding: try JSONEncoder().encode(try #require(receipt.seal.encryptedFile)), as: UTF8.self))
        // Downloaded through authenticated media, its hash checked and decrypted in one command.
        let out = server.folder.path + "/opened"
        let fetched = try await Self.attache(
            ["download", uri, "--matrix", server.url, "--bearer-env", "MATRIX_TOKEN", "--file-info", info, "-o", out, "--no-progress"],
            token: server.senderToken)
        try #require(fetched.status == 0, "\(fetched.all)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data(contentsOf: Self.samples.appendingPathComponent("document.pdf")))
        // Another hash than the stored bytes': refused, and no output left.
        var wrong = try #require(receipt.seal.encryptedFile)
        wrong.hashes = ["sha256": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"]
        let wrongInfo = try server.folder.write("wrong.json", String(decoding: try JSONEncoder().encode(wrong), as: UTF8.self))
        let refused = try await Self.attache(
            ["download", uri, "--matrix", server.url, "--bearer-env", "MATRIX_TOKEN", "--file-info", wrongInfo, "-o",
             server.folder.path + "/refused", "--no-progress"], token: server.senderToken)
        #expect(refused.status == 65, "\(refused.all)")
        #expect(!FileManager.default.fileExists(atPath: server.folder.path + "/refused"))
    }

    /// A token the homeserver does not know, or one it revoked, ends the command at once with the status of
    /// its own.
    @Test("an unknown or revoked token is `unauthorized` (exit 80), not retried, and not shown")
    func unknownTokenIsUnauthorized() async throws {
        let server = try await Self.start()
        defer { server.stop() }
        let token = "syt_not_a_token_of_this_server_0123456789"
        let clock = ContinuousClock()
        let started = clock.now
        let result = try await Self.attache(
            ["upload", Self.samples.appendingPathComponent("notes.txt").path, "--matrix", server.url,
             "--bearer-env", "MATRIX_TOKEN", "--no-progress"], token: token)
        #expect(result.status == 80, "\(result.all)")
        #expect(result.standardError.contains("M_UNKNOWN_TOKEN") && result.standardError.contains("[unauthorized]"), "\(result.standardError)")
        #expect(!result.all.contains(token))
        #expect(clock.now - started < .seconds(30), "an unknown token was retried")

        // A token that worked and was revoked (the user logged out): the same.
        let revoked = server.receiverToken
        let before = try await Self.attache(
            ["upload", Self.samples.appendingPathComponent("notes.txt").path, "--matrix", server.url,
             "--bearer-env", "MATRIX_TOKEN", "--no-progress"], token: revoked)
        #expect(before.status == 0, "\(before.all)")
        _ = try await Self.client(["logout", "--homeserver", server.url, "--token", revoked])
        let after = try await Self.attache(
            ["upload", Self.samples.appendingPathComponent("notes.txt").path, "--matrix", server.url,
             "--bearer-env", "MATRIX_TOKEN", "--no-progress"], token: revoked)
        #expect(after.status == 80, "\(after.all)")
        #expect(after.standardError.contains("M_UNKNOWN_TOKEN") && after.standardError.contains("[unauthorized]"), "\(after.standardError)")
        #expect(!after.all.contains(revoked))
    }

    /// A batch killed twice with SIGKILL and run again: each file and each thumbnail stored once (the ids
    /// reserved first and kept in the journal), and every receipt's key opens what the homeserver holds.
    @Test("a batch killed twice: every file stored once, every receipt's key opens its file")
    func killedBatchStoresEachFileOnce() async throws {
        // Room for the empty reservations two kills can leave (up to 4 each) beside the 4 in flight: with
        // Synapse's default of 5 they could take every reservation for a day, and the last run would then
        // fail its files with exit 75 rather than store them (`reservationsTakenFailTheFileAndPostNothing`).
        let server = try await Self.start(["--max-pending-media-uploads", "16"])
        defer { server.stop() }
        let files = server.folder.path + "/files"
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        let count = 500
        var sources: [String: [UInt8]] = [:]
        for index in 0..<count {
            let path: String
            let bytes: [UInt8]
            if index % 25 == 0 {
                path = files + String(format: "/%03d-sticker.webp", index)
                bytes = Array(try Data(contentsOf: Self.samples.appendingPathComponent("sticker.webp")))
            } else {
                path = files + String(format: "/%03d-file.bin", index)
                bytes = randomBytes(Int.random(in: 2_000...20_000))
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            sources[path] = bytes
        }
        let journal = server.folder.path + "/journal.sqlite"
        func startBatch() throws -> ChildProcess {
            try ChildProcess(
                executable: try attacheBinary(),
                arguments: ["batch", files, "--matrix", server.url, "--bearer-env", "MATRIX_TOKEN", "--journal", journal,
                            "--concurrency", "4"],
                environment: ["MATRIX_TOKEN": server.senderToken])
        }
        var kills = 0
        for _ in 0..<2 {
            let before = try await JournalKiller.doneCount(journal: journal)
            let process = try startBatch()
            let killer = try JournalKiller.start(
                pid: process.processIdentifier, journal: journal, atLeast: before + Int.random(in: 40...160), delay: Double.random(in: 0...0.3))
            _ = try await process.wait(upTo: 300)
            _ = try await killer.wait(upTo: 60)
            if process.endedBySignal { kills += 1 }
        }
        #expect(kills >= 1, "no run was killed mid-way; the test proved nothing")
        let final = try startBatch()
        let status = try await final.wait(upTo: 300)
        #expect(status == 0, "the final run failed: \(final.standardError.suffix(2000))")

        let entries = try UploadJournal(path: journal).entries()
        #expect(entries.count == count)
        #expect(entries.allSatisfy { $0.state == .done })
        var expected: [String] = []
        for entry in entries {
            let receipt = try #require(entry.receipt, "no receipt for \(entry.path)")
            expected.append(try #require(receipt.fileId))
            expected += (receipt.thumbnails ?? []).compactMap(\.fileId)
        }
        #expect(Set(expected).count == expected.count, "two receipts name the same media")
        // Media with content: a run killed between a reservation and its journal entry leaves an empty
        // reservation (no bytes, expired by the homeserver after a day), never a second stored copy.
        let media = try await Self.client(["media-list", "--homeserver", server.url, "--admin-token", server.senderToken])
        let all = media["media"] as? [[String: Any]] ?? []
        let listed = all.filter { ($0["media_length"] as? Int ?? 0) > 0 }.compactMap { $0["media_id"] as? String }
        #expect(all.count - listed.count <= 8, "\(all.count - listed.count) empty reservations after two kills")
        #expect(listed.count == expected.count, "the homeserver holds \(listed.count) media for \(expected.count) receipts")
        #expect(Set(listed.map { "mxc://localhost/" + $0 }) == Set(expected))

        // Every receipt's key opens the file the homeserver holds (downloaded with the token, as a client does).
        for entry in entries.prefix(40) {
            let receipt = try #require(entry.receipt)
            let info = try #require(receipt.seal.encryptedFile)
            let infoFile = try server.folder.write("info-\(UUID().uuidString).json", String(decoding: try JSONEncoder().encode(info), as: UTF8.self))
            let stored = server.folder.path + "/stored-\(UUID().uuidString)"
            let out = server.folder.path + "/opened-\(UUID().uuidString)"
            let fetched = try await Self.attache(
                ["download", try #require(receipt.fileId), "--matrix", server.url, "--bearer-env", "MATRIX_TOKEN", "-o", stored,
                 "--no-progress"], token: server.senderToken)
            try #require(fetched.status == 0, "\(entry.path): \(fetched.all)")
            let result = try await Self.attache(
                ["decrypt", stored, "-o", out, "--scheme", "matrix", "--file-info", infoFile], token: "")
            try #require(result.status == 0, "\(entry.path): \(result.all)")
            let opened = Array(try Data(contentsOf: URL(fileURLWithPath: out)))
            if entry.path.hasSuffix(".bin") { #expect(opened == sources[entry.path], "\(entry.path)") }
            #expect(Int64(opened.count) == receipt.seal.plaintextByteCount)
        }
    }

    /// Every reservation the homeserver allows is taken by ids without content (as kills between a
    /// reservation and its journal entry leave them), for longer than a send waits: each file fails
    /// (`retries-exhausted`; exit 75 for `upload`, 3 for the batch) and says why and what to do; none is posted instead, and the journal keeps them. Posting, as
    /// the message offers, then stores them.
    @Test("reservations all taken by ids left empty: each file fails (retries-exhausted), none is posted; --matrix-no-reserve then posts them")
    func reservationsTakenFailTheFileAndPostNothing() async throws {
        let server = try await Self.start(["--unused-expiration", "10m"])
        defer { server.stop() }
        let left = try await Self.client(["reserve", "--homeserver", server.url, "--token", server.senderToken, "--count", "5"])
        #expect((left["uris"] as? [String])?.count == 5)
        let files = server.folder.path + "/files"
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        for index in 0..<3 {
            try Data(randomBytes(3_000)).write(to: URL(fileURLWithPath: files + "/\(index).bin"))
        }
        let journal = server.folder.path + "/journal.sqlite"
        let arguments = ["batch", files, "--matrix", server.url, "--bearer-env", "MATRIX_TOKEN", "--journal", journal, "--no-progress"]
        let refused = try await Self.attache(arguments, token: server.senderToken)
        #expect(refused.status == 3, "\(refused.all.suffix(2000))")
        #expect(refused.all.contains("[retries-exhausted]"), "\(refused.all.suffix(2000))")
        #expect(refused.all.contains("no more media reservations"), "\(refused.all.suffix(2000))")
        #expect(refused.all.contains("--matrix-no-reserve"))
        #expect(!refused.all.contains(server.senderToken))
        let entries = try UploadJournal(path: journal).entries()
        #expect(entries.count == 3 && entries.allSatisfy { $0.state != .done && $0.receipt == nil }, "\(entries.map(\.state))")
        // One file, as `attache upload`: exit 75, try again later.
        let one = try await Self.attache(
            ["upload", files + "/0.bin", "--matrix", server.url, "--bearer-env", "MATRIX_TOKEN", "--no-progress"], token: server.senderToken)
        #expect(one.status == 75, "\(one.all.suffix(2000))")
        #expect(one.standardError.contains("no more media reservations"), "\(one.all.suffix(2000))")
        var media = try await Self.client(["media-list", "--homeserver", server.url, "--admin-token", server.senderToken])
        var all = media["media"] as? [[String: Any]] ?? []
        #expect(all.count == 5 && all.allSatisfy { ($0["media_length"] as? Int ?? 0) == 0 }, "something was stored: \(all)")

        let posted = try await Self.attache(arguments + ["--matrix-no-reserve", "--retry-failed"], token: server.senderToken)
        #expect(posted.status == 0, "\(posted.all.suffix(2000))")
        #expect(try UploadJournal(path: journal).entries().allSatisfy { $0.state == .done })
        media = try await Self.client(["media-list", "--homeserver", server.url, "--admin-token", server.senderToken])
        all = media["media"] as? [[String: Any]] ?? []
        #expect(all.filter { ($0["media_length"] as? Int ?? 0) > 0 }.count == 3, "\(all)")
    }

    /// A reservation an earlier run kept in its journal, which the homeserver let expire unused: the send
    /// puts to it, is told `M_NOT_FOUND`, reserves one new id, keeps it in the journal before any byte goes,
    /// and stores the file there. The expired id stays empty; the stored bytes open with the receipt's key.
    @Test("a journalled reservation that expired unused is replaced by one new reservation")
    func anExpiredReservationIsReplacedOnce() async throws {
        let server = try await Self.start(["--unused-expiration", "2s"])
        defer { server.stop() }
        let left = try await Self.client(["reserve", "--homeserver", server.url, "--token", server.senderToken, "--count", "1"])
        let expired = try #require((left["uris"] as? [String])?.first)
        try await Task.sleep(for: .seconds(3))

        var configuration = PipelineConfiguration(url: server.url)
        configuration.matrix = MatrixEndpoint(homeserver: server.url)
        configuration.seal.scheme = .matrix
        configuration.answers = .init(profile: .matrix)
        configuration.connection.authorization = .bearer(server.senderToken)
        let pipeline = try AttachmentPipeline(configuration: configuration)
        let journal = KeptReservations(ResumableState(protocolName: .matrix, uploadURL: expired, offset: 0))
        var options = SendOptions()
        options.journal = journal
        let original = randomBytes(20_000)
        let receipt = try await pipeline.send(Attachment(bytes: original, filename: "late.bin"), options: options)
        let uri = try #require(receipt.fileId)
        #expect(uri != expired && uri.hasPrefix("mxc://"))
        #expect(await journal.kept.compactMap { $0?.uploadURL }.contains(uri), "the new id was not journalled")

        let media = try await Self.client(["media-list", "--homeserver", server.url, "--admin-token", server.senderToken])
        let all = media["media"] as? [[String: Any]] ?? []
        let stored = all.filter { ($0["media_length"] as? Int ?? 0) > 0 }
        #expect(stored.count == 1 && uri.hasSuffix("/" + (stored.first?["media_id"] as? String ?? "?")), "\(all)")
        #expect(!all.contains { expired.hasSuffix("/" + ($0["media_id"] as? String ?? "?")) && ($0["media_length"] as? Int ?? 0) > 0 })

        // What the receiver does: the event arrives, and its file downloads and opens with the event's keys.
        let event = try #require(receipt.matrix)
        let contentFile = try server.folder.write(
            "late.content.json", String(decoding: try JSONEncoder().encode(event.content), as: UTF8.self))
        _ = try await Self.client([
            "send", "--homeserver", server.url, "--token", server.senderToken, "--room", server.room,
            "--event-type", event.eventType, "--content-file", contentFile,
        ])
        let received = try await Self.client([
            "receive", "--homeserver", server.url, "--token", server.receiverToken, "--room", server.room,
            "--out", server.folder.path + "/received",
        ])
        let file = try #require((received["events"] as? [[String: Any]])?.first?["file"] as? [String: Any], "\(received)")
        #expect(file["encrypted"] as? Bool == true && file["mxc"] as? String == uri, "\(file)")
        let path = try #require(file["path"] as? String, "\(file)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(original))
    }

    /// The homeserver's reservation rate set low, and room for only 2 ids without content while the batch
    /// has 4 files in flight: a batch of 300 files meets `M_LIMIT_EXCEEDED` for both, waits as told (the
    /// rate) or for one of its own uploads to land (the pending limit), and stores every file, none twice.
    @Test("300 files against a low media rate limit and room for 2 pending ids: every file stored once")
    func rateLimitedBatchStoresEveryFileOnce() async throws {
        let server = try await Self.start([
            "--media-rate-per-second", "20", "--media-burst", "5", "--max-pending-media-uploads", "2", "--log-level", "INFO",
        ])
        defer { server.stop() }
        let files = server.folder.path + "/files"
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        let count = 300
        for index in 0..<count {
            try Data(randomBytes(Int.random(in: 500...4_000))).write(to: URL(fileURLWithPath: files + String(format: "/%03d.bin", index)))
        }
        let journal = server.folder.path + "/journal.sqlite"
        let result = try await Self.attache(
            ["batch", files, "--matrix", server.url, "--bearer-env", "MATRIX_TOKEN", "--journal", journal, "--concurrency", "4",
             "--no-progress"], token: server.senderToken)
        #expect(result.status == 0, "\(result.all.suffix(2000))")
        // The homeserver said M_LIMIT_EXCEEDED at least once (its log has each 429), and every file went.
        #expect(server.service.outputTail(lines: 100_000).contains("429"), "the rate limit was never met; the test proved nothing")
        let entries = try UploadJournal(path: journal).entries()
        #expect(entries.count == count && entries.allSatisfy { $0.state == .done })
        let media = try await Self.client(["media-list", "--homeserver", server.url, "--admin-token", server.senderToken])
        let stored = (media["media"] as? [[String: Any]] ?? []).filter { ($0["media_length"] as? Int ?? 0) > 0 }
        #expect(stored.count == count, "\(stored.count) media for \(count) files")
        let ids = Set(entries.compactMap { $0.receipt?.fileId })
        #expect(ids.count == count)
        #expect(Set(stored.compactMap { $0["media_id"] as? String }.map { "mxc://localhost/" + $0 }) == ids)
    }
}

/// A send journal that holds one earlier run's Matrix reservation and keeps what the send records.
private actor KeptReservations: SendJournal {
    private let earlier: ResumableState?
    private(set) var kept: [ResumableState?] = []

    init(_ earlier: ResumableState?) { self.earlier = earlier }

    nonisolated var continuesEarlierSend: Bool { true }
    func resumableState() async -> ResumableState? { kept.last ?? earlier }
    func record(_ state: ResumableState?) async { kept.append(state) }
    func multipartRecord() async -> MultipartRecord? { nil }
    func record(_ record: MultipartRecord?) async {}
}
