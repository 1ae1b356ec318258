import Attache
import AttacheBatch
import AttacheServer
import Foundation
import Synchronization
import AttacheTestSupport
import Testing

/// Resumable uploads (tus 1.0, IETF draft-11) against the reference server with faults inside the
/// appends, and tus against a third-party server. Bytes sent are counted from the server's log.
@Suite("Resumable uploads", .serialized)
struct ResumableUploadTests {
    /// A reference server with resumable settings, its log file, and a fresh store.
    struct Server: Sendable {
        let port: Int
        let store: String
        let log: String
        var uploadURL: String { "http://127.0.0.1:\(port)/upload" }

        /// The log's JSON lines.
        func events() throws -> [[String: Any]] {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return try text.split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
        }

        func appends() throws -> [[String: Any]] { try events().filter { $0["event"] as? String == "append" } }

        /// The body bytes the server received over all appends.
        func bytesReceived() throws -> Int64 {
            try appends().reduce(0) { $0 + Int64(($1["received"] as? Int) ?? 0) }
        }

        static func with<T: Sendable>(
            _ configure: @Sendable (inout ReferenceServerConfiguration) throws -> Void = { _ in },
            _ body: @Sendable (Server) async throws -> T
        ) async throws -> T {
            let store = FileManager.default.temporaryDirectory.appendingPathComponent("attache-rs-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: store) }
            var configuration = ReferenceServerConfiguration(storeDirectory: store + "/store")
            configuration.port = 0
            configuration.logLevel = .critical
            configuration.resumableLogPath = store + "/resumable.log"
            try configure(&configuration)
            let log = configuration.resumableLogPath ?? ""
            return try await withReferenceServerProcess(configuration: configuration) { port in
                try await body(Server(port: port, store: store, log: log))
            }
        }
    }

    /// Moves the expiry time in the record of resumable upload `id` (`resumable/ID/info.json` in the
    /// server's store) into the past.
    static func expire(upload id: String, store: String) throws {
        let path = store + "/resumable/" + id + "/info.json"
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        var info = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        try #require(info["expires"] != nil, "no expiry in \(path)")
        info["expires"] = 0
        try JSONSerialization.data(withJSONObject: info).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// A file of `count` bytes: a random 1 MiB block repeated with each copy's first bytes changed, so that
    /// no two MiB are equal and large files are quick to make.
    static func makeFile(_ count: Int, in directory: String) throws -> String {
        let path = directory + "/source-\(count).bin"
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        defer { try? handle.close() }
        var block = randomBytes(1 << 20)
        var written = 0
        var index: UInt64 = 0
        while written < count {
            withUnsafeBytes(of: index.bigEndian) { for i in 0..<8 { block[i] = $0[i] } }
            let n = min(block.count, count - written)
            try handle.write(contentsOf: block[..<n])
            written += n
            index += 1
        }
        return path
    }

    static func sha256(ofFile path: String) async throws -> String {
        try await sha256Hex(ofFile: path)
    }

    /// A pipeline configuration for `server` with quick retries and the given resumable settings.
    static func pipeline(
        _ url: String, mode: ResumableMode, initialAppend: Int64 = 16 << 20, seal: SealConfiguration = .none,
        attempts: Int = 6, stallTimeout: Duration = .seconds(30)
    ) throws -> AttachmentPipeline {
        var configuration = PipelineConfiguration(url: url)
        configuration.connection.retry = RetryPolicy(
            maximumAttempts: attempts, initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200),
            budget: .seconds(300))
        configuration.connection.stallTimeout = stallTimeout
        configuration.seal = seal
        configuration.resumable = ResumableConfiguration(
            mode: mode, threshold: 1 << 20, initialAppendSize: initialAppend, maximumAppendSize: initialAppend)
        return try AttachmentPipeline(configuration: configuration)
    }

