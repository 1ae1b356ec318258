import Attache
import Foundation
import AttacheTestSupport
import Testing

/// `attache upload --answer-profile s3-post` against an S3 emulator (MiniStack, from PyPI) with forms made
/// by an S3 SDK (boto3). MiniStack checks a signed form as S3 does: the policy's signature against the
/// secret it was started with, its expiration, its conditions, and fields the policy does not list, and
/// answers with S3's XML errors.
@Suite("S3 presigned POST")
struct S3PresignedPostTests {
    /// The emulator's root key and the SDK's credentials; they reach both through the environment.
    static let credentials = S3Emulator.root

    /// The shared MiniStack (``S3Emulator/ministack``) and a bucket of the test's own.
    struct Emulator {
        let running: S3Emulator.Running
        var bucket: String { running.bucket }
        var tool: String { ServiceProcess.tools + "/s3_form.py" }

        func form(
            _ arguments: [String], credentials: [String: String] = S3PresignedPostTests.credentials
        ) async throws -> (url: String, fields: [(String, String)]) {
            let result = try await runCommand(
                running.python, [tool, running.endpoint, "presign", bucket] + arguments, environment: credentials)
            try #require(result.status == 0, "\(result.standardError)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
            let fields = try #require(object["fields"] as? [String: String])
            return (try #require(object["url"] as? String), fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        }

        /// The object's bytes, read with boto3.
        func object(_ key: String) async throws -> [UInt8] {
            try await running.object(key)
        }
    }

    /// Runs `body` against the MiniStack the S3 suites share, in a bucket of the test's own. MiniStack
    /// checks a form's policy signature against the root secret it was started with.
    func withEmulator(_ body: (Emulator) async throws -> Void) async throws {
        try await S3Emulator.ministack.run { running in
            try await body(Emulator(running: running))
        }
    }

    func upload(_ file: String, form: (url: String, fields: [(String, String)]), _ extra: [String] = []) async throws -> CommandResult {
        try await runCommand(
            try attacheBinary(),
            ["upload", file, "--url", form.url, "--answer-profile", "s3-post", "--json", "--no-progress", "-v",
             "--attempts", "2"]
                + form.fields.flatMap { ["--field", "\($0.0)=\($0.1)"] } + extra)
    }

    @Test("the bucket holds exactly the sealed bytes the receipt describes, and they open with its key")
    func storesWhatTheReceiptSays() async throws {
        try await withEmulator { emulator in
            let original = randomBytes(300_000)
            let file = try TemporaryFile(name: "report.bin", bytes: original)
            defer { file.remove() }
            let form = try await emulator.form(["uploads/report.bin"])
            let result = try await upload(file.path, form: form)
            #expect(result.status == 0, "\(result.all)")
            let receipt = try jsonObject(result.standardOutput)
            #expect(receipt["fileId"] as? String == "uploads/report.bin")
            let sent = try #require(receipt["sentByteCount"] as? Int)
            let seal = try #require(receipt["seal"] as? [String: Any])
            #expect(seal["scheme"] as? String == "stream-gcm")
            let key = try #require(seal["key"] as? String)

            let stored = try await emulator.object("uploads/report.bin")
            #expect(stored.count == sent)
            #expect(stored != original)
            try Data(stored).write(to: URL(fileURLWithPath: file.directory + "/stored"))
            try Data(key.utf8).write(to: URL(fileURLWithPath: file.directory + "/key"))
            let opened = await attache(
                ["decrypt", file.directory + "/stored", "-o", file.directory + "/opened", "--key-file", file.directory + "/key"])
            #expect(opened.status == 0, "\(opened.all)")
            let plain = Array(try Data(contentsOf: URL(fileURLWithPath: file.directory + "/opened")))
            #expect(try await sha256Hex(plain) == sha256Hex(original))
            #expect(plain == original)
        }
    }

    @Test("201 with success_action_status: the key comes from the answer; plaintext goes as it is")
    func createdAnswer() async throws {
        try await withEmulator { emulator in
            let original = randomBytes(50_000)
            let file = try TemporaryFile(name: "notes.bin", bytes: original)
            defer { file.remove() }
            let form = try await emulator.form(["plain/${filename}", "--success-status", "201"])
            let result = try await upload(file.path, form: form, ["--scheme", "none"])
            #expect(result.status == 0, "\(result.all)")
            let receipt = try jsonObject(result.standardOutput)
            #expect(receipt["fileId"] as? String == "plain/notes.bin")
            let stored = try await emulator.object("plain/notes.bin")
            #expect(stored == original)
        }
    }

    @Test("an expired policy is S3's AccessDenied, exit 77")
    func expiredPolicy() async throws {
        try await withEmulator { emulator in
            let file = try TemporaryFile(name: "late.bin", bytes: randomBytes(10_000))
            defer { file.remove() }
            let form = try await emulator.form(["uploads/late.bin", "--expires-in", "-60"])
            let result = try await upload(file.path, form: form)
            #expect(result.status == 77, "\(result.all)")
            #expect(result.standardError.contains("AccessDenied"), "\(result.all)")
            #expect(result.standardError.contains("Policy expired"), "\(result.all)")
        }
    }

    @Test("a tampered policy is S3's SignatureDoesNotMatch, exit 77")
    func tamperedPolicy() async throws {
        try await withEmulator { emulator in
            let file = try TemporaryFile(name: "forged.bin", bytes: randomBytes(10_000))
            defer { file.remove() }
            let form = try await emulator.form(["uploads/forged.bin", "--tamper"])
            let result = try await upload(file.path, form: form)
            #expect(result.status == 77, "\(result.all)")
            #expect(result.standardError.contains("SignatureDoesNotMatch"), "\(result.all)")
        }
    }

    @Test("a form signed with another secret is S3's SignatureDoesNotMatch, exit 77")
    func wrongSecret() async throws {
        try await withEmulator { emulator in
            let file = try TemporaryFile(name: "stranger.bin", bytes: randomBytes(10_000))
            defer { file.remove() }
            var credentials = Self.credentials
            credentials["AWS_SECRET_ACCESS_KEY"] = "not-the-emulator-secret"
            let form = try await emulator.form(["uploads/stranger.bin"], credentials: credentials)
            let result = try await upload(file.path, form: form)
            #expect(result.status == 77, "\(result.all)")
            #expect(result.standardError.contains("SignatureDoesNotMatch"), "\(result.all)")
        }
    }

    @Test("metadata fields the policy does not list are refused by S3, so s3-post sends none unless asked")
    func extraFieldsOnlyWhenAsked() async throws {
        try await withEmulator { emulator in
            let file = try TemporaryFile(name: "asked.bin", bytes: randomBytes(10_000))
            defer { file.remove() }
            let form = try await emulator.form(["uploads/asked.bin"])
            let result = try await upload(file.path, form: form, ["--metadata-fields"])
            #expect(result.status == 77, "\(result.all)")
            #expect(result.standardError.contains("AccessDenied"), "\(result.all)")
            // S3 compares field names without case; the emulator names them in lower case.
            #expect(result.standardError.lowercased().contains("extra input fields: mimetype"), "\(result.all)")
        }
    }

    @Test("an image: no thumbnail in the form's request; with --thumbnails separate each is an object of its own")
    func thumbnails() async throws {
        try await withEmulator { emulator in
            let photo = try TemporaryFile(name: "photo.jpg", bytes: try Self.photo())
            defer { photo.remove() }
            let form = try await emulator.form(["pics/${filename}"])
            let plain = try await upload(photo.path, form: form, ["--scheme", "none"])
            #expect(plain.status == 0, "\(plain.all)")
            let receipt = try jsonObject(plain.standardOutput)
            #expect(receipt["fileId"] as? String == "pics/photo.jpg")
            #expect(receipt["thumbnailUploads"] == nil)

            let separate = try await upload(photo.path, form: form, ["--scheme", "none", "--thumbnails", "separate"])
            #expect(separate.status == 0, "\(separate.all)")
            let uploads = try #require(try jsonObject(separate.standardOutput)["thumbnailUploads"] as? [[String: Any]])
            #expect(Set(uploads.compactMap { $0["fileId"] as? String }) == ["pics/photo.thumbnail.jpg", "pics/photo.thumbnail-tiny.jpg"])
            for upload in uploads {
                let key = try #require(upload["fileId"] as? String)
                let stored = try await emulator.object(key)
                #expect(stored.count == upload["sentByteCount"] as? Int)
                #expect(stored.starts(with: [0xFF, 0xD8, 0xFF]))
            }
            // The attachment itself is still the photo, not a thumbnail.
            let main = try await emulator.object("pics/photo.jpg")
            #expect(main.count == receipt["sentByteCount"] as? Int)
        }
    }

    /// The sample photo: large enough to be recompressed and get both thumbnails.
    static func photo() throws -> [UInt8] {
        Array(try Data(contentsOf: ExitStatusTests.packageRoot.appendingPathComponent("Samples/photo.jpg")))
    }
}
