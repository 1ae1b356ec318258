import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// PNG, WebP and BMP decoded row by row into the resampler: the pixels against the whole-picture decoders
/// (libpng's simplified API, full-size WebP, the whole BMP), and the memory the decode holds.
@Suite struct StreamedDecodeTests {
    // MARK: PNG files

    /// Adam7 passes: first column, first row, column step, row step.
    static let adam7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]

    /// A PNG of `pixels` (`bytesPerPixel` bytes each, or packed rows for bit depths below 8), optionally
    /// Adam7-interlaced (whole-byte pixels only), with `extra` chunks before the image data.
    static func png(width: Int, height: Int, bitDepth: UInt8 = 8, colourType: UInt8, rows: [[UInt8]],
                    bytesPerPixel: Int, palette: [UInt8]? = nil, extra: [[UInt8]] = [], interlaced: Bool = false) -> [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        out += TestImages.chunk("IHDR", TestImages.be32(width) + TestImages.be32(height)
            + [bitDepth, colourType, 0, 0, interlaced ? 1 : 0])
        for chunk in extra { out += chunk }
        if let palette { out += TestImages.chunk("PLTE", palette) }
        var raw: [UInt8] = []
        if interlaced {
            for (x0, y0, dx, dy) in adam7 where x0 < width && y0 < height {
                for y in stride(from: y0, to: height, by: dy) {
                    raw.append(0)
                    for x in stride(from: x0, to: width, by: dx) {
                        raw += rows[y][(x * bytesPerPixel)..<((x + 1) * bytesPerPixel)]
                    }
                }
            }
        } else {
            for row in rows { raw.append(0); raw += row }
        }
        out += TestImages.chunk("IDAT", TestImages.zlibStored(raw))
        out += TestImages.chunk("IEND", [])
        return out
    }

    /// Deterministic noise: every sample value occurs, so every conversion path is exercised.
    static func noise(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed &* 6364136223846793005 &+ 1442695040888963407
        return (0..<count).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
    }

    static func rows(width: Int, height: Int, rowBytes: Int, seed: UInt64) -> [[UInt8]] {
        (0..<height).map { noise(rowBytes, seed: seed &+ UInt64($0)) }
    }

    /// One PNG of each kind the row decoder converts differently.
    static let pngKinds: [String] = ["rgb8", "rgba8", "grey8", "greyAlpha8", "palette8+tRNS", "palette4", "rgb16", "rgba16",
                                     "grey16", "greyAlpha16", "rgba16+gAMA", "rgb8+gAMA-linear", "grey1",
                                     "rgb8+tRNS-key", "interlaced-rgb8", "interlaced-rgba16", "interlaced-grey8"]

    static func pngOfKind(_ kind: String, width: Int = 37, height: Int = 23) -> [UInt8] {
        let gammaLinear = TestImages.chunk("gAMA", TestImages.be32(100_000))
        let gamma18 = TestImages.chunk("gAMA", TestImages.be32(55_556))
        func make(_ depth: UInt8, _ type: UInt8, _ bpp: Int, rowBytes: Int? = nil, palette: [UInt8]? = nil,
                  extra: [[UInt8]] = [], interlaced: Bool = false) -> [UInt8] {
            png(width: width, height: height, bitDepth: depth, colourType: type,
                rows: rows(width: width, height: height, rowBytes: rowBytes ?? width * bpp, seed: seed),
                bytesPerPixel: bpp, palette: palette, extra: extra, interlaced: interlaced)
        }
        // An interlaced kind holds the same pixels as its non-interlaced twin.
        let seed = UInt64(twin(kind).utf8.reduce(0) { $0 &* 31 &+ Int($1) } & 0xFFFF)
        let palette = noise(256 * 3, seed: 99)
        switch kind {
        case "rgb8": return make(8, 2, 3)
        case "rgba8": return make(8, 6, 4)
        case "grey8": return make(8, 0, 1)
        case "greyAlpha8": return make(8, 4, 2)
        case "palette8+tRNS": return make(8, 3, 1, palette: palette, extra: [TestImages.chunk("tRNS", noise(200, seed: 7))])
        case "palette4": return make(4, 3, 1, rowBytes: (width + 1) / 2, palette: Array(palette.prefix(48)))
        case "rgb16": return make(16, 2, 6)
        case "grey16": return make(16, 0, 2)
        case "greyAlpha16": return make(16, 4, 4)
        case "rgba16+gAMA": return make(16, 6, 8, extra: [gamma18])
        case "rgb8+gAMA-linear": return make(8, 2, 3, extra: [gammaLinear])
        case "grey1": return make(1, 0, 1, rowBytes: (width + 7) / 8)
        case "rgb8+tRNS-key":
            // Colour key (1, 2, 3): painted into a few pixels so that the key matters.
            var rows = rows(width: width, height: height, rowBytes: width * 3, seed: 5)
            for y in stride(from: 0, to: height, by: 3) { rows[y].replaceSubrange(0..<3, with: [1, 2, 3]) }
            return png(width: width, height: height, colourType: 2, rows: rows, bytesPerPixel: 3,
                       extra: [TestImages.chunk("tRNS", [0, 1, 0, 2, 0, 3])])
        case "rgba16": return make(16, 6, 8)
        case "interlaced-rgb8": return make(8, 2, 3, interlaced: true)
        case "interlaced-rgba16": return make(16, 6, 8, interlaced: true)
        case "interlaced-grey8": return make(8, 0, 1, interlaced: true)
        default: fatalError("unknown kind \(kind)")
        }
    }

    /// The non-interlaced kind with the same pixels.
    static func twin(_ kind: String) -> String {
        kind.hasPrefix("interlaced-") ? String(kind.dropFirst("interlaced-".count)) : kind
    }

    /// Every row the stream decoder hands over, as one raster.
    static func streamRows(_ png: [UInt8]) throws -> (Raster, PNGStreamDecoder) {
        let decoder = PNGStreamDecoder()
        var raster = Raster(width: 1, height: 1, channels: 1)
        var filled = 0
        try decoder.decode(png, prepare: { layout in
            raster = Raster(width: layout.width, height: layout.height, channels: layout.channels)
        }, sink: { row in
            let count = raster.width * raster.channels
            raster.pixels.replaceSubrange(filled..<(filled + count), with: UnsafeBufferPointer(start: row, count: count))
            filled += count
        })
        #expect(filled == raster.pixels.count)
        return (raster, decoder)
    }

    static func greyToRGB(_ raster: Raster) -> Raster {
        guard raster.channels == 1 else { return raster }
        return Raster(width: raster.width, height: raster.height, channels: 3, pixels: raster.pixels.flatMap { [$0, $0, $0] })
    }

    // MARK: PNG

    @Test("PNG rows equal libpng's simplified API, byte for byte", arguments: pngKinds)
    func pngRowsMatchTheWholePictureDecoder(kind: String) throws {
        let png = Self.pngOfKind(kind)
        // An interlaced file is held to its non-interlaced twin: the simplified API itself decodes an
        // interlaced 16-bit RGBA file differently from the same pixels without interlacing (libpng 1.6.39),
        // while the same picture must come out the same either way.
        let whole = try PNGDecoder(Self.pngOfKind(Self.twin(kind)))
        let reference = try whole.decode(onWhite: !whole.hasAlpha)
        let (streamed, _) = try Self.streamRows(png)
        #expect(streamed.channels == (kind.contains("grey") && !kind.contains("Alpha") ? 1 : reference.channels))
        let rgb = Self.greyToRGB(streamed)
        #expect(rgb.channels == reference.channels)
        #expect(rgb.width == reference.width && rgb.height == reference.height)
        #expect(rgb.pixels == reference.pixels)
    }

    @Test("a rendered PNG equals the whole-picture render", arguments: [
        ("rgb8", false), ("rgba8", false), ("rgba8", true), ("greyAlpha8", false), ("palette8+tRNS", true),
        ("rgba16+gAMA", false), ("grey8", false), ("interlaced-rgba16", false),
    ])
    func renderedPNGMatchesTheWholePictureRender(kind: String, keepAlpha: Bool) throws {
        let png = Self.pngOfKind(kind, width: 301, height: 203)
        let image = try ImageRenderer.inspect(png, pixelLimit: 100_000_000, scanLimit: 64)
        guard case .packed(let rendered) = try ImageRenderer.render(image, width: 97, height: 65, planar: false,
                                                                    keepAlpha: keepAlpha)
        else { Issue.record("a PNG rendered as planes"); return }
        let whole = try PNGDecoder(Self.pngOfKind(Self.twin(kind), width: 301, height: 203))
        let withAlpha = keepAlpha && whole.hasAlpha
        let reference = ImageRenderer.finishPacked(try whole.decode(onWhite: !withAlpha), width: 97, height: 65,
                                                   orientation: 1, keepAlpha: withAlpha)
        let rgb = Self.greyToRGB(rendered)
        #expect(rgb.channels == reference.channels)
        #expect(zip(rgb.pixels, reference.pixels).allSatisfy { abs(Int($0) - Int($1)) <= 1 })
    }

    @Test("a PNG is never decoded whole: the decode holds less than a byte per source pixel")
    func pngDecodeHoldsRowsNotThePicture() throws {
        let (width, height) = (1500, 1000)
        let png = Self.png(width: width, height: height, colourType: 2,
                           rows: Self.rows(width: width, height: height, rowBytes: width * 3, seed: 1), bytesPerPixel: 3)
        // Whatever the whole-image limit: a non-interlaced PNG never needs the whole picture.
        let image = try ImageRenderer.inspect(png, pixelLimit: 100_000_000, scanLimit: 64, wholeImageByteLimit: 1_000_000)
        let probe = RenderProbe()
        let rendered = try ImageRenderer.render(image, width: 150, height: 100, planar: false, keepAlpha: false,
                                                probe: probe)
        #expect(rendered.width == 150 && rendered.height == 100)
        // Decoded whole, the picture alone is 4.5 MB (3 bytes per pixel); rows in flight are a few hundred KB.
        #expect(probe.decodedWidth == width && probe.decodedHeight == height)
        #expect(probe.peakBytes > 0)
        #expect(probe.peakBytes < width * height)

        let (_, decoder) = try Self.streamRows(png)
        #expect(decoder.peakLibraryBytes < 256 * 1024, "libpng itself must hold only a few rows")
        #expect(decoder.peakRowBytes < width * 3 * 16)
    }

    @Test("an interlaced PNG is decoded whole, within the whole-image limit")
    func interlacedPNGIsBoundedByTheWholeImageLimit() throws {
        let png = Self.pngOfKind("interlaced-rgb8", width: 300, height: 200)
        let (_, decoder) = try Self.streamRows(png)
        #expect(decoder.peakRowBytes == 300 * 200 * 3)
        let image = try ImageRenderer.inspect(png, pixelLimit: 100_000_000, scanLimit: 64)
        #expect(ImageRenderer.wholeImageBytes(image) >= 300 * 200 * 3)
        let refused = try #require(throws: AttacheError.self) {
            _ = try ImageRenderer.inspect(png, pixelLimit: 100_000_000, scanLimit: 64, wholeImageByteLimit: 100_000)
        }
        #expect(refused.code == .limitExceeded)
        // The same picture without interlacing streams, whatever that limit.
        let plain = Self.pngOfKind("rgb8", width: 300, height: 200)
        _ = try ImageRenderer.inspect(plain, pixelLimit: 100_000_000, scanLimit: 64, wholeImageByteLimit: 100_000)
    }

    @Test("a PNG cut off in its image data is refused")
    func truncatedPNGIsRefused() throws {
        let png = Self.pngOfKind("rgb8", width: 200, height: 100)
        let cut = Array(png.prefix(png.count / 2))
        let image = try ImageRenderer.inspect(cut, pixelLimit: 100_000_000, scanLimit: 64)
        let error = try #require(throws: AttacheError.self) {
            _ = try ImageRenderer.render(image, width: 20, height: 10, planar: false, keepAlpha: false)
        }
        #expect(error.code == .corruptInput)
    }

    // MARK: WebP and BMP

    @Test("a large WebP is scaled while it is decoded, and looks like the full decode resampled")
    func largeWebPIsDecodedScaled() throws {
        let webp = try WebPEncoder().encode(TestImages.photo(width: 1200, height: 900), quality: 90)
        let image = try ImageRenderer.inspect(webp, pixelLimit: 100_000_000, scanLimit: 64)
        let probe = RenderProbe()
        guard case .packed(let rendered) = try ImageRenderer.render(image, width: 160, height: 120, planar: false,
                                                                    keepAlpha: false, oversampling: 2, probe: probe)
        else { Issue.record("a WebP rendered as planes"); return }
        #expect(probe.decodedWidth == 320 && probe.decodedHeight == 240)
        #expect(probe.peakBytes < 1200 * 900)
        let full = try WebPDecoder.decodeRGBA(webp, header: WebPHeader(webp))
        let reference = ImageRenderer.finishPacked(full, width: 160, height: 120, orientation: 1, keepAlpha: false)
        #expect(rendered.channels == 3 && reference.channels == 3)
        let meanError = zip(rendered.pixels, reference.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
        #expect(Double(meanError) / Double(rendered.pixels.count) < 2.0)
    }

    @Test("a lossy WebP with alpha over the whole-image limit is refused from its header")
    func webpAlphaPlaneCountsAgainstTheWholeImageLimit() throws {
        var raster = TestImages.photo(width: 400, height: 300).expandedToRGBA()
        for i in stride(from: 3, to: raster.pixels.count, by: 4) { raster.pixels[i] = UInt8(i / 4 % 256) }
        let webp = try WebPEncoder().encode(raster, quality: 80)
        let refused = try #require(throws: AttacheError.self) {
            _ = try ImageRenderer.inspect(webp, pixelLimit: 100_000_000, scanLimit: 64, wholeImageByteLimit: 100_000)
        }
        #expect(refused.code == .limitExceeded)
        _ = try ImageRenderer.inspect(webp, pixelLimit: 100_000_000, scanLimit: 64, wholeImageByteLimit: 400 * 300)
    }

    @Test("a BMP streamed from its rows equals the whole decode", arguments: [false, true])
    func bmpRowsMatchTheWholeDecode(topDown: Bool) throws {
        let (w, h) = (203, 151)
        let rowBytes = (w * 3 + 3) & ~3
        func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }
        var bmp: [UInt8] = Array("BM".utf8) + le32(54 + rowBytes * h) + le32(0) + le32(54)
        bmp += le32(40) + le32(w) + le32(topDown ? -h : h) + [1, 0, 24, 0] + le32(0) + le32(rowBytes * h)
            + le32(2835) + le32(2835) + le32(0) + le32(0)
        bmp += Self.noise(rowBytes * h, seed: 3)
        let image = try ImageRenderer.inspect(bmp, pixelLimit: 100_000_000, scanLimit: 64)
        guard case .packed(let rendered) = try ImageRenderer.render(image, width: 60, height: 45, planar: false,
                                                                    keepAlpha: false)
        else { Issue.record("a BMP rendered as planes"); return }
        let reference = ImageRenderer.finishPacked(try BMPDecoder.decode(bmp), width: 60, height: 45, orientation: 1,
                                                   keepAlpha: false)
        #expect(rendered.pixels == reference.pixels)
    }

    // MARK: The resampler's planar loops

    @Test("RGB and RGBA resampled through planar AVX2 loops match the portable loops", arguments: [3, 4])
    func planarVectorLoopsMatchThePortableOnes(channels: Int) throws {
        let source = Raster(width: 517, height: 211, channels: channels,
                            pixels: Self.noise(517 * 211 * channels, seed: 11))
        let vector = LanczosResampler.resample(source, width: 130, height: 61, vectorKernels: true)
        let portable = LanczosResampler.resample(source, width: 130, height: 61, vectorKernels: false)
        #expect(zip(vector.pixels, portable.pixels).allSatisfy { abs(Int($0) - Int($1)) <= 1 })
    }
}
