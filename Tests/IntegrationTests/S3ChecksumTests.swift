import Foundation
import AttacheTestSupport
import Testing

/// Per-part checksums of multipart uploads against moto's server and MiniStack: summed while each part
/// streams and sent as the trailer of an `aws-chunked` body, or summed just before the part goes and sent
/// as a header when a store refuses `aws-chunked` (a proxy plays such a store); CRC-32C and SHA-256; the
/// object's composite checksum read back with boto3; a checksum or a byte changed on its way fails the
/// upload. A proxy (`Tools/s3_checksum_proxy.py`) shows how each part carried its checksum.
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

    @Test("a checksum or a byte changed on its way fails the upload with the store's or our own check",
          arguments: S3Emulator.allCases)
    func corrupted(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-corrupt")
            defer { folder.remove() }
            let file = try folder.write("victim.bin", randomBytes(12 << 20))
            // MiniStack checks each part's checksum (BadDigest); moto keeps it unchecked and echoes it, so the
            // echo differs from what was summed, or its own composite of the stored bytes differs from ours.
            let cases: [(flags: [String], delivery: String, ministack: String, moto: String)] = [
                (["--corrupt-trailer", "2"], "trailer", "BadDigest", "another CRC-32C"),
                (["--corrupt-body", "2"], "trailer", "BadDigest", "a part changed on its way"),
                (["--corrupt-body", "2"], "header", "BadDigest", "a part changed on its way"),
            ]
            for (index, fault) in cases.enumerated() {
                let proxy = try await Proxy(emulator, fault.flags)
                defer { proxy.server.stop() }
                let result = try await upload(
                    file, prefix: "corrupt-\(index)", endpoint: proxy.endpoint, emulator,
                    ["--checksum-delivery", fault.delivery, "--attempts", "1"])
                let expected = kind == .ministack ? fault.ministack : fault.moto
                #expect(result.status == (kind == .ministack ? 77 : 76), "\(fault.flags): \(result.all)")
                #expect(result.standardError.contains(expected), "\(fault.flags): \(result.all)")
                // The error names the file, whether the store refused a part or our own check failed.
                #expect(result.standardError.contains("victim.bin: "), "\(fault.flags): \(result.all)")
                #expect(try jsonObject(result.standardOutput)["status"] as? String == "error")
                let listed = try await emulator.boto(["list", emulator.bucket, "corrupt-\(index)/"])
                #expect(listed == "[]", "\(fault.flags): an object was stored: \(listed)")
            }
        }
    }
}
