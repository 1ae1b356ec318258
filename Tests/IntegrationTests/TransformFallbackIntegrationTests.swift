import Attache
import Foundation
import AttacheTestSupport
import Testing

/// An image the Transform stage cannot read, sent through the live reference server under each
/// `onTransformError` policy.
@Suite("Images that cannot be recompressed")
struct TransformFallbackIntegrationTests {
    /// The sample photo cut off in its pixel data: a JPEG by every header, refused by the decoder.
    static func truncatedPhoto() throws -> [UInt8] {
        let photo = Array(try Data(contentsOf: URL(fileURLWithPath: PipelineIntegrationTests.sample("photo.jpg"))))
        return Array(photo.prefix(photo.count * 2 / 3))
    }

    @Test("send-original (the default) stores the original bytes and says why in the receipt")
    func sendOriginalStoresTheOriginal() async throws {
        let original = try Self.truncatedPhoto()
        let file = try TemporaryFile(name: "broken.jpg", bytes: original)
        defer { file.remove() }
        try await LiveServer.with { server in
            let pipeline = try server.pipeline()
            #expect(pipeline.configuration.transform.onTransformError == .sendOriginal)
            let receipt = try await pipeline.send(Attachment(path: file.path))
            #expect(receipt.kind == .image)
            #expect(receipt.mimeType == "image/jpeg")
            #expect(!receipt.transform.recompressed)
            #expect(receipt.transform.thumbnails.isEmpty)
            let reason = try #require(receipt.transform.skipped)
            #expect(reason.hasPrefix("corrupt-input"))
            let fileId = try #require(receipt.fileId)
            let (stored, _) = try await server.get("/files/\(fileId)")
            #expect(Array(stored) == original, "the server must hold the original bytes")
        }
    }

    @Test("fail gives the Transform stage's typed error and sends nothing")
    func failThrowsTheTypedError() async throws {
        let file = try TemporaryFile(name: "broken.jpg", bytes: try Self.truncatedPhoto())
        defer { file.remove() }
        try await LiveServer.with { server in
            let pipeline = try server.pipeline { $0.transform.onTransformError = .fail }
            let error = try await #require(throws: AttacheError.self) {
                try await pipeline.send(Attachment(path: file.path))
            }
            #expect(error.code == .corruptInput)
            #expect(error.stage == .transform)
            #expect(error.file == file.path)
            let stats = try await server.stats()
            #expect(stats.uploads == 0 && stats.files == 0)
        }
    }
}
