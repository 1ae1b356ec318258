import Foundation
import AttacheTestSupport
import Testing
import Attache

/// `attache download s3://BUCKET/KEY`: objects stored by boto3 (or by `attache upload`) fetched with
/// SigV4-signed GETs from moto's server and from MiniStack, which checks each signature, a resumed
/// ranged GET's included (``S3Emulator``).
@Suite("S3 downloads", .serialized)
struct S3DownloadTests {
    func attache(_ arguments: [String], _ emulator: S3Emulator.Running, environment: [String: String] = [:]) async throws
        -> CommandResult
    {
        try await runCommand(try attacheBinary(), arguments, environment: emulator.environment(environment))
    }

    func bytes(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

    @Test("objects boto3 stored come back identical, one by one and from a --from list mixed with a plain URL",
          arguments: S3Emulator.allCases)
    func downloadsWhatBoto3Stored(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-get")
            defer { folder.remove() }
            // A key with a space and a plus: URI-encoded once in the path, and signed as sent.
            let objects: [(key: String, bytes: [UInt8])] = [
                ("in box/a+1.bin", randomBytes(1_500_000)), ("in box/b.bin", randomBytes(300_000)),
                ("c.bin", randomBytes(70_000)),
            ]
            for object in objects {
                try await emulator.boto(["put", emulator.bucket, object.key, try folder.write(UUID().uuidString, object.bytes)])
            }

            // The endpoint from --s3-endpoint.
            let single = folder.path + "/single.bin"
            let result = try await attache(
                ["download", "s3://\(emulator.bucket)/in box/a+1.bin", "-o", single, "--s3-endpoint", emulator.endpoint, "--json"], emulator)
            #expect(result.status == 0, "\(result.all)")
            #expect(try bytes(single) == objects[0].bytes)
            #expect(try jsonObject(result.standardOutput)["url"] as? String == "s3://\(emulator.bucket)/in box/a+1.bin")

            // The endpoint from AWS_ENDPOINT_URL; a presigned GET (plain http, unsigned by us) among them.
            // Keys with spaces go in JSON lines (a plain line splits at spaces).
            let plain = try await emulator.boto(["presign-get", emulator.bucket, "c.bin"])
            let list = try folder.write(
                "list.txt",
                #"{"url":"s3://\#(emulator.bucket)/in box/a+1.bin","output":"first.bin"}"# + "\n# a comment\n"
                    + #"{"url":"s3://\#(emulator.bucket)/in box/b.bin"}"# + "\ns3://\(emulator.bucket)/c.bin third.bin\n\(plain) presigned.bin\n")
            let many = try await attache(
                ["download", "--from", list, "-d", folder.path + "/out", "--json", "--concurrency", "2"], emulator,
                environment: ["AWS_ENDPOINT_URL": emulator.endpoint])
            #expect(many.status == 0, "\(many.all)")
            #expect(try bytes(folder.path + "/out/first.bin") == objects[0].bytes)
            #expect(try bytes(folder.path + "/out/b.bin") == objects[1].bytes)
            #expect(try bytes(folder.path + "/out/third.bin") == objects[2].bytes)
            #expect(try bytes(folder.path + "/out/presigned.bin") == objects[2].bytes)
        }
    }

    @Test("a partial file left by an interrupted download continues with a signed ranged GET",
          arguments: S3Emulator.allCases)
    func resumesWithARangedGet(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-resume")
            defer { folder.remove() }
            let original = randomBytes(2_000_000)
            try await emulator.boto(["put", emulator.bucket, "big/part.bin", try folder.write("source", original)])
            let out = folder.path + "/part.bin"
            _ = try folder.write("part.bin.part", Array(original[..<750_000]))
            let result = try await attache(
                ["download", "s3://\(emulator.bucket)/big/part.bin", "-o", out, "--resume", "--json"], emulator,
                environment: ["AWS_ENDPOINT_URL_S3": emulator.endpoint])
            #expect(result.status == 0, "\(result.all)")
            let receipt = try jsonObject(result.standardOutput)
            #expect(receipt["resumedFrom"] as? Int == 750_000)
            #expect(receipt["transferredByteCount"] as? Int == 1_250_000)
            #expect(try bytes(out) == original)
            #expect(!FileManager.default.fileExists(atPath: out + ".part"))

            // The manager journals the object by its s3:// URL: a second run of the same list fetches nothing.
            let list = try folder.write("list.txt", "s3://\(emulator.bucket)/big/part.bin again.bin\n")
            for run in 0..<2 {
                let many = try await attache(
                    ["download", "--from", list, "-d", folder.path + "/dir", "--json"], emulator,
                    environment: ["AWS_ENDPOINT_URL_S3": emulator.endpoint])
                #expect(many.status == 0, "\(many.all)")
                #expect(many.standardOutput.contains(#""event":"alreadyDone""#) == (run == 1), "\(many.all)")
            }
            #expect(try bytes(folder.path + "/dir/again.bin") == original)
        }
    }