    @Test func tusUploadCutThreeTimesMidPatchCompletesWithLittleResent() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attache-rs-src-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let size = 300_000_000
        let source = try Self.makeFile(size, in: directory)
        let sourceDigest = try await Self.sha256(ofFile: source)
        let chunk: Int64 = 64 << 20
        try await Server.with({ $0.appendFaults = try AppendFaultPlan(parsing: "drop@1-3:after=30000000") }) { server in
            var seal = SealConfiguration()
            seal.scheme = .streamGCM
            let pipeline = try Self.pipeline(server.uploadURL, mode: .tus, initialAppend: chunk, seal: seal)
            let receipt = try await pipeline.send(Attachment(path: source))
            let resumable = try #require(receipt.resumable)
            #expect(resumable.protocolName == .tus)

            let appends = try server.appends()
            #expect(appends.filter { $0["status"] as? String == "dropped" }.count == 3)
            // Every append starts where the server's data ended: nothing is sent twice from zero.
            var expected: Int64 = 0
            for append in appends where (append["status"] as? Int) != 409 {
                #expect(Int64(append["offset"] as? Int ?? -1) == expected)
                expected += Int64(append["received"] as? Int ?? 0)
            }
            // What the server read over every append, the dropped ones too, is the payload once: a dropped
            // append's bytes were kept, and the next went on from them.
            #expect(try server.bytesReceived() == receipt.sentByteCount)

            // The stored bytes open with the receipt's key and give the source back.
            let fileId = try #require(receipt.fileId)
            let key = try #require(receipt.seal.key)
            let output = directory + "/opened.bin"
            try Unsealer(scheme: .streamGCM, key: key).unseal(fileAt: server.store + "/store/files/" + fileId, to: output)
            let fileDigest = try await Self.sha256(ofFile: output)
            #expect(fileDigest == sourceDigest)
        }
    }

    @Test func checksumMismatchResendsOnlyThatChunk() async throws {
        let file = try TemporaryFile(bytes: randomBytes(40 << 20))
        defer { file.remove() }
        let chunk: Int64 = 8 << 20
        try await Server.with({ $0.appendFaults = try AppendFaultPlan(parsing: "460@2") }) { server in
            let receipt = try await Self.pipeline(server.uploadURL, mode: .tus, initialAppend: chunk).send(
                Attachment(path: file.path))
            let fileDigest = try await Self.sha256(ofFile: file.path)
            #expect(receipt.server["sha256"]?.stringValue == fileDigest)
            let appends = try server.appends()
            let failed = try #require(appends.first { $0["status"] as? Int == 460 })
            let failedIndex = try #require(appends.firstIndex { $0["status"] as? Int == 460 })
            // The next append sends the same chunk again from the same offset.
            #expect(appends[failedIndex + 1]["offset"] as? Int == failed["offset"] as? Int)
            #expect(appends.allSatisfy { $0["checksum"] as? String == "sha256" })
            #expect(try server.bytesReceived() <= Int64(40 << 20) + chunk)
        }
    }

    @Test func aPatchThatStallsIsAbandonedAndTheUploadContinues() async throws {
        let file = try TemporaryFile(bytes: randomBytes(8 << 20))
        defer { file.remove() }
        // The stall outlasts the client's stall timeout, which is long enough (30 s) that no other
        // append of a loaded machine trips it. The server holds the upload's lock until its stall ends
        // (423 to the client's retries meanwhile), so the stall is only 2 s longer and the retries, many
        // and quick, outlast that.
        try await Server.with({ $0.appendFaults = try AppendFaultPlan(parsing: "stall@1:after=1000000:seconds=32") }) { server in
            let receipt = try await Self.pipeline(
                server.uploadURL, mode: .tus, initialAppend: 4 << 20, attempts: 60, stallTimeout: .seconds(30)
            ).send(Attachment(path: file.path))
            let fileDigest = try await Self.sha256(ofFile: file.path)
            #expect(receipt.server["sha256"]?.stringValue == fileDigest)
            let appends = try server.appends()
            #expect(appends.first?["status"] as? String == "stalled")
            // The bytes before the stall were kept; the next accepted append starts after them.
            let next = appends.dropFirst().first { ($0["status"] as? Int) != 423 && ($0["status"] as? Int) != 409 }
            #expect(next?["offset"] as? Int == 1_000_000)
            #expect(try server.bytesReceived() == Int64(8 << 20))
        }
    }

