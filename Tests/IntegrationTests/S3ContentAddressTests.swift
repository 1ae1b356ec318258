import Attache
import Foundation
import AttacheTestSupport
import Testing

/// `--key-template` with `{sha256}`: the bucket is the index of what is stored. Against moto and MiniStack,
/// through a proxy that logs every request: a second upload of the same content (another file, another
/// process, no journal) asks with a `HEAD` and sends no `PUT`, and its receipt's key opens the one object;
/// new content is written with `If-None-Match: *`; an object of other bytes under the content's name is
/// never overwritten.
@Suite("S3 content-addressed objects", .serialized)
struct S3ContentAddressTests {
    func attache(_ arguments: [String], _ emulator: S3Emulator.Running) async throws -> CommandResult {
        try await runCommand(try attacheBinary(), arguments, environment: emulator.environment())
    }

    @Test("a second upload of the same content does a HEAD and no PUT; its key opens the one object",
          arguments: S3Emulator.allCases)
    func secondUploadSendsNothing(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-content")
            defer { folder.remove() }
            let original = randomBytes(300_000)
            let first = try folder.write("report.bin", original)
            let copy = try folder.write("forwarded copy.bin", original)
            let other = try folder.write("other.bin", randomBytes(120_000))
            let proxy = try await S3MultipartTests.Proxy(emulator)
            defer { proxy.server.stop() }
            func upload(_ file: String) async throws -> (CommandResult, [String: Any], [String]) {
                let before = (try? proxy.read().requests.count) ?? 0
                let result = try await attache(
                    ["upload", file, "--url", "s3://\(emulator.bucket)/media/", "--s3-endpoint", proxy.endpoint,
                     "--key-template", "{sha256}", "--dedup", "reuse", "--json", "--no-progress"], emulator)
                #expect(result.status == 0, "\(result.all)")
                let methods = try proxy.read().requests.dropFirst(before).map(\.0)
                return (result, try jsonObject(result.standardOutput), methods)
            }
            let (_, stored, firstMethods) = try await upload(first)
            #expect(firstMethods == ["HEAD", "PUT"], "\(firstMethods)")
            let key = try #require((stored["object"] as? [String: Any])?["key"] as? String)
            #expect(key == "media/" + ContentDigest.sha256Hex(of: original))

            let (_, again, methods) = try await upload(copy)
            #expect(methods == ["HEAD"], "the copy was sent: \(methods)")
            let dedup = try #require(again["dedup"] as? [String: Any], "\(again)")
            #expect(dedup["reusedFrom"] as? String == "s3://\(emulator.bucket)/\(key)")
            #expect(again["url"] as? String == stored["url"] as? String)
            let sealKey = try #require((again["seal"] as? [String: Any])?["key"] as? String)
            #expect(sealKey == (stored["seal"] as? [String: Any])?["key"] as? String)
            #expect(try await decryptWithAttache(try await emulator.object(key), key: sealKey, in: folder) == original)

            let (_, _, otherMethods) = try await upload(other)
            #expect(otherMethods == ["HEAD", "PUT"])

            // Other bytes under a content's name: left as they are, and the file fails.
            let squatted = try folder.write("squatted.bin", randomBytes(50_000))
            let squattedKey = "media/" + ContentDigest.sha256Hex(of: Array(try Data(contentsOf: URL(fileURLWithPath: squatted))))
            let planted = try folder.write("planted", randomBytes(777))
            try await emulator.boto(["put", emulator.bucket, squattedKey, planted])
            let refused = try await attache(
                ["upload", squatted, "--url", "s3://\(emulator.bucket)/media/", "--s3-endpoint", emulator.endpoint,
                 "--key-template", "{sha256}", "--no-progress"], emulator)
            #expect(refused.status != 0)
            #expect(refused.standardError.contains("left as it is"), "\(refused.all)")
            #expect(try await emulator.object(squattedKey).count == 777)
        }
    }
}
