import Attache
import Foundation
import AttacheTestSupport
import Testing

/// Where thumbnails go (`PipelineConfiguration.thumbnails`), against the reference server.
@Suite("thumbnail placement")
struct ThumbnailPlacementTests {
    static let photo = ExitStatusTests.packageRoot.appendingPathComponent("Samples/photo.jpg").path

    @Test("inline (the default): one request with the thumbnails as extra parts")
    func inline() async throws {
        try await LiveServer.with { server in
            let receipt = try await server.pipeline().send(Attachment(path: Self.photo))
            #expect(receipt.transform.thumbnails.sorted() == ["thumbnail", "thumbnailTiny"])
            #expect(receipt.thumbnailUploads == nil)
            let stats = try await server.stats()
            #expect(stats.uploads == 1)
        }
    }

    @Test("separate: each thumbnail its own request and receipt, under a key derived from the attachment's")
    func separate() async throws {
        try await LiveServer.with { server in
            let pipeline = try server.pipeline { $0.thumbnails = .separate; $0.seal = SealConfiguration() }
            let receipt = try await pipeline.send(Attachment(path: Self.photo, idempotencyKey: "k-photo-1"))
            let uploads = try #require(receipt.thumbnailUploads)
            #expect(Set(uploads.map(\.name)) == ["thumbnail", "thumbnailTiny"])
            #expect(Set(uploads.map(\.filename)) == ["photo.thumbnail.jpg", "photo.thumbnail-tiny.jpg"])
            #expect(Set(uploads.compactMap(\.idempotencyKey)) == ["k-photo-1.thumbnail", "k-photo-1.thumbnailTiny"])
            #expect(receipt.transform.thumbnails.isEmpty)
            let ids = uploads.compactMap(\.fileId) + [receipt.fileId].compactMap { $0 }
            #expect(Set(ids).count == 3)
            for upload in uploads {
                #expect(upload.mimeType == "image/jpeg")
                #expect(upload.width > 0 && upload.height > 0)
                #expect(upload.placement == .separate)
                #expect((upload.sentByteCount ?? 0) > 0)
                #expect(upload.attempts == 1)
                #expect(upload.server?["fileId"]?.stringValue == upload.fileId)
            }
            // One type for every thumbnail: the separate ones are the receipt's thumbnails, request facts
            // and all.
            #expect(receipt.thumbnails == uploads)
            let stats = try await server.stats()
            #expect(stats.uploads == 3)
            #expect(stats.files == 3)
        }
    }

    @Test("none: no thumbnail made or sent")
    func none() async throws {
        try await LiveServer.with { server in
            let receipt = try await server.pipeline { $0.thumbnails = .omitted }.send(Attachment(path: Self.photo))
            #expect(receipt.transform.thumbnails.isEmpty)
            #expect(receipt.thumbnailUploads == nil)
            let stats = try await server.stats()
            #expect(stats.files == 1)
        }
    }

    @Test("s3-post: thumbnails default to none; inline, or separate under a fixed key, are refused before sending")
    func s3PostRules() async throws {
        var configuration = PipelineConfiguration(url: "http://127.0.0.1:9/upload")
        configuration.answers = .s3Post
        #expect(configuration.thumbnailPlacement == .omitted)
        #expect(!configuration.sendsMetadataFields)
        #expect(!configuration.sendsSealFields)
        configuration.sendMetadataFields = true
        #expect(configuration.sendsMetadataFields)
        configuration.thumbnails = .inline
        #expect(throws: AttacheError.self) { try configuration.validate() }
        configuration.thumbnails = .separate
        configuration.fields = [UploadField(name: "key", value: "uploads/fixed.jpg")]
        #expect(throws: AttacheError.self) { try configuration.validate() }
        configuration.fields = [UploadField(name: "key", value: "uploads/${filename}")]
        try configuration.validate()
        // Checked once, when the pipeline is made: nothing is read or sent.
        var inline = configuration
        inline.thumbnails = .inline
        let refused = #expect(throws: AttacheError.self) { try AttachmentPipeline(configuration: inline) }
        #expect(refused?.code == .invalidArgument)
        #expect(refused?.stage == .configuration)
        // A send whose options make the configuration one no server could take is refused the same way.
        let pipeline = try AttachmentPipeline(configuration: configuration)
        var options = SendOptions()
        options.fields = [UploadField(name: "key", value: "uploads/fixed.jpg")]
        let perSend = await #expect(throws: AttacheError.self) {
            try await pipeline.send(Attachment(path: Self.photo), options: options)
        }
        #expect(perSend?.stage == .configuration)
    }
}
