import Attache
import Foundation
import AttacheTestSupport
import Testing

/// The whole pipeline on the committed sample files: detect, transform, seal, upload to the live
/// reference server, then download what was stored and open it with the key from the receipt.
@Suite("Full pipeline on the samples")
struct PipelineIntegrationTests {
    static let samples: String = {
        // Tests/IntegrationTests/ThisFile.swift → repository root → Samples
        let here = URL(fileURLWithPath: #filePath)
        return here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Samples").path
    }()

    static func sample(_ name: String) -> String { samples + "/" + name }

    static let expectations: [(file: String, kind: MessageKind, mime: String)] = [
        ("photo.jpg", .image, "image/jpeg"),
        // Flat colours, 1280 px already: smaller as the PNG it is (minus metadata) than as any JPEG.
        ("screenshot.png", .image, "image/png"),
        ("alpha.png", .image, "image/jpeg"),
        ("sticker.webp", .sticker, "image/webp"),
        ("voice.ogg", .voice, "audio/ogg"),
        // Voice notes in any other format go as Ogg/Opus; song.mp3 (stereo, with artist and album tags) is
        // music, a file sent as it is (docs/DETECTION.md).
        ("voice.m4a", .voice, "audio/ogg"),
        ("song.mp3", .file, "audio/mpeg"),
        // Already chat-ready: sent as it is.
        ("clip.mp4", .video, "video/mp4"),
        // Rotated, index last: re-encoded upright; chat-ready with its index last: remuxed.
        ("phone.mp4", .video, "video/mp4"),
        ("late-index.mp4", .video, "video/mp4"),
        // An animated GIF goes as a silent MP4; a HEIC photo as a JPEG.
        ("animation.gif", .image, "video/mp4"),
        ("photo.heic", .image, "image/jpeg"),
        ("document.pdf", .file, "application/pdf"),
        ("report.docx", .file, "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
        ("notes.txt", .file, "text/plain"),
    ]

    @Test("each sample is classified, sent sealed, and decrypts back", arguments: expectations)
    func sampleRoundTrip(file: String, kind: MessageKind, mime: String) async throws {
        try await LiveServer.with { server in
            let pipeline = try server.pipeline { $0.seal = SealConfiguration() }  // stream-gcm, fresh key
            let receipt = try await pipeline.send(Attachment(path: Self.sample(file)))
            #expect(receipt.kind == kind)
            #expect(receipt.mimeType.hasPrefix(mime))
            #expect(receipt.seal.scheme == .streamGCM)
            let keyText = try #require(receipt.seal.key)
            let fileId = try #require(receipt.fileId)

            // What the server stored is ciphertext: not the plaintext, and longer than it.
            let (stored, _) = try await server.get("/files/\(fileId)")
            #expect(Int64(stored.count) == receipt.sentByteCount)
            #expect(receipt.sentByteCount > receipt.seal.plaintextByteCount)
            #expect(receipt.server["fields"]?["scheme"]?.stringValue == "stream-gcm")
            #expect(receipt.server["fields"]?["kind"]?.stringValue == kind.rawValue)

            // Opened with the receipt's key it gives back the bytes that Transform produced.
            let key = keyText
            let plaintext = try Self.unseal(Array(stored), key: key)
            #expect(Int64(plaintext.count) == receipt.seal.plaintextByteCount)
            if !receipt.transform.recompressed {
                let original = try Data(contentsOf: URL(fileURLWithPath: Self.sample(file)))
                #expect(plaintext.count == original.count)
                #expect(plaintext == Array(original), "decrypted bytes differ from the file")
            } else {
                // A recompressed image is a JPEG (a sticker a WebP, a voice note Ogg, a video or animation
                // MP4) of the size Transform reported.
                switch receipt.mimeType {
                case "image/webp": #expect(Array(plaintext.prefix(4)) == Array("RIFF".utf8))
                case "audio/ogg": #expect(Array(plaintext.prefix(4)) == Array("OggS".utf8))
                case "video/mp4": #expect(Array(plaintext[4..<8]) == Array("ftyp".utf8))
                default: #expect(Array(plaintext.prefix(3)) == [0xFF, 0xD8, 0xFF])
                }
                #expect(Int64(plaintext.count) == receipt.transform.byteCount)
            }
        }
    }

    @Test("a photo is recompressed, turned upright, stripped, and sent with two thumbnails")
    func photoIsTransformed() async throws {
        try await LiveServer.with { server in
            let receipt = try await server.pipeline().send(Attachment(path: Self.sample("photo.jpg")))
            #expect(receipt.transform.recompressed)
            // The sample is stored sideways (EXIF orientation 6): upright it is taller than wide.
            let width = try #require(receipt.transform.width)
            let height = try #require(receipt.transform.height)
            #expect(height > width)
            #expect(max(width, height) <= 1280)
            #expect(receipt.transform.thumbnails.count == 2)
            #expect(receipt.server["parts"]?.arrayValue?.count == 3)
            #expect(receipt.server["fields"]?["width"]?.stringValue == String(width))
            let fileId = try #require(receipt.fileId)
            let (stored, _) = try await server.get("/files/\(fileId)")
            // No EXIF (APP1 "Exif") and so no GPS in what was stored.
            #expect(stored.range(of: Data("Exif".utf8)) == nil)
            #expect(stored.count < (try Data(contentsOf: URL(fileURLWithPath: Self.sample("photo.jpg")))).count)
        }
    }

    @Test("the HEIC photo goes upright as a JPEG without its EXIF; the phone video upright as MP4 with its fields")
    func heicAndPhoneVideo() async throws {
        try await LiveServer.with { server in
            let photo = try await server.pipeline().send(Attachment(path: Self.sample("photo.heic")))
            #expect(photo.kind == .image && photo.mimeType == "image/jpeg" && photo.filename == "photo.jpg")
            #expect(photo.transform.width == 960 && photo.transform.height == 1280, "irot applied: upright")
            let (stored, _) = try await server.get("/files/\(try #require(photo.fileId))")
            #expect(stored.range(of: Data("Exif".utf8)) == nil, "no EXIF, so no GPS")

            let video = try await server.pipeline().send(Attachment(path: Self.sample("phone.mp4")))
            #expect(video.kind == .video && video.transform.media?.plan == .encode)
            #expect(video.server["fields"]?["width"]?.stringValue == "360")
            #expect(video.server["fields"]?["height"]?.stringValue == "640")
            #expect(video.server["fields"]?["supportsStreaming"]?.stringValue == "true")
            #expect(video.server["fields"]?["duration"]?.stringValue == "2.00")
            #expect(video.transform.thumbnails.count == 2)

            let remuxed = try await server.pipeline().send(Attachment(path: Self.sample("late-index.mp4")))
            #expect(remuxed.transform.media?.plan == .remux)
            let kept = try await server.pipeline().send(Attachment(path: Self.sample("clip.mp4")))
            #expect(kept.transform.media?.plan == .keep && !kept.transform.recompressed)
        }
    }

    @Test("a WebP that already is a sticker goes as it is, with thumbnails")
    func conformingStickerPassesThrough() async throws {
        try await LiveServer.with { server in
            let receipt = try await server.pipeline().send(Attachment(path: Self.sample("sticker.webp")))
            #expect(receipt.kind == .sticker)
            #expect(!receipt.transform.recompressed)
            #expect(receipt.transform.thumbnails.count == 2)
            let original = try Data(contentsOf: URL(fileURLWithPath: Self.sample("sticker.webp")))
            #expect(receipt.sentByteCount == Int64(original.count))
            #expect(receipt.server["sha256"]?.stringValue == (try await sha256Hex(Array(original))))
        }
    }

    @Test("a declared kind that the content contradicts is downgraded to file")
    func lyingKindIsNotTrusted() async throws {
        try await LiveServer.with { server in
            let receipt = try await server.pipeline().send(
                Attachment(path: Self.sample("document.pdf"), declaredKind: .voice))
            #expect(receipt.kind == .file)
            #expect(receipt.detection.declaredKind == .voice)
            #expect(receipt.detection.declaredKindAccepted == false)
        }
    }

    @Test("with --on-transform-error fail, a corrupt image is a transform error naming the file, and nothing is sent")
    func corruptImage() async throws {
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: Self.sample("photo.jpg"))))
        bytes = Array(bytes.prefix(600)) + [UInt8](repeating: 0x00, count: 4000)
        let file = try TemporaryFile(name: "broken.jpg", bytes: bytes)
        defer { file.remove() }
        try await LiveServer.with { server in
            let error = await #expect(throws: AttacheError.self) {
                try await server.pipeline { $0.transform.onTransformError = .fail }.send(Attachment(path: file.path))
            }
            #expect(error?.stage == .transform)
            #expect(error?.file == file.path)
            let stats = try await server.stats()
            #expect(stats.requests == 0)
        }
    }

    static func unseal(_ bytes: [UInt8], key: AttachmentKey) throws -> [UInt8] {
        let reader = try Unsealer(scheme: .streamGCM, key: key).unseal(DataSource(bytes))
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
            if n == 0 { break }
            out.append(contentsOf: buffer[..<n])
        }
        return out
    }
}
