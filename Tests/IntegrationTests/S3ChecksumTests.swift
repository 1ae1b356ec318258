import Foundation
import AttacheTestSupport
import Testing

/// Per-part checksums of multipart uploads against moto's server and MiniStack: summed while each part
/// streams and sent as the trailer of an `aws-chunked` body, or summed just before the part goes and sent
/// as a header when a store refuses `aws-chunked` (a proxy plays such a store); CRC-32C and SHA-256; the
/// object's composite checksum read back with boto3; a checksum or a byte changed on its way fails the
/// upload, and a store that sums the object's checksum wrongly (moto 5.2.1 without `crc32c`) keeps it. A
/// proxy (`Tools/s3_checksum_proxy.py`) shows how each part carried its checksum.
@Suite("S3 part checksums", .serialized)
struct S3ChecksumTests {
    static let partOptions = ["--multipart-threshold", "8M", "--part-size", "5M"]
    static let partSize = 5 << 20

    struct Proxy {
        let server: ServiceProcess
        let stats: String
        var endpoint: String { "http://127.0.0.1:\(server.port)" }

        init(_ emulator: S3Emulator.Running, _ flags: [String] = []) async throws {
            stats = emulator.scratch.path + "/checksum-proxy-\(UUID().uuidString).json"
            server = try await ServiceProcess(
                [emulator.python, ServiceProcess.tools + "/s3_checksum_proxy.py", String(emulator.server.port), stats] + flags)
        }

