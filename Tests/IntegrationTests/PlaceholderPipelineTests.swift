import Attache
import Foundation
import AttacheTestSupport
import Testing

/// Placeholders through the pipeline and the command line: in the receipt, as form fields when asked,
/// for photos, stickers, video posters and animations, and from `attache detect --placeholders`.
@Suite("placeholders in the pipeline")
struct PlaceholderPipelineTests {
    static func sample(_ name: String) -> String {
        ExitStatusTests.packageRoot.appendingPathComponent("Samples/\(name)").path
    }

    @Test("photo, sticker, video and animation receipts carry placeholders; --placeholder-fields sends them",
          arguments: ["photo.jpg", "sticker.webp", "clip.mp4", "animation.gif"])
    func receiptsAndFields(_ name: String) async throws {
        try await LiveServer.with { server in
            let receipt = try await server.pipeline { $0.sendPlaceholderFields = true }.send(Attachment(path: Self.sample(name)))
            let placeholders = try #require(receipt.placeholders, "\(name)")
            #expect(placeholders.blurhash.count == 28)
            #expect((Data(base64Encoded: placeholders.thumbhash)?.count ?? 0) >= 5)
            let strippedText = try #require(placeholders.stripped)
            let stripped = [UInt8](try #require(Data(base64Encoded: strippedText)))
            #expect(stripped.first == 1 && max(stripped[1], stripped[2]) <= 40)
            let fields = receipt.server["fields"]
            #expect(fields?["blurhash"]?.stringValue == placeholders.blurhash)
            #expect(fields?["thumbhash"]?.stringValue == placeholders.thumbhash)
            #expect(fields?["stripped"]?.stringValue == placeholders.stripped)
            // In the JSON receipt, at the top.
            let json = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(receipt)) as? [String: Any])
            #expect((json["placeholders"] as? [String: Any])?["blurhash"] as? String == placeholders.blurhash)
        }
    }

    @Test("without --placeholder-fields the fields are not sent; other kinds and --no-placeholders have none")
    func defaultsAndOff() async throws {
        try await LiveServer.with { server in
            let photo = try await server.pipeline().send(Attachment(path: Self.sample("photo.jpg")))
            #expect(photo.placeholders != nil)
            #expect(photo.server["fields"]?["blurhash"] == nil)
            let text = try await server.pipeline().send(Attachment(path: Self.sample("notes.txt")))
            #expect(text.placeholders == nil)
            let off = try await server.pipeline { $0.transform.image.placeholders = nil }.send(Attachment(path: Self.sample("photo.jpg")))
            #expect(off.placeholders == nil)
        }
    }

    @Test("`attache detect --placeholders --json` prints what an upload's receipt holds; --blurhash-components 4x4 gives 36 characters")
    func detectCommand() async throws {
        let photo = Self.sample("photo.jpg")
        let plain = try await runCommand(try attacheBinary(), ["detect", "--json", photo])
        #expect(!plain.standardOutput.contains("placeholders"))
        let result = try await runCommand(try attacheBinary(), ["detect", "--placeholders", "--json", photo, Self.sample("notes.txt")])
        #expect(result.status == 0, "\(result.all)")
        let lines = result.standardOutput.split(separator: "\n")
        try #require(lines.count == 2)
        let first = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        let printed = try #require(first["placeholders"] as? [String: String])
        try await LiveServer.with { server in
            let receipt = try await server.pipeline().send(Attachment(path: photo))
            #expect(printed["blurhash"] == receipt.placeholders?.blurhash)
            #expect(printed["thumbhash"] == receipt.placeholders?.thumbhash)
            #expect(printed["stripped"] == receipt.placeholders?.stripped)
        }
        #expect(!lines[1].contains("placeholders"))
        let wide = try await runCommand(try attacheBinary(), ["detect", "--placeholders", "--blurhash-components", "4x4", photo])
        #expect(wide.status == 0)
        let blurhash = wide.standardOutput.split(separator: " ").first { $0.hasPrefix("blurhash=") }?.dropFirst(9)
        #expect(blurhash?.count == 36, "\(wide.standardOutput)")
        let bad = try await runCommand(try attacheBinary(), ["detect", "--placeholders", "--blurhash-components", "10x3", photo])
        #expect(bad.status == 64)
    }
}
