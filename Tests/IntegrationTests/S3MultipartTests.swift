import Foundation
import AttacheTestSupport
import Testing

/// Multipart uploads to `s3://` against moto's server and MiniStack: parts in flight, per-part retries
/// through a fault proxy, a completion answered 200 with `<Error>`, SIGKILL and resume with `ListParts`,
/// the upload id journalled beside the seal material, and `attache s3 abort-stale`. Files are tens of MiB
/// with 5 MiB parts, so that the suite stays short; the 1 GiB kill test is ``S3MultipartKillTests``.
@Suite("S3 multipart uploads", .serialized)
struct S3MultipartTests {
    static let partOptions = ["--multipart-threshold", "8M", "--part-size", "5M"]

    /// A proxy between `attache` and the emulator that counts body bytes (and injects faults when asked).
    struct Proxy {
        let server: ServiceProcess
        let stats: String
        var endpoint: String { "http://127.0.0.1:\(server.port)" }

        init(_ emulator: S3Emulator.Running, _ flags: [String] = []) async throws {
            stats = emulator.scratch.path + "/proxy-\(UUID().uuidString).json"
            server = try await ServiceProcess(
                [emulator.python, ServiceProcess.tools + "/s3_fault_proxy.py", String(emulator.server.port), stats] + flags)
        }

        /// Body bytes forwarded or cut so far, and the requests seen: (method, part number, outcome).
        func read() throws -> (bytes: Int, requests: [(String, Int?, String)]) {
            let data = try Data(contentsOf: URL(fileURLWithPath: stats))
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let requests = (object["requests"] as? [[Any]] ?? []).map { entry in
                (entry[0] as? String ?? "", entry[1] as? Int, (entry[2] as? String) ?? String(describing: entry[2]))
            }
            return (object["bodyBytes"] as? Int ?? 0, requests)
        }
    }

    func attache(_ arguments: [String], _ emulator: S3Emulator.Running) async throws -> CommandResult {
        try await runCommand(try attacheBinary(), arguments, environment: emulator.environment())
    }

    func openedEqual(_ sealed: [UInt8], key: String, original: [UInt8], in folder: ScratchFolder) async throws -> Bool {
        let stored = try folder.write("stored-\(UUID().uuidString)", sealed)
        let keyFile = try folder.write("key-\(UUID().uuidString)", key)
        let out = folder.path + "/opened-\(UUID().uuidString)"
        let result = try await runCommand(try attacheBinary(), ["decrypt", stored, "-o", out, "--key-file", keyFile])
        try #require(result.status == 0, "\(result.all)")
        return Array(try Data(contentsOf: URL(fileURLWithPath: out))) == original
    }

    func pendingUploads(_ emulator: S3Emulator.Running) async throws -> [String] {
        try JSONSerialization.jsonObject(with: Data(try await emulator.boto(["uploads", emulator.bucket]).utf8)) as? [String] ?? []
    }

