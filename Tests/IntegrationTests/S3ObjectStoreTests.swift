import Foundation
import AttacheTestSupport
import Testing

/// `attache upload` to an object store: a presigned PUT URL made by boto3, and SigV4-signed `PutObject`s to
/// `s3://BUCKET/PREFIX/`, against moto's server and MiniStack (``S3Emulator``). What the bucket holds is read
/// with boto3 and opened with the receipt's key.
@Suite("S3 object storage", .serialized)
struct S3ObjectStoreTests {
    func attache(_ arguments: [String], _ emulator: S3Emulator.Running, environment: [String: String] = [:]) async throws
        -> CommandResult
    {
        try await runCommand(try attacheBinary(), arguments, environment: emulator.environment(environment))
    }

    /// Decrypts `sealed` with `key` (base64) through `attache decrypt`, in `folder`.
    func open(_ sealed: [UInt8], key: String, in folder: ScratchFolder) async throws -> [UInt8] {
        try await decryptWithAttache(sealed, key: key, in: folder)
    }

    @Test("a presigned PUT made by boto3 stores exactly the sealed bytes; download and decrypt give the source back",
          arguments: S3Emulator.allCases)
    func presignedPut(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-put")
            defer { folder.remove() }
            let original = randomBytes(700_000)
            let file = try folder.write("report.bin", original)
            // The URL signs the Content-Type: the upload must send exactly that one.
            let url = try await emulator.boto(
                ["presign-put", emulator.bucket, "inbox/report.bin", "--content-type", "application/octet-stream"])
            let result = try await attache(["upload", file, "--url", url, "--method", "PUT", "--json", "--no-progress"], emulator)
            #expect(result.status == 0, "\(result.all)")
            let receipt = try jsonObject(result.standardOutput)
            let sent = try #require(receipt["sentByteCount"] as? Int)
            let object = try #require(receipt["object"] as? [String: Any])
            let key = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)

            let stored = try await emulator.object("inbox/report.bin")
            #expect(stored.count == sent)
            #expect(object["byteCount"] as? Int == sent)
            let head = try JSONSerialization.jsonObject(with: Data(try await emulator.boto(["head", emulator.bucket, "inbox/report.bin"]).utf8))
            #expect((head as? [String: Any])?["etag"] as? String == object["etag"] as? String)
            #expect(try await open(stored, key: key, in: folder) == original)

            // attache download of a presigned GET, then decrypt with the receipt's key.
            let getURL = try await emulator.boto(["presign-get", emulator.bucket, "inbox/report.bin"])
            let downloaded = folder.path + "/downloaded"
            let fetched = try await attache(["download", getURL, "-o", downloaded], emulator)
            #expect(fetched.status == 0, "\(fetched.all)")
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: downloaded)))
            #expect(bytes == stored)
            #expect(try await open(bytes, key: key, in: folder) == original)
        }
    }

    @Test("a SigV4 PutObject with keys from the environment; thumbnails are objects of their own",
          arguments: S3Emulator.allCases)
    func signedPutObject(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-sign")
            defer { folder.remove() }
            let original = randomBytes(400_000)
            let file = try folder.write("notes.bin", original)
            let photo = try folder.write(
                "photo.jpg", Array(try Data(contentsOf: ExitStatusTests.packageRoot.appendingPathComponent("Samples/photo.jpg"))))
            // A prefix with a space and a plus: keys are URI-encoded once, and signed as sent.
            let result = try await attache(
                ["upload", file, photo, "--url", "s3://\(emulator.bucket)/in box+1/", "--s3-endpoint", emulator.endpoint,
                 "--json", "--no-progress", "--concurrency", "1"],
                emulator)
            #expect(result.status == 0, "\(result.all)")
            let lines = result.standardOutput.split(separator: "\n").map(String.init)
            try #require(lines.count == 2, "\(result.all)")

            let receipt = try jsonObject(lines[0])
            let object = try #require(receipt["object"] as? [String: Any])
            let key = try #require(object["key"] as? String)
            #expect(key.hasPrefix("in box+1/") && key.hasSuffix(".bin"))
            #expect(receipt["fileId"] as? String == key)
            #expect(object["bucket"] as? String == emulator.bucket)
            #expect(receipt["url"] as? String == "s3://\(emulator.bucket)/" + key)
            let stored = try await emulator.object(key)
            #expect(stored.count == receipt["sentByteCount"] as? Int)
            let sealKey = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)
            #expect(try await open(stored, key: sealKey, in: folder) == original)

            let image = try jsonObject(lines[1])
            let thumbnails = try #require(image["thumbnails"] as? [[String: Any]])
            #expect(thumbnails.count == 2)
            let listed = try JSONSerialization.jsonObject(with: Data(try await emulator.boto(["list", emulator.bucket, "in box+1/"]).utf8))
            let keys = Set(((listed as? [[String: Any]]) ?? []).compactMap { $0["key"] as? String })
            #expect(keys.count == 4)
            for thumbnail in thumbnails {
                let thumbnailKey = try #require(thumbnail["fileId"] as? String)
                #expect(keys.contains(thumbnailKey))
                let bytes = try await emulator.object(thumbnailKey)
                #expect(bytes.count == thumbnail["sentByteCount"] as? Int)
                let opened = try await open(bytes, key: try #require((image["seal"] as? [String: Any])?["key"] as? String), in: folder)
                #expect(opened.starts(with: [0xFF, 0xD8, 0xFF]))
            }
        }
    }

    @Test("a wrong secret is S3's SignatureDoesNotMatch, exit 77, and the secret is in no output at -v")
    func wrongSecret() async throws {
        // MiniStack checks an IAM user's signature; moto takes any.
        try await S3Emulator.ministack.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-wrong")
            defer { folder.remove() }
            let file = try folder.write("secret.bin", randomBytes(20_000))
            let secret = "wrong-secret-\(UUID().uuidString)"
            let result = try await attache(
                ["upload", file, "--url", "s3://\(emulator.bucket)/x/", "--s3-endpoint", emulator.endpoint, "-v", "--no-progress"],
                emulator, environment: ["AWS_SECRET_ACCESS_KEY": secret])
            #expect(result.status == 77, "\(result.all)")
            #expect(result.standardError.contains("SignatureDoesNotMatch"), "\(result.all)")
            #expect(!result.all.contains(secret))
            #expect(!result.all.contains(String(secret.suffix(12))))
        }
    }
}
