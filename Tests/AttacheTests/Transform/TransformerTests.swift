import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

@Suite struct TransformerTests {
    @Test func imageIsRecompressedWithThumbnails() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let jpeg = TestImages.withSegments(try TestImages.jpeg(TestImages.photo(width: 1600, height: 1200)),
                                           [JPEGMarkers.exifSegment(orientation: 6)])
        let input = try TestImages.write(jpeg, "IMG_0001.JPG", in: dir)

        let output = try await Transformer().transform(fileAt: input, mimeType: "image/jpeg", kind: .image,
                                                       workDirectory: dir)
        #expect(output.didTransform)
        #expect(output.path != input && output.path.hasPrefix(dir))
        #expect(output.mimeType == "image/jpeg" && output.filenameExtension == nil)
        #expect(output.width == 960 && output.height == 1280)
        let sent = try TestImages.read(output.path)
        #expect(output.outputByteCount == Int64(sent.count))
        #expect(output.originalByteCount == Int64(jpeg.count))
        let decoded = try TestImages.decodeJPEG(sent)
        #expect(decoded.width == 960 && decoded.height == 1280)

        #expect(output.thumbnails.map(\.name) == ["thumbnail", "thumbnailTiny"])
        for thumbnail in output.thumbnails {
            let image = try TestImages.decodeJPEG(thumbnail.bytes)
            #expect(image.width == thumbnail.width && image.height == thumbnail.height)
            #expect(max(image.width, image.height) == (thumbnail.name == "thumbnail" ? 320 : 40))
            #expect(image.height > image.width, "the preview is upright too")
            #expect(thumbnail.mimeType == "image/jpeg")
        }
    }

    @Test func smallCleanJPEGIsSentAsItIsWithThumbnails() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let jpeg = try TestImages.jpeg(TestImages.photo(width: 400, height: 300), quality: 60)
        let input = try TestImages.write(jpeg, "small.jpg", in: dir)
        let output = try await Transformer().transform(fileAt: input, mimeType: "image/jpeg", kind: .image, workDirectory: dir)
        #expect(output.path == input && !output.didTransform)
        #expect(output.width == 400 && output.height == 300)
        #expect(output.thumbnails.map { [$0.width, $0.height] } == [[320, 240], [40, 30]])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["small.jpg"])
    }

    @Test func pngImageChangesFormat() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let png = TestImages.png(width: 40, height: 30, colourType: 2, samples: TestImages.photo(width: 40, height: 30).pixels)
        let input = try TestImages.write(png, "shot.png", in: dir)
        let output = try await Transformer().transform(fileAt: input, mimeType: "image/png", kind: .image, workDirectory: dir)
        #expect(output.mimeType == "image/jpeg" && output.filenameExtension == "jpg")
        #expect(output.path.hasSuffix(".jpg"))
        #expect(try TestImages.decodeJPEG(TestImages.read(output.path)).width == 40)
    }

    @Test func anOpaqueScreenshotSmallerAsPNGStaysAPNGWithoutItsMetadata() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The committed sample screenshot (1280×800, flat colours) with a text chunk and an eXIf chunk
        // after its header, the kind of metadata that must not leave.
        let sample = try TestImages.read(
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples/screenshot.png").path)
        let ihdrEnd = 8 + 12 + 13
        let tagged = Array(sample[..<ihdrEnd]) + TestImages.chunk("tEXt", Array("Location\u{0}52.5200 N 13.4050 E".utf8))
            + TestImages.chunk("eXIf", Array("MM\u{0}*secret-gps".utf8)) + Array(sample[ihdrEnd...])
        let input = try TestImages.write(tagged, "shot.png", in: dir)

        let output = try await Transformer().transform(fileAt: input, mimeType: "image/png", kind: .image, workDirectory: dir)
        #expect(output.mimeType == "image/png" && output.filenameExtension == nil)
        #expect(output.didTransform && output.path != input && output.path.hasSuffix(".png"))
        let sent = try TestImages.read(output.path)
        #expect(sent == sample, "the same chunks as the clean original, byte for byte")
        #expect(!TestImages.contains(sent, "52.5200") && !TestImages.contains(sent, "secret-gps"))
        #expect(output.width == 1280 && output.height == 800)
        #expect(output.thumbnails.map(\.name) == ["thumbnail", "thumbnailTiny"])

        // Without the metadata there is nothing to change: the file goes as it is.
        let clean = try TestImages.write(sample, "clean.png", in: dir)
        let same = try await Transformer().transform(fileAt: clean, mimeType: "image/png", kind: .image, workDirectory: dir)
        #expect(same.path == clean && !same.didTransform && same.mimeType == "image/png")
    }

    @Test func pngChunkSurgeryRefusesWhatShouldNotGoAsItIs() {
        let opaque = TestImages.png(width: 4, height: 2, colourType: 2, samples: [UInt8](repeating: 9, count: 24))
        #expect(PNGChunks.opaqueStripped(opaque) == opaque)
        let alpha = TestImages.png(width: 4, height: 2, colourType: 6, samples: [UInt8](repeating: 9, count: 32))
        #expect(PNGChunks.opaqueStripped(alpha) == nil)
        let ihdrEnd = 8 + 12 + 13
        let transparent = Array(opaque[..<ihdrEnd]) + TestImages.chunk("tRNS", [0, 9, 0, 9, 0, 9]) + Array(opaque[ihdrEnd...])
        #expect(PNGChunks.opaqueStripped(transparent) == nil)
        let animated = Array(opaque[..<ihdrEnd]) + TestImages.chunk("acTL", [0, 0, 0, 2, 0, 0, 0, 0]) + Array(opaque[ihdrEnd...])
        #expect(PNGChunks.opaqueStripped(animated) == nil)
        #expect(PNGChunks.opaqueStripped(Array(opaque.dropLast(5))) == nil, "cut off before IEND")
        var lying = opaque
        lying[ihdrEnd + 3] = 0xFF  // the IDAT length now runs past the end
        #expect(PNGChunks.opaqueStripped(lying) == nil)
    }

    @Test(arguments: [MessageKind.voice, .video, .file])
    func otherKindsPassThroughUnchanged(kind: MessageKind) async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let jpeg = try TestImages.jpeg(TestImages.photo(width: 1600, height: 1200))
        let input = try TestImages.write(jpeg, "x.bin", in: dir)
        let output = try await Transformer().transform(fileAt: input, mimeType: "image/jpeg", kind: kind, workDirectory: dir)
        #expect(output.path == input && !output.didTransform && output.thumbnails.isEmpty)
        #expect(output.outputByteCount == Int64(jpeg.count))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["x.bin"])
    }

    @Test func corruptImageIsATypedErrorNamingTheFileWhenTheyFail() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let input = try TestImages.write([0xFF, 0xD8, 0xFF, 0xDB, 0, 3, 1], "broken.jpg", in: dir)
        var configuration = Transformer.Configuration()
        configuration.onTransformError = .fail
        await #expect {
            try await Transformer(configuration: configuration)
                .transform(fileAt: input, mimeType: "image/jpeg", kind: .image, workDirectory: dir)
        } throws: { error in
            let error = error as? AttacheError
            return error?.code == .corruptInput && error?.file == input && error?.stage == .transform
        }
    }

    @Test(arguments: [MessageKind.image, .sticker])
    func anImageThatCannotBeRecompressedGoesAsItIsByDefault(kind: MessageKind) async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let jpeg = try TestImages.jpeg(TestImages.photo(width: 1600, height: 1200))
        let cut = Array(jpeg.prefix(jpeg.count / 2))
        let input = try TestImages.write(cut, "cut.jpg", in: dir)
        let output = try await Transformer().transform(fileAt: input, mimeType: "image/jpeg", kind: kind, workDirectory: dir)
        #expect(output.path == input && !output.didTransform && output.thumbnails.isEmpty)
        #expect(output.mimeType == "image/jpeg" && output.filenameExtension == nil)
        #expect(output.outputByteCount == Int64(cut.count))
        let reason = try #require(output.skipReason)
        #expect(reason.hasPrefix("corrupt-input: the JPEG image is truncated"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["cut.jpg"])
    }

    @Test func anImageOverTheWholeImageLimitGoesAsItIs() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let png = StreamedDecodeTests.pngOfKind("interlaced-rgb8", width: 300, height: 200)
        let input = try TestImages.write(png, "adam7.png", in: dir)
        var configuration = Transformer.Configuration()
        configuration.image.wholeImageByteLimit = 100_000
        let output = try await Transformer(configuration: configuration)
            .transform(fileAt: input, mimeType: "image/png", kind: .image, workDirectory: dir)
        #expect(output.path == input && !output.didTransform)
        #expect(output.skipReason?.hasPrefix("limit-exceeded") == true)
        configuration.onTransformError = .fail
        await #expect(throws: AttacheError.self) {
            try await Transformer(configuration: configuration)
                .transform(fileAt: input, mimeType: "image/png", kind: .image, workDirectory: dir)
        }
    }

    @Test(arguments: ["png", "jpeg", "webp"])
    func stickerIsWebPWithOneSideOf512(source: String) async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // 300×200 with a transparent left quarter (PNG and WebP keep it; JPEG has no alpha).
        var rgba = TestImages.solid(width: 300, height: 200, [30, 140, 220, 255])
        for y in 0..<200 { for x in 0..<75 { let pixel: Int = y * 300 + x; rgba.pixels[pixel * 4 + 3] = 0 } }
        let bytes: [UInt8]
        let mime: String
        switch source {
        case "png":
            bytes = TestImages.png(width: 300, height: 200, colourType: 6, samples: rgba.pixels); mime = "image/png"
        case "webp":
            bytes = try WebPEncoder().encode(rgba, quality: 90); mime = "image/webp"
        default:
            bytes = try TestImages.jpeg(rgba.compositedOnWhite()); mime = "image/jpeg"
        }
        let input = try TestImages.write(bytes, "sticker.\(source)", in: dir)
        let output = try await Transformer().transform(fileAt: input, mimeType: mime, kind: .sticker, workDirectory: dir)
        #expect(output.mimeType == "image/webp")
        #expect(output.width == 512 && output.height == 341)
        let webp = try TestImages.read(output.path)
        #expect(webp.count <= 512 * 1024)
        let header = try WebPHeader(webp)
        #expect(header.width == 512 && header.height == 341)
        let decoded = try WebPDecoder.decodeRGBA(webp, header: header)
        // Typed indices: integer literals mixed into a [UInt8] subscript take the type checker seconds.
        let left: Int = (170 * 512 + 20) * 4 + 3, right: Int = (170 * 512 + 400) * 4 + 3
        let alphaLeft = decoded.pixels[left]
        let alphaRight = decoded.pixels[right]
        #expect(alphaRight == 255)
        #expect(alphaLeft == (source == "jpeg" ? 255 : 0))
        #expect(output.thumbnails.count == 2)
    }

    @Test func stickerQualityStepsDownToFitTheByteLimit() throws {
        var options = ImageRecompressor.Options()
        options.stickerByteLimit = 20_000
        let noisy = TestImages.png(width: 512, height: 512, colourType: 2,
                                   samples: (0..<(512 * 512 * 3)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        let outcome = try ImageRecompressor(options: options).makeSticker(noisy, thumbnailSides: [])
        #expect(try #require(outcome.bytes).count <= 20_000)
        options.stickerByteLimit = 100
        #expect(throws: AttacheError.self) { try ImageRecompressor(options: options).makeSticker(noisy, thumbnailSides: []) }
    }
}