    @Test("a large file goes in parts, 4 in flight; the object is the sealed bytes and no upload is left",
          arguments: S3Emulator.allCases)
    func parts(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-parts")
            defer { folder.remove() }
            let original = randomBytes(23 << 20)
            let file = try folder.write("video.bin", original)
            let result = try await attache(
                ["upload", file, "--url", "s3://\(emulator.bucket)/big/", "--s3-endpoint", emulator.endpoint, "--json", "--no-progress",
                 "--parts-in-flight", "4"] + Self.partOptions, emulator)
            #expect(result.status == 0, "\(result.all)\n\(emulator.log())")
            let receipt = try jsonObject(result.standardOutput)
            let object = try #require(receipt["object"] as? [String: Any])
            #expect(object["parts"] as? Int == 5)
            let key = try #require(object["key"] as? String)
            let stored = try await emulator.object(key)
            #expect(stored.count == receipt["sentByteCount"] as? Int)
            let sealKey = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)
            #expect(try await openedEqual(stored, key: sealKey, original: original, in: folder))
            let etag = try #require(object["etag"] as? String)
            #expect(etag.hasSuffix("-5"), "\(etag)")
            #expect(try await pendingUploads(emulator).isEmpty)
        }
    }

    /// A last part of 1,000 bytes, which starts inside the final stream-gcm segment and is small enough for
    /// the transport to hand to curl whole. curl then added `Content-Type: application/x-www-form-urlencoded`
    /// to a part that named no type, and moto's form parser took its bytes: the part was stored empty, the
    /// object was 1,000 bytes short, and with checksums off the upload said it succeeded.
    @Test("a last part of 1,000 bytes is stored whole, with checksums and without",
          arguments: S3Emulator.allCases, ["when-supported", "off"])
    func smallLastPart(_ kind: S3Emulator, checksum: String) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-tail")
            defer { folder.remove() }
            // 20,967,340 plaintext bytes seal to 4 × 5 MiB + 1,000.
            let original = randomBytes(20_967_340)
            let file = try folder.write("tail.bin", original)
            let result = try await attache(
                ["upload", file, "--url", "s3://\(emulator.bucket)/tail/", "--s3-endpoint", emulator.endpoint, "--json",
                 "--no-progress", "--checksum", checksum] + Self.partOptions, emulator)
            try #require(result.status == 0, "\(result.all)\n\(emulator.log())")
            let receipt = try jsonObject(result.standardOutput)
            #expect(receipt["sentByteCount"] as? Int == 4 * (5 << 20) + 1_000)
            let object = try #require(receipt["object"] as? [String: Any])
            #expect(object["parts"] as? Int == 5)
            let stored = try await emulator.object(try #require(object["key"] as? String))
            #expect(stored.count == 4 * (5 << 20) + 1_000)
            let sealKey = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)
            #expect(try await openedEqual(stored, key: sealKey, original: original, in: folder))
        }
    }

    @Test("a proxy that cuts parts mid-body and answers 500 and 503: each failed part is sent again alone",
          arguments: S3Emulator.allCases)
    func faults(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-faults")
            defer { folder.remove() }
            let proxy = try await Proxy(emulator, ["--faults"])
            defer { proxy.server.stop() }
            let original = randomBytes(90 << 20)
            let file = try folder.write("long.bin", original)
            let result = try await attache(
                ["upload", file, "--url", "s3://\(emulator.bucket)/faults/", "--s3-endpoint", proxy.endpoint, "--json", "--no-progress",
                 "--attempts", "4"] + Self.partOptions, emulator)
            #expect(result.status == 0, "\(result.all)\n\(emulator.log())")
            let receipt = try jsonObject(result.standardOutput)
            let object = try #require(receipt["object"] as? [String: Any])
            let parts = try #require(object["parts"] as? Int)
            #expect(parts == 19)  // 90 MiB sealed: 18 parts of 5 MiB, and the 23 KB tail as part 19
            let puts = try proxy.read().requests.filter { $0.0 == "PUT" && $0.1 != nil }
            let failed = puts.filter { $0.2 == "cut" || $0.2 == "500" || $0.2 == "503" }
            #expect(failed.count == 2 + 2 * 2)  // parts 3 and 13 cut once; 7 and 17 answered 500, then 503
            // Every part was stored once, and the only extra requests are the failed parts again.
            #expect(puts.count == parts + failed.count)
            for part in Set(failed.compactMap(\.1)) {
                #expect(puts.last { $0.1 == part }?.2 == "200")
            }
            let stored = try await emulator.object(try #require(object["key"] as? String))
            let sealKey = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)
            #expect(try await openedEqual(stored, key: sealKey, original: original, in: folder))
            #expect(try await pendingUploads(emulator).isEmpty)
        }
    }

    @Test("a CompleteMultipartUpload answered 200 with <Error> is a failure, not a receipt", arguments: S3Emulator.allCases)
    func errorInOK(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-error200")
            defer { folder.remove() }
            let proxy = try await Proxy(emulator, ["--complete-error"])
            defer { proxy.server.stop() }
            let file = try folder.write("doomed.bin", randomBytes(12 << 20))
            let result = try await attache(
                ["upload", file, "--url", "s3://\(emulator.bucket)/e/", "--s3-endpoint", proxy.endpoint, "--json", "--no-progress"]
                    + Self.partOptions, emulator)
            #expect(result.status == 77, "\(result.all)")
            #expect(result.standardError.contains("InvalidPart"), "\(result.all)")
            #expect(try jsonObject(result.standardOutput)["status"] as? String == "error")
            // Given up: the upload was aborted (the default), and no object exists.
            #expect(try await pendingUploads(emulator).isEmpty)
            let listed = try await emulator.boto(["list", emulator.bucket, "e/"])
            #expect(listed == "[]")
        }
    }

    @Test("a completion whose answer was lost, then answered 500, 404 or 412 when sent again, is found done with HEAD",
          arguments: S3Emulator.allCases)
    func completionAnswerLost(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-lost")
            defer { folder.remove() }
            for status in [500, 404, 412] {
                let proxy = try await Proxy(emulator, ["--complete-lost", String(status)])
                defer { proxy.server.stop() }
                let original = randomBytes(12 << 20)
                let file = try folder.write("lost-\(status).bin", original)
                let result = try await attache(
                    ["upload", file, "--url", "s3://\(emulator.bucket)/lost-\(status)/", "--s3-endpoint", proxy.endpoint, "--json",
                     "--no-progress", "--attempts", "3"] + Self.partOptions, emulator)
                #expect(result.status == 0, "answered \(status): \(result.all)\n\(emulator.log())")
                guard result.status == 0 else { continue }
                // The store completed the first; the ones sent again were refused, and a HEAD found the object.
                let requests = try proxy.read().requests
                let completes = requests.filter { $0.0 == "POST" }.map { $0.2 }.dropFirst()
                #expect(completes.first == "lost-200", "\(requests)")
                #expect(completes.dropFirst().allSatisfy { $0 == String(status) }, "\(requests)")
                #expect(requests.contains { $0.0 == "HEAD" && $0.2 == "200" }, "\(requests)")
                let receipt = try jsonObject(result.standardOutput)
                let object = try #require(receipt["object"] as? [String: Any])
                #expect((object["etag"] as? String)?.hasSuffix("-3") == true, "\(object)")
                let stored = try await emulator.object(try #require(object["key"] as? String))
                let sealKey = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)
                #expect(try await openedEqual(stored, key: sealKey, original: original, in: folder))
                #expect(try await pendingUploads(emulator).isEmpty)
            }
        }
    }

    /// Starts a child with `start` and has the proxy SIGKILL it before it forwards the body byte that would
    /// pass `bytes`. The moment is the proxy's: a test process starved on a loaded machine once looked too late,
    /// after the whole file had gone. The order is given before the child starts, and the proxy holds every
    /// transfer at the count until it learns the pid, so that no child can pass the count before it is known.
    /// Returns the child and whether it ended by that kill (false when it ended first).
    func killWhenSent(
        at bytes: Int64, proxy: Proxy, start: () throws -> ChildProcess
    ) async throws -> (child: ChildProcess, killed: Bool) {
        let order = proxy.stats + ".kill"
        try "\(bytes)".write(toFile: order, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: order) }
        let child = try start()
        try "\(child.processIdentifier) \(bytes)".write(toFile: order, atomically: true, encoding: .utf8)
        _ = try await child.wait(upTo: 600)
        return (child, try child.endedBySignal && proxy.read().requests.contains { $0.0 == "KILL" })
    }

    /// Starts `attache upload` of a 40 MiB file under an idempotency key, one part in flight, and kills it
    /// once 15 MiB went: the file, its bytes, the command's arguments and the multipart record it left.
    func startAndKill(
        _ kind: S3Emulator, _ emulator: S3Emulator.Running, proxy: Proxy, in folder: ScratchFolder, extra: [String] = []
    ) async throws -> (original: [UInt8], arguments: [String], record: String) {
        let original = randomBytes(40 << 20)
        let file = try folder.write("clip.bin", original)
        let material = folder.path + "/material"
        let arguments =
            ["upload", file, "--url", "s3://\(emulator.bucket)/journalled/", "--s3-endpoint", proxy.endpoint, "--json", "--no-progress",
             "--idempotency-key", "clip-\(kind)", "--seal-material-dir", material,
             "--parts-in-flight", "1", "--on-give-up", "keep"] + Self.partOptions
        let (child, killed) = try await killWhenSent(at: 15 << 20, proxy: proxy) {
            try ChildProcess(executable: try attacheBinary(), arguments: arguments + extra, environment: emulator.environment())
        }
        try #require(killed, "the run ended early: \(child.standardError)")
        let records = try FileManager.default.contentsOfDirectory(atPath: material).filter { $0.hasSuffix(".multipart") }
        try #require(records.count == 1, "\(records)")
        return (original, arguments, material + "/" + records[0])
    }

    @Test("the journalled upload id is continued, not the newest upload the store has under the key",
          arguments: S3Emulator.allCases)
    func journalledUploadContinued(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-journalled")
            defer { folder.remove() }
            let proxy = try await Proxy(emulator)
            defer { proxy.server.stop() }
            let (original, arguments, recordPath) = try await startAndKill(kind, emulator, proxy: proxy, in: folder)
            // The record names the store's upload and the parts it confirmed, with their ETags and checksums.
            let record = try jsonObject(String(decoding: try Data(contentsOf: URL(fileURLWithPath: recordPath)), as: UTF8.self))
            let key = try #require(record["key"] as? String)
            #expect(key == "journalled/clip-\(kind).bin")
            let uploadId = try #require(record["uploadId"] as? String)
            let parts = try #require(record["parts"] as? [[String: Any]])
            #expect(!parts.isEmpty && parts.allSatisfy { ($0["etag"] as? String)?.isEmpty == false }, "\(record)")
            #expect(record["checksums"] as? Bool == false || parts.allSatisfy { $0["checksum"] is String }, "\(record)")
            // A second, newer upload under the same key: listing the store's uploads would pick it.
            try await Task.sleep(for: .seconds(1.5))
            let other = try await emulator.boto(["create-upload", emulator.bucket, key]).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(other != uploadId)
            #expect(try await pendingUploads(emulator).count == 2)
            let result = try await attache(arguments, emulator)
            #expect(result.status == 0, "\(result.all)\n\(emulator.log())")
            let receipt = try jsonObject(result.standardOutput)
            let object = try #require(receipt["object"] as? [String: Any])
            #expect((object["resumedBytes"] as? Int ?? 0) >= 10 << 20, "\(object)")
            // The journalled upload was completed; the other one is still there, untouched.
            let pending = try JSONSerialization.jsonObject(with: Data(try await emulator.boto(["upload-ids", emulator.bucket]).utf8))
            #expect(pending as? [[String]] == [[key, other]], "the journalled upload \(uploadId) was not the one completed")
            #expect(!FileManager.default.fileExists(atPath: recordPath))
            let stored = try await emulator.object(key)
            let sealKey = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)
            #expect(try await openedEqual(stored, key: sealKey, original: original, in: folder))
        }
    }

    @Test("an upload begun with SHA-256 part checksums is continued with them by a run that asks for CRC-32C",
          arguments: S3Emulator.allCases)
    func checksumAlgorithmOfTheEarlierUploadKept(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-algorithm")
            defer { folder.remove() }
            let proxy = try await Proxy(emulator)
            defer { proxy.server.stop() }
            let (original, arguments, recordPath) = try await startAndKill(
                kind, emulator, proxy: proxy, in: folder, extra: ["--checksum-algorithm", "sha256"])
            let record = try jsonObject(String(decoding: try Data(contentsOf: URL(fileURLWithPath: recordPath)), as: UTF8.self))
            // Both emulators take checksums; the rest of the test is about them.
            try #require(record["checksums"] as? Bool == true, "\(record)")
            #expect(record["checksumAlgorithm"] as? String == "SHA256", "\(record)")
            // The same command without the option: CRC-32C, the default.
            let result = try await attache(arguments + ["-v"], emulator)
            #expect(result.status == 0, "\(result.all)\n\(emulator.log())")
            let receipt = try jsonObject(result.standardOutput)
            let object = try #require(receipt["object"] as? [String: Any])
            #expect((object["resumedBytes"] as? Int ?? 0) >= 10 << 20, "parts the store held were sent again: \(object)")
            #expect((object["checksum"] as? String)?.hasPrefix("sha256:") == true, "\(object)")
            #expect(object["checksumWarning"] == nil, "\(object)")
            #expect(result.standardError.contains("begun with SHA-256"), "\(result.standardError)")
            let stored = try await emulator.object(try #require(object["key"] as? String))
            let sealKey = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)
            #expect(try await openedEqual(stored, key: sealKey, original: original, in: folder))
        }
    }

    @Test("with no record (an older journal), the newest upload the store has under the key is continued")
    func unrecordedUploadFoundByListing() async throws {
        try await S3Emulator.moto.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-unrecorded")
            defer { folder.remove() }
            let proxy = try await Proxy(emulator)
            defer { proxy.server.stop() }
            let (original, arguments, recordPath) = try await startAndKill(.moto, emulator, proxy: proxy, in: folder)
            try FileManager.default.removeItem(atPath: recordPath)
            let result = try await attache(arguments, emulator)
            #expect(result.status == 0, "\(result.all)\n\(emulator.log())")
            let receipt = try jsonObject(result.standardOutput)
            let object = try #require(receipt["object"] as? [String: Any])
            #expect((object["resumedBytes"] as? Int ?? 0) >= 10 << 20, "\(object)")
            #expect(try await pendingUploads(emulator).isEmpty)
            let stored = try await emulator.object(try #require(object["key"] as? String))
            let sealKey = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)
            #expect(try await openedEqual(stored, key: sealKey, original: original, in: folder))
        }
    }

    @Test("attache s3 abort-stale lists and aborts uploads left behind")
    func abortStale() async throws {
        try await S3Emulator.moto.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-stale")
            defer { folder.remove() }
            let proxy = try await Proxy(emulator)
            defer { proxy.server.stop() }
            let file = try folder.write("left.bin", randomBytes(40 << 20))
            let (child, killed) = try await killWhenSent(at: 12 << 20, proxy: proxy) {
                try ChildProcess(
                    executable: try attacheBinary(),
                    arguments: ["upload", file, "--url", "s3://\(emulator.bucket)/stale/", "--s3-endpoint", proxy.endpoint, "--no-progress",
                                "--parts-in-flight", "1"] + Self.partOptions,
                    environment: emulator.environment())
            }
            try #require(killed, "the run ended early: \(child.standardError)")
            try #require(try await pendingUploads(emulator).count == 1)
            let base = ["s3", "abort-stale", "--url", "s3://\(emulator.bucket)/stale/", "--s3-endpoint", emulator.endpoint, "--older-than", "0"]
            let listed = try await attache(base + ["--json"], emulator)
            #expect(listed.status == 0, "\(listed.all)")
            #expect(try jsonObject(listed.standardOutput)["aborted"] as? Bool == false)
            #expect(try await pendingUploads(emulator).count == 1)
            let aborted = try await attache(base + ["--abort"], emulator)
            #expect(aborted.status == 0, "\(aborted.all)")
            #expect(aborted.standardOutput.hasPrefix("aborted stale/"))
            #expect(try await pendingUploads(emulator).isEmpty)
        }
    }
}