    @Test("an upload with the default seal, downloaded from the bucket, decrypts with the receipt's key",
          arguments: S3Emulator.allCases)
    func uploadThenDownloadAndDecrypt(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-roundtrip")
            defer { folder.remove() }
            let original = randomBytes(900_000)
            let file = try folder.write("minutes.bin", original)
            let upload = try await attache(
                ["upload", file, "--url", "s3://\(emulator.bucket)/inbox/", "--s3-endpoint", emulator.endpoint, "--json", "--no-progress"],
                emulator)
            #expect(upload.status == 0, "\(upload.all)")
            let receipt = try jsonObject(upload.standardOutput)
            let url = try #require(receipt["url"] as? String)
            #expect(url.hasPrefix("s3://\(emulator.bucket)/inbox/"))
            let key = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)

            let sealed = folder.path + "/sealed.bin"
            let download = try await attache(["download", url, "-o", sealed, "--s3-endpoint", emulator.endpoint], emulator)
            #expect(download.status == 0, "\(download.all)")
            #expect(try bytes(sealed).count == receipt["sentByteCount"] as? Int)
            #expect(try await decryptWithAttache(try bytes(sealed), key: key, in: folder) == original)

            // Or decrypted on arrival, with the key in a file.
            let keyFile = try folder.write("key", key)
            let opened = folder.path + "/opened.bin"
            let direct = try await attache(
                ["download", url, "-o", opened, "--key-file", keyFile, "--s3-endpoint", emulator.endpoint], emulator)
            #expect(direct.status == 0, "\(direct.all)")
            #expect(try bytes(opened) == original)
        }
    }

    @Test("the library: a pipeline's object receipt downloads and opens through Downloader.download(receipt:)",
          arguments: S3Emulator.allCases)
    func libraryReceiptRoundTrip(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-library")
            defer { folder.remove() }
            let original = randomBytes(600_000)
            let file = try folder.write("ledger.bin", original)
            let store = try ObjectStoreEndpoint.resolve(
                url: "s3://\(emulator.bucket)/library/", endpointURL: emulator.endpoint, environment: emulator.environment())
            var configuration = PipelineConfiguration(url: "s3://\(emulator.bucket)/library/")
            configuration.objectStore = store
            let receipt = try await AttachmentPipeline(configuration: configuration).send(Attachment(path: file))
            #expect(receipt.url?.hasPrefix("s3://\(emulator.bucket)/library/") == true)

            let out = folder.path + "/ledger-again.bin"
            let downloaded = try await Downloader().download(receipt: receipt, to: out, objectStore: store)
            #expect(downloaded.unsealed)
            #expect(try bytes(out) == original)
        }
    }

    @Test("NoSuchKey and SignatureDoesNotMatch: exit 77 naming the object and S3's code; no secret in any output")
    func refusals() async throws {
        // MiniStack checks an IAM user's signature; moto takes any.
        try await S3Emulator.ministack.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-refused")
            defer { folder.remove() }
            try await emulator.boto(["put", emulator.bucket, "here.bin", try folder.write("source", randomBytes(10_000))])
            let missing = try await attache(
                ["download", "s3://\(emulator.bucket)/not-here.bin", "-o", folder.path + "/x", "--s3-endpoint", emulator.endpoint], emulator)
            #expect(missing.status == 77, "\(missing.all)")
            #expect(missing.standardError.contains("s3://\(emulator.bucket)/not-here.bin: download:"), "\(missing.all)")
            #expect(missing.standardError.contains("NoSuchKey"), "\(missing.all)")

            let secret = "wrong-secret-\(UUID().uuidString)"
            let token = "session-\(UUID().uuidString)"
            let wrong = try await attache(
                ["download", "s3://\(emulator.bucket)/here.bin", "-o", folder.path + "/y", "--s3-endpoint", emulator.endpoint], emulator,
                environment: ["AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": token])
            #expect(wrong.status == 77, "\(wrong.all)")
            #expect(wrong.standardError.contains("s3://\(emulator.bucket)/here.bin"), "\(wrong.all)")
            #expect(
                wrong.standardError.contains("SignatureDoesNotMatch") || wrong.standardError.contains("InvalidClientTokenId")
                    || wrong.standardError.contains("InvalidToken"), "\(wrong.all)")
            for value in [secret, String(secret.suffix(12)), token] { #expect(!wrong.all.contains(value)) }
            #expect(!FileManager.default.fileExists(atPath: folder.path + "/y"))
        }
    }
}
