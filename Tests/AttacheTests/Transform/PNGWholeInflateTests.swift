import CZlib
import Testing
@testable import AttacheCore

/// The PNG fast path (image data inflated in one piece by libdeflate, unfiltered here with SSE2) held to
/// libpng: the same bytes for every filter type, pixel size and width it takes, and libpng's own rows
/// whenever it must not or cannot take a file.
@Suite struct PNGWholeInflateTests {
    /// Colour type and bytes per pixel of the 8-bit kinds the fast path takes.
    static let kinds: [(name: String, colourType: UInt8, bpp: Int)] = [
        ("grey", 0, 1), ("greyAlpha", 4, 2), ("rgb", 2, 3), ("rgba", 6, 4),
    ]

    /// The filter a row is written with: every type in turn (and so every type after every other),
    /// or one type throughout.
    enum FilterChoice: Sendable, CustomStringConvertible {
        case cycle
        case only(UInt8)
        var description: String {
            switch self {
            case .cycle: "cycle"
            case .only(let type): "only\(type)"
            }
        }

        func type(row: Int) -> UInt8 {
            switch self {
            case .cycle: UInt8(row % 5)
            case .only(let type): type
            }
        }
    }

    /// PNG's filters, written from the specification (section 9) independently of the decoder's code.
    static func filter(_ row: [UInt8], previous: [UInt8], bpp: Int, type: UInt8) -> [UInt8] {
        func paeth(_ a: Int, _ b: Int, _ c: Int) -> Int {
            let p = a + b - c
            let (pa, pb, pc) = (abs(p - a), abs(p - b), abs(p - c))
            return pa <= pb && pa <= pc ? a : (pb <= pc ? b : c)
        }
        return row.indices.map { i in
            let x = Int(row[i]), b = Int(previous[i])
            let a = i >= bpp ? Int(row[i - bpp]) : 0
            let c = i >= bpp ? Int(previous[i - bpp]) : 0
            let predictor = switch type {
            case 1: a
            case 2: b
            case 3: (a + b) / 2
            case 4: paeth(a, b, c)
            default: 0
            }
            return UInt8(truncatingIfNeeded: x - predictor)
        }
    }

    /// A non-interlaced 8-bit PNG of `rows`, filtered as `filters` says, compressed by zlib (level 6, or
    /// stored blocks), its image data split into IDAT chunks of `chunkSize` bytes (nil: one chunk).
    static func png(width: Int, colourType: UInt8, bpp: Int, rows: [[UInt8]], filters: FilterChoice,
                    stored: Bool = false, chunkSize: Int? = nil, extra: [[UInt8]] = []) -> [UInt8] {
        var raw: [UInt8] = []
        var previous = [UInt8](repeating: 0, count: width * bpp)
        for (y, row) in rows.enumerated() {
            let type = filters.type(row: y)
            raw.append(type)
            raw += filter(row, previous: previous, bpp: bpp, type: type)
            previous = row
        }
        let compressed = stored ? TestImages.zlibStored(raw) : deflated(raw)
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        out += TestImages.chunk("IHDR", TestImages.be32(width) + TestImages.be32(rows.count) + [8, colourType, 0, 0, 0])
        for chunk in extra { out += chunk }
        let size = chunkSize ?? max(compressed.count, 1)
        for start in stride(from: 0, to: compressed.count, by: size) {
            out += TestImages.chunk("IDAT", Array(compressed[start..<min(start + size, compressed.count)]))
        }
        out += TestImages.chunk("IEND", [])
        return out
    }

    static func deflated(_ data: [UInt8]) -> [UInt8] {
        var size = compressBound(uLong(data.count))
        var out = [UInt8](repeating: 0, count: Int(size))
        let status = compress2(&out, &size, data, uLong(data.count), 6)
        precondition(status == Z_OK)
        return Array(out.prefix(Int(size)))
    }

    /// Smooth noise, so that every filter type has something to predict and every byte value occurs.
    static func rows(width: Int, height: Int, bpp: Int, seed: UInt64) -> [[UInt8]] {
        let noise = StreamedDecodeTests.noise(width * height * bpp, seed: seed)
        return (0..<height).map { y in
            (0..<(width * bpp)).map { i in
                let smooth = (i / bpp) * 7 + y * 5 + (i % bpp) * 60
                return UInt8(truncatingIfNeeded: smooth + Int(noise[y * width * bpp + i] >> 4))
            }
        }
    }

