import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

@Suite struct ImageRecompressorTests {
    let red: [UInt8] = [230, 20, 20]
    let blue: [UInt8] = [20, 20, 230]
    let grey: [UInt8] = [128, 128, 128]

    /// For each EXIF orientation, where the displayed top-left and top-right corners are stored (per the
    /// EXIF specification's row/column description), and whether width and height are swapped in storage.
    static let orientationLayouts: [(orientation: Int, topLeft: Corner, topRight: Corner)] = [
        (1, .topLeft, .topRight), (2, .topRight, .topLeft), (3, .bottomRight, .bottomLeft),
        (4, .bottomLeft, .bottomRight), (5, .topLeft, .bottomLeft), (6, .bottomLeft, .topLeft),
        (7, .bottomRight, .topRight), (8, .topRight, .bottomRight),
    ]

    enum Corner { case topLeft, topRight, bottomLeft, bottomRight }

    @Test(arguments: orientationLayouts)
    func orientationIsAppliedAndTheTagDropped(layout: (orientation: Int, topLeft: Corner, topRight: Corner)) throws {
        // Displayed 96×64; stored turned when the orientation swaps axes.
        let swaps = layout.orientation >= 5
        let (w, h) = swaps ? (64, 96) : (96, 64)
        var stored = TestImages.solid(width: w, height: h, grey)
        func origin(_ corner: Corner) -> (Int, Int) {
            switch corner {
            case .topLeft: (0, 0)
            case .topRight: (w - 16, 0)
            case .bottomLeft: (0, h - 16)
            case .bottomRight: (w - 16, h - 16)
            }
        }
        let tl = origin(layout.topLeft), tr = origin(layout.topRight)
        TestImages.paint(&stored, x: tl.0, y: tl.1, size: 16, red)
        TestImages.paint(&stored, x: tr.0, y: tr.1, size: 16, blue)
        let jpeg = TestImages.withSegments(try TestImages.jpeg(stored, quality: 95),
                                           [JPEGMarkers.exifSegment(orientation: layout.orientation)])

        let outcome = try ImageRecompressor().recompress(jpeg, thumbnailSides: [])
        let bytes = try #require(outcome.bytes)
        let out = try TestImages.decodeJPEG(bytes)
        #expect(out.width == 96 && out.height == 64)
        #expect(outcome.result.outputWidth == 96 && outcome.result.inputHeight == 64)
        #expect(TestImages.isClose(TestImages.average(out, x: 4, y: 4, size: 8), red.map(Double.init), within: 25))
        #expect(TestImages.isClose(TestImages.average(out, x: 84, y: 4, size: 8), blue.map(Double.init), within: 25))
        #expect(TestImages.isClose(TestImages.average(out, x: 44, y: 28, size: 8), grey.map(Double.init), within: 10))
        #expect(!TestImages.contains(bytes, "Exif"))
        #expect(JPEGMarkers(bytes)?.orientation == 1)
    }