        /// What each part request carried, in the order they were answered.
        func parts() throws -> [[String: Any]] {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])
            return object["parts"] as? [[String: Any]] ?? []
        }
    }

    /// `attache upload FILE` to `s3://BUCKET/PREFIX/` (the test's bucket) through `endpoint`, with 5 MiB parts.
    func upload(
        _ file: String, prefix: String, endpoint: String, _ emulator: S3Emulator.Running, _ extra: [String] = []
    ) async throws -> CommandResult {
        try await runCommand(
            try attacheBinary(),
            ["upload", file, "--url", "s3://\(emulator.bucket)/\(prefix)/", "--s3-endpoint", endpoint, "--json", "--no-progress"]
                + Self.partOptions + extra,
            environment: emulator.environment())
    }

    /// The store's checksums of `key` as boto3 reads them, and the composite summed by Python over the
    /// object's bytes in 5 MiB parts.
    func storedChecksums(_ emulator: S3Emulator.Running, key: String, algorithm: String) async throws -> [String: Any] {
        let result = try await runCommand(
            emulator.python,
            [ServiceProcess.tools + "/s3_checksums.py", emulator.endpoint, emulator.bucket, key, String(Self.partSize), algorithm],
            environment: S3Emulator.root)
        try #require(result.status == 0, "s3_checksums.py: \(result.standardError)")
        return try jsonObject(result.standardOutput)
    }

    /// The digest of a composite checksum, without its `-N`.
    func digest(_ value: Any?) -> String? {
        (value as? String).map { String($0.split(separator: "-").first ?? "") }
    }

    /// Checks a stored object: the receipt's checksum is boto3's (head_object with ChecksumMode and
    /// get_object_attributes) and Python's over the stored bytes; the key opens it.
    func checkStored(
        _ result: CommandResult, original: [UInt8], algorithm: String, _ emulator: S3Emulator.Running, in folder: ScratchFolder
    ) async throws {
        let receipt = try jsonObject(result.standardOutput)
        let object = try #require(receipt["object"] as? [String: Any], "\(result.all)")
        let key = try #require(object["key"] as? String)
        let parts = try #require(object["parts"] as? Int)
        let checksum = try #require(object["checksum"] as? String, "no checksum in \(object)")
        #expect(checksum.hasPrefix(algorithm + ":"), "\(checksum)")
        let stored = try await storedChecksums(emulator, key: key, algorithm: algorithm)
        let expected = try #require(stored["expected"] as? String)
        #expect(expected.hasSuffix("-\(parts)"))
        #expect(digest(String(checksum.dropFirst(algorithm.count + 1))) == digest(expected), "receipt \(checksum), boto3 \(stored)")
        let field = algorithm == "crc32c" ? "ChecksumCRC32C" : "ChecksumSHA256"
        let head = try #require(stored["head"] as? [String: Any])
        #expect(digest(head[field]) == digest(expected), "head_object(ChecksumMode=ENABLED): \(head)")
        let attributes = try #require(stored["attributes"] as? [String: Any])
        #expect(digest(attributes[field]) == digest(expected), "get_object_attributes: \(attributes)")
        let sealKey = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)
        #expect(try await decryptWithAttache(try await emulator.object(key), key: sealKey, in: folder) == original)
    }

    @Test("parts send CRC-32C and SHA-256 checksums as aws-chunked trailers; the store keeps the composite",
          arguments: S3Emulator.allCases)
    func trailers(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-trailer")
            defer { folder.remove() }
            for algorithm in ["crc32c", "sha256"] {
                let proxy = try await Proxy(emulator)
                defer { proxy.server.stop() }
                let original = randomBytes(13 << 20)
                let file = try folder.write("clip-\(algorithm).bin", original)
                let result = try await upload(
                    file, prefix: "trailer-\(algorithm)", endpoint: proxy.endpoint, emulator, ["--checksum-algorithm", algorithm])
                #expect(result.status == 0, "\(result.all)")
                guard result.status == 0 else { continue }
                let parts = try proxy.parts()
                #expect(parts.count == 3)
                for part in parts {
                    #expect(part["contentEncoding"] as? String == "aws-chunked", "\(part)")
                    #expect(part["contentSha256"] as? String == "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "\(part)")
                    #expect(part["trailer"] as? String == "x-amz-checksum-\(algorithm)", "\(part)")
                    #expect((part["trailerValue"] as? String)?.hasPrefix("x-amz-checksum-\(algorithm):") == true, "\(part)")
                    #expect((part["checksumHeaders"] as? [String]) == [], "\(part)")
                    #expect(part["status"] as? Int == 200, "\(part)")
                }
                try await checkStored(result, original: original, algorithm: algorithm, emulator, in: folder)
            }
        }
    }

    @Test("a store that refuses aws-chunked gets each part's checksum in a header, summed just before the part goes",
          arguments: S3Emulator.allCases)
    func headers(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-header")
            defer { folder.remove() }
            // auto (the default): the parts in flight are refused as aws-chunked once, then every part goes
            // with a header.
            let refusing = try await Proxy(emulator, ["--refuse-chunked"])
            defer { refusing.server.stop() }
            let original = randomBytes(13 << 20)
            let file = try folder.write("refused.bin", original)
            let result = try await upload(file, prefix: "auto", endpoint: refusing.endpoint, emulator, ["--parts-in-flight", "1"])
            #expect(result.status == 0, "\(result.all)")
            let parts = try refusing.parts()
            #expect(parts.first?["status"] as? Int == 501, "\(parts)")
            #expect(parts.filter { $0["status"] as? Int == 501 }.count == 1, "\(parts)")
            let stored = parts.filter { $0["status"] as? Int == 200 }
            #expect(stored.count == 3)
            for part in stored {
                #expect(part["contentEncoding"] == nil || part["contentEncoding"] is NSNull, "\(part)")
                #expect(part["contentSha256"] as? String == "UNSIGNED-PAYLOAD", "\(part)")
                #expect((part["checksumHeaders"] as? [String]) == ["x-amz-checksum-crc32c"], "\(part)")
            }
            if result.status == 0 { try await checkStored(result, original: original, algorithm: "crc32c", emulator, in: folder) }

            // --checksum-delivery header: never aws-chunked.
            let plain = try await Proxy(emulator)
            defer { plain.server.stop() }
            let second = randomBytes(12 << 20)
            let other = try folder.write("header.bin", second)
            let asked = try await upload(
                other, prefix: "header", endpoint: plain.endpoint, emulator,
                ["--checksum-delivery", "header", "--checksum-algorithm", "sha256"])
            #expect(asked.status == 0, "\(asked.all)")
            let sent = try plain.parts()
            #expect(sent.count == 3)
            for part in sent {
                #expect((part["checksumHeaders"] as? [String]) == ["x-amz-checksum-sha256"], "\(part)")
                #expect(part["trailer"] == nil || part["trailer"] is NSNull, "\(part)")
            }
            if asked.status == 0 { try await checkStored(asked, original: second, algorithm: "sha256", emulator, in: folder) }
        }
    }

    @Test("a checksum or a byte changed on its way fails the upload with the store's or our own check; nothing is removed",
          arguments: S3Emulator.allCases)
    func corrupted(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-corrupt")
            defer { folder.remove() }
            let file = try folder.write("victim.bin", randomBytes(12 << 20))
            // MiniStack checks each part's checksum (BadDigest): nothing is stored. moto keeps a part's checksum
            // unchecked and echoes it: a changed trailer is echoed changed, and the part fails; a changed byte
            // gives an object whose composite is not ours, and the changed part's ETag is not the MD5 of the
            // bytes sent: the upload fails, and the object is left in place for the user to see.
            let cases: [(flags: [String], delivery: String, ministack: String, moto: String, motoKeeps: Bool)] = [
                (["--corrupt-trailer", "2"], "trailer", "BadDigest", "another CRC-32C", false),
                (["--corrupt-body", "2"], "trailer", "BadDigest", "the store's ETag of part 2", true),
                (["--corrupt-body", "2"], "header", "BadDigest", "the store's ETag of part 2", true),
            ]
            for (index, fault) in cases.enumerated() {
                let proxy = try await Proxy(emulator, fault.flags)
                defer { proxy.server.stop() }
                let again = ["--idempotency-key", "corrupt-\(index)", "--seal-material-dir", folder.path + "/material"]
                let result = try await upload(
                    file, prefix: "corrupt-\(index)", endpoint: proxy.endpoint, emulator,
                    ["--checksum-delivery", fault.delivery, "--attempts", "1"] + again)
                let expected = kind == .ministack ? fault.ministack : fault.moto
                #expect(result.status == (kind == .ministack ? 77 : 76), "\(fault.flags): \(result.all)")
                #expect(result.standardError.contains(expected), "\(fault.flags): \(result.all)")
                // The error names the file, whether the store refused a part or our own check failed.
                #expect(result.standardError.contains("victim.bin: "), "\(fault.flags): \(result.all)")
                #expect(try jsonObject(result.standardOutput)["status"] as? String == "error")
                let listed = try await emulator.boto(["list", emulator.bucket, "corrupt-\(index)/"])
                guard kind == .moto, fault.motoKeeps else {
                    #expect(listed == "[]", "\(fault.flags): an object was stored: \(listed)")
                    continue
                }
                let key = "corrupt-\(index)/corrupt-\(index).bin"
                #expect(listed.contains("\"\(key)\""), "\(fault.flags): the object was not kept: \(listed)")
                #expect(result.standardError.contains("s3://\(emulator.bucket)/\(key) was left in place"), "\(result.all)")
                // Sent again under the same key, with nothing changed on the way: the object kept is not taken
                // for this upload's.
                let rerun = try await upload(file, prefix: "corrupt-\(index)", endpoint: emulator.endpoint, emulator, again)
                #expect(rerun.status == 76, "\(rerun.all)")
                #expect(rerun.standardError.contains("already holds an object of this size whose ETag"), "\(rerun.all)")
            }
        }
    }

    @Test("moto 5.2.1 as pip installs it sums CRC-32 for CRC-32C: the object is kept and opens, the receipt says why")
    func storeThatSumsWrongly() async throws {
        let emulator = try await PlainMoto.start()
        defer { emulator.stop() }
        let running = emulator.running
        let folder = try ScratchFolder(prefix: "attache-s3-plain-moto")
        defer { folder.remove() }
        for delivery in ["trailer", "header"] {
            let original = randomBytes(13 << 20)
            let file = try folder.write("odd-\(delivery).bin", original)
            let result = try await upload(
                file, prefix: "odd-\(delivery)", endpoint: running.endpoint, running, ["--checksum-delivery", delivery])
            #expect(result.status == 0, "\(delivery): \(result.all)\n\(running.log())")
            guard result.status == 0 else { continue }
            #expect(result.standardError.contains("the store's checksum of the object could not be explained"), "\(result.all)")
            let receipt = try jsonObject(result.standardOutput)
            let object = try #require(receipt["object"] as? [String: Any], "\(result.all)")
            let key = try #require(object["key"] as? String)
            #expect(object["parts"] as? Int == 3)
            let warning = try #require(object["checksumWarning"] as? String, "\(object)")
            #expect(warning.contains("each part's checksum was confirmed by the store"), "\(warning)")
            #expect(warning.contains("each part's ETag is the MD5 of the bytes sent"), "\(warning)")
            #expect(warning.hasSuffix("the object was kept"), "\(warning)")
            // The store's value really is wrong (else this test shows nothing): boto3 reads it, and Python's
            // composite over the stored bytes is another; the receipt carries the one of the bytes.
            let stored = try await storedChecksums(running, key: key, algorithm: "crc32c")
            let expected = try #require(stored["expected"] as? String)
            let head = try #require(stored["head"] as? [String: Any])
            let odd = try #require(head["ChecksumCRC32C"] as? String, "\(stored)")
            #expect(digest(odd) != digest(expected), "moto summed CRC-32C right: \(stored)")
            #expect(warning.contains(odd), "\(warning)")
            #expect(object["checksum"] as? String == "crc32c:" + expected, "\(object)")
            // Kept, and it opens with the receipt's key (the default seal).
            let sealKey = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)
            #expect(try await decryptWithAttache(try await running.object(key), key: sealKey, in: folder) == original)
        }
    }

    @Test("--checksum off sends no checksum and checks nothing: a store that sums wrongly gives no warning")
    func checksumOff() async throws {
        let emulator = try await PlainMoto.start()
        defer { emulator.stop() }
        let running = emulator.running
        let folder = try ScratchFolder(prefix: "attache-s3-checksum-off")
        defer { folder.remove() }
        let proxy = try await Proxy(running)
        defer { proxy.server.stop() }
        let original = randomBytes(12 << 20)
        let file = try folder.write("plain.bin", original)
        let result = try await upload(file, prefix: "off", endpoint: proxy.endpoint, running, ["--checksum", "off"])
        #expect(result.status == 0, "\(result.all)")
        #expect(result.standardError.isEmpty, "\(result.all)")
        let parts = try proxy.parts()
        #expect(parts.count == 3)
        for part in parts {
            #expect((part["checksumHeaders"] as? [String]) == [], "\(part)")
            #expect(part["trailer"] == nil || part["trailer"] is NSNull, "\(part)")
            #expect(part["contentSha256"] as? String == "UNSIGNED-PAYLOAD", "\(part)")
        }
        let receipt = try jsonObject(result.standardOutput)
        let object = try #require(receipt["object"] as? [String: Any], "\(result.all)")
        #expect(object["checksum"] == nil || object["checksum"] is NSNull, "\(object)")
        #expect(object["checksumWarning"] == nil || object["checksumWarning"] is NSNull, "\(object)")
        let key = try #require(object["key"] as? String)
        let sealKey = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)
        #expect(try await decryptWithAttache(try await running.object(key), key: sealKey, in: folder) == original)
    }
}

