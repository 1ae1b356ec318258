import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// The pipeline's stages driven in memory, up to the form: nothing is sent (the URL is never contacted).
/// What goes on the wire is read back with Python's `email` parser.
@Suite("pipeline stages")
struct PipelineStageTests {
    static let photo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples/photo.jpg").path

    static func pipeline(_ configure: (inout PipelineConfiguration) -> Void) throws -> AttachmentPipeline {
        var configuration = PipelineConfiguration(url: "http://127.0.0.1:9/upload")
        configuration.fields = [UploadField(name: "tenant", value: "acme")]
        configure(&configuration)
        return try AttachmentPipeline(configuration: configuration)
    }

    /// prepare → detect → transform → seal → form, as `run` chains them.
    static func forms(_ pipeline: AttachmentPipeline, _ attachment: Attache.Attachment) async throws
        -> (forms: AttachmentForms, cleanup: () -> Void)
    {
        let prepared = try await pipeline.prepare(attachment)
        let transformed = try await pipeline.transform(try await pipeline.detect(prepared))
        let forms = pipeline.form(try pipeline.seal(transformed))
        return (forms, {
            transformed.remove()
            prepared.remove()
        })
    }

    /// The text fields of `form`'s multipart body, in order, and its file parts' dispositions.
    static func wire(_ form: UploadForm) async throws -> (fields: [String], files: [String]) {
        let body = try form.multipartBody()
        let parts = try await parseWithEmail(try readAll(body), boundary: body.boundary)
        var fields: [String] = []
        var files: [String] = []
        for part in parts {
            let disposition = part.headers["content-disposition"] ?? ""
            if disposition.contains("filename=") {
                files.append(disposition)
            } else {
                let name = disposition.split(separator: "\"")[1]
                fields.append("\(name)=\(String(decoding: part.bytes, as: UTF8.self))")
            }
        }
        return (fields, files)
    }

    @Test("one form: the body's fields, Upload-Metadata and the order system → attachment → metadata → seal")
    func oneFormForBodyAndMetadata() async throws {
        let pipeline = try Self.pipeline { $0.seal = SealConfiguration() }
        let bytes = Array("%PDF-1.4\n%%EOF\n".utf8)
        let (forms, cleanup) = try await Self.forms(
            pipeline, Attachment(bytes: bytes, filename: "a.pdf", fields: [UploadField(name: "chatId", value: "7")]))
        defer { cleanup() }
        let wire = try await Self.wire(forms.attachment)
        let metadata = forms.attachment.uploadMetadata.map { "\($0.name)=\($0.value)" }
        #expect(wire.fields == metadata, "the multipart body and Upload-Metadata carry the same fields")
        #expect(Array(wire.fields.prefix(3)) == ["tenant=acme", "chatId=7", "mimeType=application/pdf"])
        #expect(Array(wire.fields.suffix(3)) == ["scheme=stream-gcm", "encoding=binary", "plaintextSize=\(bytes.count)"])
        #expect(wire.files.count == 1)
        #expect(wire.files.first?.contains(#"name="file"; filename="a.pdf""#) == true)
        #expect(forms.separateThumbnails.isEmpty)
    }

    @Test("separate thumbnails: the same form, the thumbnail's own metadata, named after the attachment")
    func separateThumbnailForms() async throws {
        let pipeline = try Self.pipeline {
            $0.thumbnails = .separate
            $0.seal = SealConfiguration()
        }
        let (forms, cleanup) = try await Self.forms(pipeline, Attachment(path: Self.photo))
        defer { cleanup() }
        let main = try await Self.wire(forms.attachment)
        #expect(main.files.count == 1, "no thumbnail part in the attachment's own request")
        #expect(forms.separateThumbnails.map(\.thumbnail.thumbnail.name) == ["thumbnail", "thumbnailTiny"])
        for (sealed, form) in forms.separateThumbnails {
            let wire = try await Self.wire(form)
            let thumbnail = sealed.thumbnail
            #expect(wire.fields == [
                "tenant=acme", "mimeType=image/jpeg", "width=\(thumbnail.width)", "height=\(thumbnail.height)",
                "scheme=stream-gcm", "encoding=binary", "plaintextSize=\(thumbnail.bytes.count)",
            ])
            #expect(wire.files.count == 1)
            #expect(wire.files.first?.contains(#"name="file"; filename="photo.\#(thumbnail.filename)""#) == true)
        }
    }

    @Test("inline thumbnails follow the file part; with no seal and no metadata, only the configured fields go")
    func inlineThumbnailsAndPlainForm() async throws {
        let pipeline = try Self.pipeline {
            $0.seal = .none
            $0.sendMetadataFields = false
        }
        let (forms, cleanup) = try await Self.forms(pipeline, Attachment(path: Self.photo))
        defer { cleanup() }
        let wire = try await Self.wire(forms.attachment)
        #expect(wire.fields == ["tenant=acme"])
        #expect(wire.files.count == 3)
        #expect(wire.files.dropFirst().map { $0.contains(#"name="thumbnail"#) } == [true, true])
        #expect(forms.separateThumbnails.isEmpty)
    }

    @Test("the configuration is checked when the pipeline is made, not when it sends")
    func configurationCheckedOnce() throws {
        let error = #expect(throws: AttacheError.self) {
            try Self.pipeline {
                $0.answers = .s3Post
                $0.thumbnails = .inline
            }
        }
        #expect(error?.stage == .configuration)
        #expect(error?.code == .invalidArgument)
    }
}