    /// Every row a decoder hands over, one after the other.
    static func decode(_ png: [UInt8], inflateByteLimit: Int) throws -> (pixels: [UInt8], channels: Int, decoder: PNGStreamDecoder) {
        let decoder = PNGStreamDecoder(inflateByteLimit: inflateByteLimit)
        var pixels: [UInt8] = []
        var rowBytes = 0, channels = 0
        try decoder.decode(png, prepare: { layout in
            rowBytes = layout.width * layout.channels
            channels = layout.channels
        }, sink: { row in
            pixels += UnsafeBufferPointer(start: row, count: rowBytes)
        })
        return (pixels, channels, decoder)
    }

    /// The fast path and libpng's rows on the same file: same channels, same bytes, and the fast path
    /// taken (or not) as expected.
    static func expectSameAsLibpng(_ png: [UInt8], fast: Bool, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let viaLibpng = try decode(png, inflateByteLimit: 0)
        let viaFastPath = try decode(png, inflateByteLimit: .max)
        #expect(viaLibpng.decoder.inflatedWhole == false, sourceLocation: sourceLocation)
        #expect(viaFastPath.decoder.inflatedWhole == fast, sourceLocation: sourceLocation)
        #expect(viaFastPath.channels == viaLibpng.channels, sourceLocation: sourceLocation)
        #expect(viaFastPath.pixels.count == viaLibpng.pixels.count, sourceLocation: sourceLocation)
        #expect(viaFastPath.pixels == viaLibpng.pixels, sourceLocation: sourceLocation)
    }

    @Test("every filter type, pixel size and width unfilters to libpng's bytes",
          arguments: [FilterChoice.cycle, .only(0), .only(1), .only(2), .only(3), .only(4)],
          [1, 2, 3, 5, 6, 17, 33, 64, 101])
    func unfilteredRowsEqualLibpng(filters: FilterChoice, width: Int) throws {
        for kind in Self.kinds {
            let rows = Self.rows(width: width, height: 11, bpp: kind.bpp, seed: UInt64(width * 10 + kind.bpp))
            let png = Self.png(width: width, colourType: kind.colourType, bpp: kind.bpp, rows: rows, filters: filters)
            try Self.expectSameAsLibpng(png, fast: true)
        }
    }

    @Test("the fast path equals libpng's simplified API, as the row decoder does", arguments: kinds.map(\.name))
    func fastPathEqualsTheWholePictureDecoder(kind name: String) throws {
        let kind = try #require(Self.kinds.first { $0.name == name })
        let (width, height) = (257, 61)
        let png = Self.png(width: width, colourType: kind.colourType, bpp: kind.bpp,
                           rows: Self.rows(width: width, height: height, bpp: kind.bpp, seed: 4), filters: .cycle)
        let whole = try PNGDecoder(png)
        let reference = try whole.decode(onWhite: !whole.hasAlpha)
        let (pixels, channels, decoder) = try Self.decode(png, inflateByteLimit: .max)
        #expect(decoder.inflatedWhole)
        let widened = channels == 1 ? pixels.flatMap { [$0, $0, $0] } : pixels
        #expect(widened == reference.pixels)
    }

    @Test("IDAT split into many chunks, stored or deflated, inflates the same", arguments: [false, true])
    func manyChunks(stored: Bool) throws {
        let rows = Self.rows(width: 150, height: 40, bpp: 3, seed: 9)
        for chunkSize in [1, 7, 1000] {
            let png = Self.png(width: 150, colourType: 2, bpp: 3, rows: rows, filters: .cycle, stored: stored,
                               chunkSize: chunkSize)
            try Self.expectSameAsLibpng(png, fast: true)
        }
    }

    @Test("files whose samples libpng converts stay on libpng's rows, and those it leaves alone do not")
    func gammaAndTransparencyDecideThePath() throws {
        let rows = Self.rows(width: 40, height: 9, bpp: 3, seed: 2)
        func rgb(_ extra: [[UInt8]]) -> [UInt8] {
            Self.png(width: 40, colourType: 2, bpp: 3, rows: rows, filters: .cycle, extra: extra)
        }
        // sRGB, or a gAMA of 1/2.2: nothing to correct.
        try Self.expectSameAsLibpng(rgb([TestImages.chunk("gAMA", TestImages.be32(45_455))]), fast: true)
        try Self.expectSameAsLibpng(rgb([TestImages.chunk("sRGB", [0])]), fast: true)
        // Linear light and 1/1.8 are corrected by libpng; a colour key becomes alpha.
        try Self.expectSameAsLibpng(rgb([TestImages.chunk("gAMA", TestImages.be32(100_000))]), fast: false)
        try Self.expectSameAsLibpng(rgb([TestImages.chunk("gAMA", TestImages.be32(55_556))]), fast: false)
        try Self.expectSameAsLibpng(rgb([TestImages.chunk("tRNS", [0, 1, 0, 2, 0, 3])]), fast: false)
    }