/// moto 5.2.1 as a plain `pip install 'moto[server]'` gives it, without the optional `crc32c` module
/// (`Tools/moto_without_crc32c.py`): it sums CRC-32 where CRC-32C is asked, so its checksum of a multipart
/// object matches no checksum of the bytes, while every byte is right. Run with the S3 tests' interpreter,
/// the moto Scripts/bootstrap.sh keeps in `attache/moto-5.2.1` under the cache folder first on PYTHONPATH.
/// A server of the test's own, stopped by the test.
struct PlainMoto {
    let running: S3Emulator.Running

    static func start() async throws -> PlainMoto {
        let environment = ProcessInfo.processInfo.environment
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? (NSHomeDirectory() + "/.cache")
        let folder = cache + "/attache/moto-5.2.1"
        guard FileManager.default.fileExists(atPath: folder + "/moto/server.py") else {
            throw TestFailure("no moto 5.2.1 in \(folder): run Scripts/bootstrap.sh")
        }
        // The same modules as the other emulators ask for: the interpreter found for them is found once.
        let python = try python(with: ["ministack", "boto3", "moto", "crc32c"])
        let port = try freePort()
        let server = try await ServiceProcess(
            [python, ServiceProcess.tools + "/moto_without_crc32c.py", "-H", "127.0.0.1", "-p", String(port)],
            environment: S3Emulator.root.merging(["PYTHONPATH": folder]) { $1 }, ready: "Running on", port: port)
        do {
            let version = try await runCommand(
                python, ["-c", "import moto; print(moto.__version__)"], environment: ["PYTHONPATH": folder])
            try #require(version.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "5.2.1", "\(version.all)")
            let scratch = try ScratchFolder(prefix: "attache-s3-plain-moto-server")
            let boto3 = try BotoSession(
                python: python, tool: ServiceProcess.tools + "/s3_objects.py", endpoint: "http://127.0.0.1:\(port)",
                environment: S3Emulator.root)
            let running = S3Emulator.Running(
                kind: .moto, python: python, server: server, boto3: boto3, scratch: scratch, uploader: S3Emulator.root,
                bucket: "plain-moto")
            try await running.boto(["make-bucket", running.bucket])
            return PlainMoto(running: running)
        } catch {
            server.stop()
            throw error
        }
    }

    func stop() {
        running.boto3.stop()
        running.server.stop()
        running.scratch.remove()
    }
}