    @Test func largePhotoIsScaledToMaxSideWithGoodQuality() throws {
        let source = TestImages.photo(width: 1024, height: 768)
        let jpeg = try TestImages.jpeg(source, quality: 95)
        var options = ImageRecompressor.Options()
        options.maxSide = 256
        options.quality = 90
        let outcome = try ImageRecompressor(options: options).recompress(jpeg, thumbnailSides: [])
        let out = try TestImages.decodeJPEG(try #require(outcome.bytes))
        #expect(out.width == 256 && out.height == 192)
        #expect(outcome.result.passedThrough == false)
        #expect(outcome.result.mimeType == "image/jpeg")

        // Reference: the exact 4×4 area average of the source pixels.
        var squaredError = 0.0
        for y in 0..<192 {
            for x in 0..<256 {
                let reference = TestImages.average(source, x: x * 4, y: y * 4, size: 4)
                for k in 0..<3 {
                    let d = Double(out.pixels[(y * 256 + x) * 3 + k]) - reference[k]
                    squaredError += d * d
                }
            }
        }
        let psnr = 10 * log10(255 * 255 / (squaredError / Double(256 * 192 * 3)))
        #expect(psnr >= 32, "PSNR \(psnr) dB against an area-average reference")
    }

    @Test func everyMetadataSegmentIsStripped() throws {
        let gps = JPEGMarkers.exifSegment(orientation: 1) + Array("GPSLatitude 48.8584".utf8)
        let segments = [
            TestImages.segment(0xE1, Array("Exif\0\0".utf8) + Array(gps.dropFirst(10))),
            TestImages.segment(0xE1, Array("http://ns.adobe.com/xap/1.0/\0<x:xmpmeta>secret</x:xmpmeta>".utf8)),
            TestImages.segment(0xED, Array("Photoshop 3.0\08BIM IPTC caption".utf8)),
            TestImages.segment(0xFE, Array("a private comment".utf8)),
        ]
        // Large (recompressed) and small (passed through) inputs both lose every segment.
        for (size, quality) in [(1600, 90), (200, 50)] {
            let jpeg = TestImages.withSegments(try TestImages.jpeg(TestImages.photo(width: size, height: size * 3 / 4),
                                                                   quality: quality), segments)
                + Array("trailing depth map".utf8)
            let outcome = try ImageRecompressor().recompress(jpeg, thumbnailSides: [])
            let bytes = try #require(outcome.bytes)
            for needle in ["Exif", "GPSLatitude", "xmpmeta", "Photoshop", "IPTC", "private comment", "depth map"] {
                #expect(!TestImages.contains(bytes, needle), "\(needle) survived (input \(size) px)")
            }
            #expect(outcome.result.passedThrough == (size == 200))
            _ = try TestImages.decodeJPEG(bytes)
        }
    }

    @Test func smallCleanJPEGPassesThroughByteForByte() throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let jpeg = try TestImages.jpeg(TestImages.photo(width: 400, height: 300), quality: 60)
        #expect(jpeg.count <= 400 * 300 / 2)
        let input = try TestImages.write(jpeg, "small.jpg", in: dir)
        let result = try ImageRecompressor().recompress(fileAt: input, to: dir + "/out.jpg")
        #expect(result.passedThrough)
        #expect(try TestImages.read(dir + "/out.jpg") == jpeg)
        #expect(result.outputWidth == 400 && result.outputByteCount == Int64(jpeg.count))
    }

    @Test func aHeavyJPEGThatIsNotDownscaledNeverGrows() throws {
        // Quality 100 makes the file exceed the w·h/2 pass-through rule; re-encoding at 82 must not
        // produce anything larger than the original.
        let jpeg = try TestImages.jpeg(TestImages.photo(width: 300, height: 200), quality: 100)
        let outcome = try ImageRecompressor().recompress(jpeg, thumbnailSides: [])
        #expect(outcome.result.outputByteCount <= Int64(jpeg.count))
    }

    @Test func iccProfileOfAJPEGIsKept() throws {
        let icc = TestImages.segment(0xE2, Array("ICC_PROFILE\0\u{1}\u{1}fake-profile-bytes".utf8))
        let jpeg = TestImages.withSegments(try TestImages.jpeg(TestImages.photo(width: 1600, height: 1200)), [icc])
        let bytes = try #require(try ImageRecompressor().recompress(jpeg, thumbnailSides: []).bytes)
        #expect(TestImages.contains(bytes, "ICC_PROFILE\0\u{1}\u{1}fake-profile-bytes"))
        #expect(try TestImages.decodeJPEG(bytes).width == 1280)
    }