    @Test func anExpiredUploadStartsOverCleanly() async throws {
        let file = try TemporaryFile(bytes: randomBytes(6 << 20))
        defer { file.remove() }
        try await Server.with { server in
            let body = try FileSource(path: file.path)
            let uploader = ResumableUploader(
                configuration: ResumableConfiguration(mode: .tus, initialAppendSize: 1 << 20, maximumAppendSize: 1 << 20))
            // An upload stopped after its first confirmed append (its process went away).
            let states = Mutex<[ResumableState]>([])
            let first = Task {
                try await uploader.upload(
                    ResumableUploadRequest(url: server.uploadURL, body: body, filename: "a.bin"),
                    onState: { state in if let state, state.offset > 0 { states.withLock { $0.append(state) } } })
            }
            let deadline = ContinuousClock.now + .seconds(30)
            while states.withLock({ $0.isEmpty }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
            first.cancel()
            _ = try? await first.value
            let earlier = try #require(states.withLock { $0.first })
            #expect(earlier.offset > 0 && earlier.offset < Int64(6 << 20))
            // Past the upload's lifetime: its expiry time, in the server's record of it, is moved into
            // the past, as the passing of the lifetime would; the server's next look at it finds it
            // expired and forgets it. No wait on the clock.
            let id = try #require(earlier.uploadURL.split(separator: "/").last.map(String.init))
            try Self.expire(upload: id, store: server.store + "/store")

            let result = try #require(
                try await uploader.upload(
                    ResumableUploadRequest(url: server.uploadURL, body: body, filename: "a.bin", resumeFrom: earlier)))
            guard case .stored(let receipt) = result.upload.outcome else {
                Issue.record("not stored: \(result.upload.outcome)")
                return
            }
            let fileDigest = try await Self.sha256(ofFile: file.path)
            #expect(receipt.data["sha256"]?.stringValue == fileDigest)
            #expect(result.uploadURL != earlier.uploadURL)
            #expect(result.resumedFrom == 0)
            let events = try server.events()
            #expect(events.contains { $0["event"] as? String == "expired" })
            // The new upload starts at zero and is complete with exactly the file's bytes.
            let fresh = try #require(result.uploadURL.split(separator: "/").last.map(String.init))
            let appends = events.filter { $0["event"] as? String == "append" && $0["id"] as? String == fresh }
            #expect(appends.first?["offset"] as? Int == 0)
            #expect(appends.reduce(0) { $0 + ($1["received"] as? Int ?? 0) } == 6 << 20)
        }
    }

    @Test func ietfUploadContinuesAtTheLocationOfThe104AfterACut() async throws {
        let file = try TemporaryFile(bytes: randomBytes(30 << 20))
        defer { file.remove() }
        try await Server.with({ $0.appendFaults = try AppendFaultPlan(parsing: "drop@1:after=12000000") }) { server in
            let receipt = try await Self.pipeline(server.uploadURL, mode: .ietf, initialAppend: 64 << 20).send(
                Attachment(path: file.path))
            #expect(receipt.resumable?.protocolName == .ietf)
            let fileDigest = try await Self.sha256(ofFile: file.path)
            #expect(receipt.server["sha256"]?.stringValue == fileDigest)
            let appends = try server.appends()
            #expect(appends.first?["status"] as? String == "dropped")
            #expect(appends.first?["received"] as? Int == 12_000_000)
            #expect(appends.dropFirst().first?["offset"] as? Int == 12_000_000)
            #expect(try server.bytesReceived() == Int64(30 << 20))
        }
    }

    @Test func ietfAppendOverTheLimitGets413ThenSmallerAppends() async throws {
        let file = try TemporaryFile(bytes: randomBytes(10 << 20))
        defer { file.remove() }
        let limit: Int64 = 3 << 20
        try await Server.with({ $0.maxAppendSize = limit }) { server in
            let receipt = try await Self.pipeline(server.uploadURL, mode: .ietf, initialAppend: 64 << 20).send(
                Attachment(path: file.path))
            let fileDigest = try await Self.sha256(ofFile: file.path)
            #expect(receipt.server["sha256"]?.stringValue == fileDigest)
            let appends = try server.appends()
            #expect(appends.first?["status"] as? Int == 413)
            let accepted = appends.dropFirst()
            #expect(accepted.count >= 4)
            #expect(accepted.allSatisfy { Int64($0["received"] as? Int ?? .max) <= limit })
        }
    }