    @Test("a bad IDAT CRC, a damaged zlib stream or a bad filter type end as on libpng's rows")
    func damageFallsBackToLibpng() throws {
        let rows = Self.rows(width: 60, height: 20, bpp: 4, seed: 3)
        let png = Self.png(width: 60, colourType: 6, bpp: 4, rows: rows, filters: .cycle, stored: true, chunkSize: 500)
        let firstIDAT = try #require(Self.find("IDAT", in: png))

        // A flipped bit in the image data: the chunk's CRC no longer matches.
        var badCRC = png
        badCRC[firstIDAT + 8 + 100] ^= 0x10
        try Self.expectSameOutcome(badCRC)

        // A wrong Adler-32 with correct CRCs: libdeflate refuses, and libpng's rows decide.
        var raw: [UInt8] = []
        var previous = [UInt8](repeating: 0, count: 240)
        for (y, row) in rows.enumerated() {
            raw.append(UInt8(y % 5))
            raw += Self.filter(row, previous: previous, bpp: 4, type: UInt8(y % 5))
            previous = row
        }
        var zlib = TestImages.zlibStored(raw)
        zlib[zlib.count - 1] ^= 0xFF
        try Self.expectSameOutcome(Self.file(width: 60, height: 20, colourType: 6, idat: zlib))

        // Filter type 5 does not exist.
        var badFilter = raw
        badFilter[7 * 241] = 5
        try Self.expectSameOutcome(Self.file(width: 60, height: 20, colourType: 6, idat: TestImages.zlibStored(badFilter)))

        // Cut off in the middle of the image data.
        try Self.expectSameOutcome(Array(png.prefix(png.count / 2)))
    }

    @Test("above the limit, or at the pixel cap, the image data is inflated a row at a time")
    func theLimitKeepsLargeFilesOnRows() throws {
        let (width, height) = (300, 200)
        let png = Self.png(width: width, colourType: 2, bpp: 3,
                           rows: Self.rows(width: width, height: height, bpp: 3, seed: 8), filters: .cycle)
        let filtered = height * (1 + width * 3)
        let at = try Self.decode(png, inflateByteLimit: filtered)
        #expect(at.decoder.inflatedWhole)
        #expect(at.decoder.peakRowBytes == filtered)
        let over = try Self.decode(png, inflateByteLimit: filtered - 1)
        #expect(!over.decoder.inflatedWhole)
        #expect(over.decoder.peakRowBytes < width * 3 * 32)
        #expect(over.pixels == at.pixels)

        // Through the renderer: the whole-image limit is the fast path's limit.
        func peakBytes(limit: Int) throws -> Int {
            let image = try ImageRenderer.inspect(png, pixelLimit: 100_000_000, scanLimit: 64, wholeImageByteLimit: limit)
            let probe = RenderProbe()
            _ = try ImageRenderer.render(image, width: 30, height: 20, planar: false, keepAlpha: false, probe: probe)
            return probe.peakBytes
        }
        // Over the limit: libpng's rows and zlib's window (~60 KB) instead of the inflated data.
        #expect(try peakBytes(limit: filtered) - peakBytes(limit: filtered - 1) > filtered / 2)
    }

    // MARK: Helpers

    static func find(_ type: String, in png: [UInt8]) -> Int? {
        var at = 8
        while at + 8 <= png.count {
            let length = png[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) }
            if Array(png[(at + 4)..<(at + 8)]) == Array(type.utf8) { return at }
            at += 12 + length
        }
        return nil
    }

    static func file(width: Int, height: Int, colourType: UInt8, idat: [UInt8]) -> [UInt8] {
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
            + TestImages.chunk("IHDR", TestImages.be32(width) + TestImages.be32(height) + [8, colourType, 0, 0, 0])
            + TestImages.chunk("IDAT", idat) + TestImages.chunk("IEND", [])
    }

    /// Both paths refuse `png` with the same code, or both deliver the same bytes.
    static func expectSameOutcome(_ png: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws {
        func outcome(_ limit: Int) -> Result<[UInt8], AttacheError> {
            do { return .success(try decode(png, inflateByteLimit: limit).pixels) } catch let error as AttacheError {
                return .failure(error)
            } catch {
                return .failure(AttacheError(.internalError, stage: .transform, "\(error)"))
            }
        }
        switch (outcome(0), outcome(.max)) {
        case (.success(let a), .success(let b)):
            #expect(a == b, sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)):
            #expect(a.code == b.code, sourceLocation: sourceLocation)
            #expect(a.code == .corruptInput, sourceLocation: sourceLocation)
        case (let a, let b):
            Issue.record("libpng's rows: \(a), the fast path: \(b)", sourceLocation: sourceLocation)
        }
    }
}