    @Test func transparentPixelsBecomeWhite() throws {
        // Left: fully transparent (with a colour that must not show); middle: opaque red; right: black at
        // half opacity, which on a white page (sRGB compositing, as browsers draw it) is mid-grey.
        var rgba = TestImages.solid(width: 96, height: 32, [0, 255, 0, 0])
        TestImages.paint(&rgba, x: 32, y: 0, size: 32, [230, 20, 20, 255])
        TestImages.paint(&rgba, x: 64, y: 0, size: 32, [0, 0, 0, 128])
        let png = TestImages.png(width: 96, height: 32, colourType: 6, samples: rgba.pixels)
        let outcome = try ImageRecompressor().recompress(png, thumbnailSides: [])
        let out = try TestImages.decodeJPEG(try #require(outcome.bytes))
        #expect(outcome.result.mimeType == "image/jpeg")
        #expect(TestImages.isClose(TestImages.average(out, x: 4, y: 8, size: 16), [255, 255, 255], within: 4))
        #expect(TestImages.isClose(TestImages.average(out, x: 40, y: 8, size: 16), [230, 20, 20], within: 20))
        #expect(TestImages.isClose(TestImages.average(out, x: 72, y: 8, size: 16), [127, 127, 127], within: 4))
    }

    @Test func sixteenBitPaletteAndGreyPNGsDecodeToTheRightValues() throws {
        // 16-bit RGB with the sample 0x8080 (128.5/255 → 128) and 0xFFFF.
        var samples16: [UInt8] = []
        for x in 0..<(32 * 16) { samples16 += x % 32 < 16 ? [0x80, 0x80, 0x80, 0x80, 0x80, 0x80] : [0xFF, 0xFF, 0, 0, 0, 0] }
        let png16 = TestImages.png(width: 32, height: 16, bitDepth: 16, colourType: 2, samples: samples16)
        let out16 = try TestImages.decodeJPEG(try #require(try ImageRecompressor().recompress(png16, thumbnailSides: []).bytes))
        #expect(TestImages.isClose(TestImages.average(out16, x: 2, y: 4, size: 8), [128, 128, 128], within: 3))
        #expect(TestImages.isClose(TestImages.average(out16, x: 22, y: 4, size: 8), [255, 0, 0], within: 20))

        // Palette: index 0 blue, 1 yellow; grey: a constant 200.
        let palettePNG = TestImages.png(width: 16, height: 16, colourType: 3,
                                        samples: (0..<256).map { $0 % 16 < 8 ? 0 : 1 }, palette: [0, 0, 255, 255, 255, 0])
        let outPalette = try TestImages.decodeJPEG(try #require(try ImageRecompressor().recompress(palettePNG, thumbnailSides: []).bytes))
        #expect(TestImages.isClose(TestImages.average(outPalette, x: 0, y: 4, size: 4), [0, 0, 255], within: 30))
        #expect(TestImages.isClose(TestImages.average(outPalette, x: 12, y: 4, size: 4), [255, 255, 0], within: 30))

        let greyPNG = TestImages.png(width: 16, height: 16, colourType: 0, samples: [UInt8](repeating: 200, count: 256))
        let outGrey = try TestImages.decodeJPEG(try #require(try ImageRecompressor().recompress(greyPNG, thumbnailSides: []).bytes))
        #expect(TestImages.isClose(TestImages.average(outGrey, x: 4, y: 4, size: 8), [200, 200, 200], within: 2))
    }

    @Test func cmykJPEGColoursAreConverted() throws {
        // Adobe-style (inverted) CMYK: 255 = no ink. Patches: red (M+Y), green (C+Y), blue (C+M), white.
        let inks: [[UInt8]] = [[0, 255, 255, 0], [255, 0, 255, 0], [255, 255, 0, 0], [0, 0, 0, 0]]
        var cmyk = Raster(width: 64, height: 16, channels: 4)
        for y in 0..<16 {
            for x in 0..<64 {
                let ink = inks[x / 16]
                for k in 0..<4 { cmyk.pixels[(y * 64 + x) * 4 + k] = 255 - ink[k] }
            }
        }
        let jpeg = try TurboJPEGEncoder().encode(packed: cmyk, quality: 95, progressive: false, format: .cmyk)
        #expect(try TurboJPEGDecoder().header(jpeg).isCMYK)
        let out = try TestImages.decodeJPEG(try #require(try ImageRecompressor().recompress(jpeg, thumbnailSides: []).bytes))
        let expected: [[Double]] = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255]]
        for (i, colour) in expected.enumerated() {
            let seen = TestImages.average(out, x: i * 16 + 4, y: 4, size: 8)
            #expect(TestImages.isClose(seen, colour, within: 30), "patch \(i): \(seen)")
        }
    }

    @Test func decompressionBombIsRefusedFromTheHeader() throws {
        let bomb = TestImages.pngBomb(width: 50_000, height: 50_000)
        #expect(bomb.count < 2000)
        let error = try #require(throws: AttacheError.self) {
            try ImageRecompressor().recompress(bomb, thumbnailSides: [])
        }
        #expect(error.code == .limitExceeded)
        #expect(error.stage == .transform)
        #expect(error.message.contains("50000×50000"))
    }

    @Test func progressiveScanCapIsEnforced() throws {
        let jpeg = try TestImages.jpeg(TestImages.photo(width: 200, height: 150), progressive: true)
        #expect((JPEGMarkers(jpeg)?.scanCount ?? 0) > 3)
        var options = ImageRecompressor.Options()
        options.maxProgressiveScans = 3
        let error = try #require(throws: AttacheError.self) {
            try ImageRecompressor(options: options).recompress(jpeg, thumbnailSides: [])
        }
        #expect(error.code == .limitExceeded)
        // Within the default cap a progressive JPEG decodes normally.
        options.maxSide = 100
        options.maxProgressiveScans = ImageRecompressor.Options().maxProgressiveScans
        let out = try TestImages.decodeJPEG(try #require(try ImageRecompressor(options: options).recompress(jpeg, thumbnailSides: []).bytes))
        #expect(out.width == 100 && out.height == 75)
    }

    @Test func corruptAndForeignInputsGiveTypedErrors() throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let jpeg = try TestImages.jpeg(TestImages.photo(width: 64, height: 64))
        let cases: [(String, [UInt8], AttacheError.Code)] = [
            ("garbage.jpg", [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 0x41, count: 200), .corruptInput),
            ("cut.jpg", Array(jpeg.prefix(100)), .corruptInput),
            ("cut.png", Array(TestImages.png(width: 8, height: 8, colourType: 2, samples: [UInt8](repeating: 9, count: 192)).prefix(40)), .corruptInput),
            ("text.jpg", Array("hello, not an image".utf8), .unsupportedInput),
            ("empty.png", [], .unsupportedInput),
        ]
        for (name, bytes, code) in cases {
            let path = try TestImages.write(bytes, name, in: dir)
            let error = try #require(throws: AttacheError.self) {
                try ImageRecompressor().recompress(fileAt: path, to: dir + "/out.jpg")
            }
            #expect(error.code == code, "\(name): \(error)")
            #expect(error.file == path)
            #expect(error.stage == .transform)
        }
        let missing = try #require(throws: AttacheError.self) {
            try ImageRecompressor().recompress(fileAt: dir + "/nope.jpg", to: dir + "/out.jpg")
        }
        #expect(missing.code == .fileNotFound)
    }

    @Test func aJPEGCutOffInItsPixelDataIsRefusedNotFilledWithGrey() throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let jpeg = try TestImages.jpeg(TestImages.photo(width: 256, height: 192))
        var options = ImageRecompressor.Options()
        options.maxSide = 64
        // Whole, it decodes; cut at two thirds (headers complete, scan data short), libjpeg only warns.
        #expect(try ImageRecompressor(options: options).recompress(jpeg, thumbnailSides: []).bytes != nil)
        let path = try TestImages.write(Array(jpeg.prefix(jpeg.count * 2 / 3)), "cut-scan.jpg", in: dir)
        let error = try #require(throws: AttacheError.self) {
            try ImageRecompressor(options: options).recompress(fileAt: path, to: dir + "/out.jpg")
        }
        #expect(error.code == .corruptInput)
        #expect(error.message.contains("truncated"))
        #expect(error.file == path)
    }

    @Test func webpAndBMPInputsBecomeJPEG() throws {
        let photo = TestImages.photo(width: 200, height: 100)
        let webp = try WebPEncoder().encode(photo, quality: 90)
        let fromWebP = try TestImages.decodeJPEG(try #require(try ImageRecompressor().recompress(webp, thumbnailSides: []).bytes))
        #expect(fromWebP.width == 200 && fromWebP.height == 100)

        // A bottom-up 24-bit BMP: red top row block, blue bottom.
        let (w, h) = (8, 8)
        let rowBytes = (w * 3 + 3) & ~3
        var bmp: [UInt8] = Array("BM".utf8) + le32(54 + rowBytes * h) + le32(0) + le32(54)
        bmp += le32(40) + le32(w) + le32(h) + [1, 0, 24, 0] + le32(0) + le32(rowBytes * h) + le32(2835) + le32(2835) + le32(0) + le32(0)
        for y in (0..<h).reversed() {  // stored bottom row first
            for _ in 0..<w { bmp += y < 4 ? [20, 20, 230] : [230, 20, 20] }  // BGR
            bmp += [UInt8](repeating: 0, count: rowBytes - w * 3)
        }
        let fromBMP = try TestImages.decodeJPEG(try #require(try ImageRecompressor().recompress(bmp, thumbnailSides: []).bytes))
        #expect(TestImages.isClose(TestImages.average(fromBMP, x: 2, y: 0, size: 2), [230, 20, 20], within: 40))
        #expect(TestImages.isClose(TestImages.average(fromBMP, x: 2, y: 6, size: 2), [20, 20, 230], within: 40))
    }

    private func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }
}