    @Test(arguments: [ResumableMode.tus, .ietf])
    func aSealedResumableUploadIsVerifiedByAServerWithTheKey(mode: ResumableMode) async throws {
        let file = try TemporaryFile(bytes: randomBytes(5 << 20))
        defer { file.remove() }
        let key = AttachmentKey.random(for: .streamGCM)
        let keyFile = file.directory + "/server.key"
        try key.write(toNewFile: keyFile)
        try await Server.with({ $0.keyFile = keyFile }) { server in
            var seal = SealConfiguration()
            seal.key = key
            let receipt = try await Self.pipeline(server.uploadURL, mode: mode, initialAppend: 1 << 20, seal: seal).send(
                Attachment(path: file.path))
            #expect(receipt.resumable?.protocolName == (mode == .tus ? .tus : .ietf))
            guard case .object(let sealed)? = receipt.server["sealed"] else {
                Issue.record("no sealed check in \(receipt.server)")
                return
            }
            #expect(sealed["verified"] == .bool(true))
            let fileDigest = try await Self.sha256(ofFile: file.path)
            #expect(sealed["plaintextSha256"]?.stringValue == fileDigest)
        }
    }

    @Test(arguments: [ResumableMode.auto, .ietf])
    func aServerWithoutEitherProtocolGetsAPlainMultipartUpload(mode: ResumableMode) async throws {
        let file = try TemporaryFile(bytes: randomBytes(3 << 20))
        defer { file.remove() }
        try await Server.with({ $0.resumable = false }) { server in
            let receipt = try await Self.pipeline(server.uploadURL, mode: mode).send(Attachment(path: file.path))
            #expect(receipt.resumable == nil)
            let fileDigest = try await Self.sha256(ofFile: file.path)
            #expect(receipt.server["sha256"]?.stringValue == fileDigest)
            #expect(receipt.server["filename"]?.stringValue == "file.bin")
        }
    }

    @Test func autoPicksTusAndTheReceiptHasTheMultipartShape() async throws {
        let file = try TemporaryFile(name: "clip.bin", bytes: randomBytes(2 << 20))
        defer { file.remove() }
        try await Server.with { server in
            var configuration = PipelineConfiguration(url: server.uploadURL)
            configuration.resumable = ResumableConfiguration(mode: .auto, threshold: 1 << 20)
            configuration.fields = [UploadField(name: "album", value: "holidays")]
            let receipt = try await AttachmentPipeline(configuration: configuration).send(Attachment(path: file.path))
            #expect(receipt.resumable?.protocolName == .tus)
            guard case .object(let data) = receipt.server else {
                Issue.record("no receipt object")
                return
            }
            #expect(data["filename"]?.stringValue == "clip.bin")
            #expect(data["contentType"]?.stringValue == "application/octet-stream")
            guard case .object(let fields)? = data["fields"] else {
                Issue.record("no fields")
                return
            }
            #expect(fields["album"]?.stringValue == "holidays")
            #expect(fields["scheme"]?.stringValue == "stream-gcm")
            #expect(fields["plaintextSize"]?.stringValue == String(2 << 20))
            #expect(data["parts"] != nil)
        }
    }

    @Test func batchKilledMidGigabyteContinuesFromTheServersOffset() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attache-rs-batch-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/files", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = try Self.makeFile(1_000_000_000, in: directory + "/files")
        let sourceDigest = try await Self.sha256(ofFile: source)
        let journal = directory + "/journal.sqlite"
        try await Server.with { server in
            let arguments = [
                "batch", directory + "/files", "--url", server.uploadURL, "--journal", journal, "--resumable", "tus",
            ]
            let first = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
            // Killed once the journal holds an offset the server confirmed, long before the gigabyte is through.
            let deadline = ContinuousClock.now + .seconds(120)
            while ContinuousClock.now < deadline,
                ((try? UploadJournal(path: journal, readOnly: true).entries().first?.resumable?.offset) ?? 0) == 0
            {
                try await Task.sleep(for: .milliseconds(20))
            }
            kill(first.processIdentifier, SIGKILL)
            _ = try await first.wait(upTo: 30)
            let recorded = try #require(try UploadJournal(path: journal).entries().first?.resumable)
            #expect(recorded.protocolName == .tus && recorded.offset > 0)

            let second = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
            let status = try await second.wait(upTo: 600)
            #expect(status == 0, "\(second.standardError)")

            // One upload resource, continued by the rerun from the server's offset (at least what the
            // journal recorded as confirmed): no byte reached the server twice.
            let events = try server.events()
            #expect(events.filter { $0["event"] as? String == "create" }.count == 1)
            let entry = try #require(try UploadJournal(path: journal).entries().first)
            let receipt = try #require(entry.receipt)
            #expect(entry.state == .done)
            #expect(try server.bytesReceived() == receipt.sentByteCount)
            let resumedAt = try #require(receipt.resumable?.resumedBytes)
            #expect(resumedAt >= recorded.offset && resumedAt > 0)
            #expect(try server.appends().contains { Int64($0["offset"] as? Int ?? -1) == resumedAt })

            let key = try #require(receipt.seal.key)
            let output = directory + "/opened.bin"
            try Unsealer(scheme: .streamGCM, key: key).unseal(
                fileAt: server.store + "/store/files/" + (try #require(receipt.fileId)), to: output)
            let fileDigest = try await Self.sha256(ofFile: output)
            #expect(fileDigest == sourceDigest)
        }
    }

    @Test func uploadWithAnIdempotencyKeyKilledAndRunAgainContinues() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attache-rs-up-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = try Self.makeFile(400_000_000, in: directory)
        let materials = directory + "/material"
        try await Server.with { server in
            let arguments = [
                "upload", source, "--url", server.uploadURL, "--idempotency-key", "video-7", "--seal-material-dir",
                materials, "--resumable", "tus", "--json",
            ]
            let first = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
            let deadline = ContinuousClock.now + .seconds(120)
            while ContinuousClock.now < deadline,
                !((try? server.appends()) ?? []).contains(where: { $0["status"] as? Int == 204 })
            {
                try await Task.sleep(for: .milliseconds(5))
            }
            kill(first.processIdentifier, SIGKILL)
            _ = try await first.wait(upTo: 30)
            // The resource sits next to the seal material, private like it.
            let recorded = try #require(
                try FileManager.default.contentsOfDirectory(atPath: materials).first { $0.hasSuffix(".resumable") })
            let mode = try FileManager.default.attributesOfItem(atPath: materials + "/" + recorded)[.posixPermissions] as? Int
            #expect(mode == 0o600)

            let second = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
            let status = try await second.wait(upTo: 300)
            #expect(status == 0, "\(second.standardError)")
            let line = try #require(second.standardOutput.split(separator: "\n").first)
            let receipt = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let resumable = try #require(receipt["resumable"] as? [String: Any])
            #expect((resumable["resumedBytes"] as? Int ?? 0) > 0)
            #expect(try server.events().filter { $0["event"] as? String == "create" }.count == 1)
            #expect(try server.bytesReceived() == Int64(receipt["sentByteCount"] as? Int ?? -1))
            // Done: the record is gone with the material.
            #expect(!(try FileManager.default.contentsOfDirectory(atPath: materials)).contains(recorded))
        }
    }

    // MARK: A tus server that is not ours

    @Test func checksumsWithAThirdPartyTusServerThatChecksThem() async throws {
        // tusfilter lists `checksum` with sha1: every PATCH carries `Upload-Checksum: sha1 …`, the server
        // checks it, and the one chunk damaged on its way in (the third PATCH) is answered 460 and sent again.
        let python = try python(with: ["tusfilter"])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attache-tusf-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/requests.log"
        let service = try await ServiceProcess(
            [python, ServiceProcess.tools + "/tusfilter_server.py", directory + "/files", log, "3"])
        defer { service.stop() }
        let bytes = randomBytes(5 << 20)
        let file = try TemporaryFile(bytes: bytes)
        defer { file.remove() }
        var connection = ConnectionConfiguration()
        connection.retry = RetryPolicy(
            maximumAttempts: 4, initialDelay: .milliseconds(20), maximumDelay: .milliseconds(100), budget: .seconds(60))
        let uploader = ResumableUploader(
            connection: connection,
            configuration: ResumableConfiguration(mode: .tus, initialAppendSize: 1 << 20, maximumAppendSize: 1 << 20))
        let result = try #require(
            try await uploader.upload(
                ResumableUploadRequest(
                    url: "http://127.0.0.1:\(service.port)/files", body: try FileSource(path: file.path),
                    filename: "checked.bin")))
        guard case .stored = result.upload.outcome else {
            Issue.record("not stored: \(result.upload.outcome)")
            return
        }
        let id = try #require(result.uploadURL.split(separator: "/").last.map(String.init))
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/files/" + id))) == bytes)
        let requests = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        let patches = requests.filter { $0["method"] as? String == "PATCH" }
        #expect(patches.allSatisfy { $0["checksum"] as? String == "sha1" }, "\(patches)")
        let refused = patches.filter { $0["status"] as? Int == 460 }
        #expect(refused.count == 1, "\(patches)")
        // Only the refused chunk went again: the PATCH after the 460 starts at its offset, and the bytes
        // of all PATCHes are the file plus that one chunk.
        if let index = patches.firstIndex(where: { $0["status"] as? Int == 460 }), index + 1 < patches.count {
            #expect(patches[index + 1]["offset"] as? String == patches[index]["offset"] as? String)
            #expect([200, 204].contains(patches[index + 1]["status"] as? Int ?? 0))
        }
        let sent = patches.compactMap { ($0["length"] as? String).flatMap { Int64($0) } }.reduce(0, +)
        let refusedBytes = refused.compactMap { ($0["length"] as? String).flatMap { Int64($0) } }.reduce(0, +)
        #expect(sent == Int64(bytes.count) + refusedBytes)
    }

    @Test func conformanceWithAThirdPartyTusServer() async throws {
        let python = try python(with: ["tuspyserver", "uvicorn"])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attache-tus-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/requests.log"
        let service = try await ServiceProcess(
            [python, ServiceProcess.tools + "/tus_server.py", directory + "/files", log])
        defer { service.stop() }
        let url = "http://127.0.0.1:\(service.port)/files/"
        let bytes = randomBytes(12 << 20)
        let file = try TemporaryFile(bytes: bytes)
        defer { file.remove() }
        let body = try FileSource(path: file.path)
        var connection = ConnectionConfiguration()
        connection.retry = RetryPolicy(
            maximumAttempts: 4, initialDelay: .milliseconds(20), maximumDelay: .milliseconds(100), budget: .seconds(60))
        let uploader = ResumableUploader(
            connection: connection,
            configuration: ResumableConfiguration(mode: .auto, initialAppendSize: 1 << 20, maximumAppendSize: 1 << 20))

        // Creation, then a cut: the task is cancelled once some appends are confirmed.
        let states = Mutex<[ResumableState]>([])
        let task = Task {
            try await uploader.upload(
                ResumableUploadRequest(url: url, body: body, filename: "third-party.bin"),
                onState: { state in if let state { states.withLock { $0.append(state) } } })
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while states.withLock({ $0.last?.offset ?? 0 }) < 3 << 20, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        task.cancel()
        _ = try? await task.value
        let earlier = try #require(states.withLock { $0.last })
        #expect(earlier.protocolName == .tus)

        // Resume: HEAD gives the server's offset, the rest follows.
        let result = try #require(
            try await uploader.upload(
                ResumableUploadRequest(url: url, body: body, filename: "third-party.bin", resumeFrom: earlier)))
        #expect(result.resumedFrom >= earlier.offset)
        #expect(result.uploadURL == earlier.uploadURL)
        guard case .stored = result.upload.outcome else {
            Issue.record("not stored: \(result.upload.outcome)")
            return
        }
        let id = try #require(earlier.uploadURL.split(separator: "/").last.map(String.init))
        let stored = try Data(contentsOf: URL(fileURLWithPath: directory + "/files/" + id))
        #expect(Array(stored) == bytes)
        let requests = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(requests.contains { $0["method"] as? String == "HEAD" })
        // The server lists no checksum extension: no Upload-Checksum is sent.
        #expect(requests.allSatisfy { $0["checksum"] as? Bool == false })

        // Termination: a second, unfinished upload is deleted.
        let second = Mutex<ResumableState?>(nil)
        let partial = Task {
            try await uploader.upload(
                ResumableUploadRequest(url: url, body: body, filename: "deleted.bin"),
                onState: { state in if let state, state.offset > 0 { second.withLock { $0 = state } } })
        }
        while second.withLock({ $0 }) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        partial.cancel()
        _ = try? await partial.value
        let doomed = try #require(second.withLock { $0 })
        #expect(try await uploader.terminate(doomed))
        let resumedAfterDelete = try #require(
            try await uploader.upload(
                ResumableUploadRequest(url: url, body: body, filename: "deleted.bin", resumeFrom: doomed)))
        #expect(resumedAfterDelete.uploadURL != doomed.uploadURL)
        #expect(requests.count > 0)
    }
}
