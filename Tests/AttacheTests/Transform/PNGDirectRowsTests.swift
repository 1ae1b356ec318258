import AttacheTestSupport
import CZlib
import Testing
@testable import AttacheCore

/// The PNG direct path (image data inflated by zlib a band of rows at a time, unfiltered here with SSE2)
/// held to libpng: the same bytes for every filter type, pixel size, width and IDAT split it takes, libpng's
/// own rows whenever it must not or cannot take a file, and libpng's outcome (from the first row not yet
/// handed over) whenever it gives up part way.
@Suite struct PNGDirectRowsTests {
    /// Colour type and bytes per pixel of the 8-bit kinds the direct path takes.
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

    /// Every row a decoder hands over, one after the other; from a file on disk when `file` is given.
    static func decode(_ png: [UInt8], direct: Bool,
                       file: OpenImageFile? = nil) throws -> (pixels: [UInt8], channels: Int, decoder: PNGStreamDecoder) {
        let decoder = PNGStreamDecoder(direct: direct)
        var pixels: [UInt8] = []
        var rowBytes = 0, channels = 0
        let prepare = { (layout: PNGStreamDecoder.Layout) in
            rowBytes = layout.width * layout.channels
            channels = layout.channels
        }
        let sink = { (row: UnsafePointer<UInt8>) in pixels += UnsafeBufferPointer(start: row, count: rowBytes) }
        if let file {
            try decoder.decode(file: file, prepare: prepare, sink: sink)
        } else {
            try decoder.decode(png, prepare: prepare, sink: sink)
        }
        return (pixels, channels, decoder)
    }

    /// The direct path and libpng's rows on the same file: same channels, same bytes, and the direct path
    /// taken (or not) as expected.
    static func expectSameAsLibpng(_ png: [UInt8], fast: Bool, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let viaLibpng = try decode(png, direct: false)
        let viaFastPath = try decode(png, direct: true)
        #expect(viaLibpng.decoder.decodedDirectly == false, sourceLocation: sourceLocation)
        #expect(viaFastPath.decoder.decodedDirectly == fast, sourceLocation: sourceLocation)
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

    @Test("the direct path equals libpng's simplified API, as the row decoder does", arguments: kinds.map(\.name))
    func fastPathEqualsTheWholePictureDecoder(kind name: String) throws {
        let kind = try #require(Self.kinds.first { $0.name == name })
        let (width, height) = (257, 61)
        let png = Self.png(width: width, colourType: kind.colourType, bpp: kind.bpp,
                           rows: Self.rows(width: width, height: height, bpp: kind.bpp, seed: 4), filters: .cycle)
        let whole = try PNGDecoder(png)
        let reference = try whole.decode(onWhite: !whole.hasAlpha)
        let (pixels, channels, decoder) = try Self.decode(png, direct: true)
        #expect(decoder.decodedDirectly)
        let widened = channels == 1 ? pixels.flatMap { [$0, $0, $0] } : pixels
        #expect(widened == reference.pixels)
    }

    @Test("IDAT split into many chunks at odd boundaries, stored or deflated, inflates the same",
          arguments: [false, true])
    func manyChunks(stored: Bool) throws {
        let rows = Self.rows(width: 150, height: 40, bpp: 3, seed: 9)
        // 451 is one row with its filter byte; 65_537 is past the 64 KiB a band and a read take.
        for chunkSize in [1, 2, 7, 450, 451, 452, 1000, 4096, 65_537] {
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

        // A wrong Adler-32 with correct CRCs: after the last row, where libpng only warns.
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

    @Test("damage part way through ends as on libpng's rows, which take over from the first row not handed over")
    func damageAfterRowsFallsBackFromThatRow() throws {
        // 1000 rows of 1 + 60 × 4 bytes, stored: a band is 271 rows, so damage near the end comes after
        // rows were handed over.
        let (width, height) = (60, 1000)
        let rows = Self.rows(width: width, height: height, bpp: 4, seed: 11)
        var raw: [UInt8] = []
        var previous = [UInt8](repeating: 0, count: width * 4)
        for (y, row) in rows.enumerated() {
            raw.append(UInt8(y % 5))
            raw += Self.filter(row, previous: previous, bpp: 4, type: UInt8(y % 5))
            previous = row
        }
        let good = Self.file(width: width, height: height, colourType: 6, idat: TestImages.zlibStored(raw))

        // Filter type 7 at row 900: libpng refuses the file at that row, with its own words.
        var badFilter = raw
        badFilter[900 * (1 + width * 4)] = 7
        let png = Self.file(width: width, height: height, colourType: 6, idat: TestImages.zlibStored(badFilter))
        let direct = PNGStreamDecoder(direct: true)
        var delivered: [UInt8] = []
        let error = try #require(throws: AttacheError.self) {
            try direct.decode(png, prepare: { _ in }, sink: { delivered += UnsafeBufferPointer(start: $0, count: width * 4) })
        }
        #expect(error.code == .corruptInput)
        #expect(error.message.contains("bad adaptive filter value"))
        // The direct path gave up at the band holding row 900 (rows 813..<1000); libpng's rows went on
        // from row 813 (handing them over a few dozen at a time) up to the bad one.
        #expect(direct.directRowsBeforeFallback == 813)
        let rowsDelivered = delivered.count / (width * 4)
        #expect(rowsDelivered > 813 && rowsDelivered <= 900)
        let reference = try Self.decode(good, direct: false).pixels
        #expect(delivered == Array(reference.prefix(delivered.count)), "each row once, in order, the right bytes")
        try Self.expectSameOutcome(png)

        // A flipped bit in the last 1000 bytes of the image data: its chunk's CRC fails after rows went out.
        let idat = try #require(Self.find("IDAT", in: good))
        let length = good[idat..<(idat + 4)].reduce(0) { $0 << 8 | Int($1) }
        var badCRC = good
        badCRC[idat + 8 + length - 1000] ^= 0x01
        try Self.expectSameOutcome(badCRC)

        // The zlib stream ends (a final stored block, correct CRCs) 100 rows early: not enough image data.
        let short = Self.file(width: width, height: height, colourType: 6,
                              idat: TestImages.zlibStored(Array(raw.prefix(900 * (1 + width * 4)))))
        try Self.expectSameOutcome(short)
        let shortError = try #require(throws: AttacheError.self) { _ = try Self.decode(short, direct: true) }
        #expect(shortError.code == .corruptInput)
    }

    @Test("the direct path holds a band of rows, never the picture, and the renderer takes it")
    func theDirectPathHoldsABand() throws {
        let (width, height) = (300, 2000)
        let png = Self.png(width: width, colourType: 2, bpp: 3,
                           rows: Self.rows(width: width, height: height, bpp: 3, seed: 8), filters: .cycle)
        let filtered = height * (1 + width * 3)
        let direct = try Self.decode(png, direct: true)
        #expect(direct.decoder.decodedDirectly)
        #expect(direct.decoder.peakRowBytes <= PNGStreamDecoder.directBandBytes)
        #expect(direct.decoder.peakRowBytes < filtered / 4)
        let rows = try Self.decode(png, direct: false)
        #expect(rows.pixels == direct.pixels)

        // Through the renderer: the band, libpng's header state and the resampler's rows (about 220 KB
        // for a tenth of this width), against the 1.8 MB of inflated data.
        let image = try ImageRenderer.inspect(png, pixelLimit: 100_000_000, scanLimit: 64)
        let probe = RenderProbe()
        _ = try ImageRenderer.render(image, width: 30, height: 200, planar: false, keepAlpha: false, probe: probe)
        #expect(probe.peakBytes < filtered / 4)
    }

    @Test("a PNG read from its file a piece at a time decodes as from memory, on both paths",
          arguments: ["rgb8", "rgba8", "grey8", "greyAlpha8", "rgb16", "grey16", "palette8+tRNS", "interlaced-rgb8"])
    func fileSourceEqualsMemory(kind: String) throws {
        let png = StreamedDecodeTests.pngOfKind(kind, width: 333, height: 211)
        let folder = try ScratchFolder(prefix: "attache-png-file")
        defer { folder.remove() }
        let path = try folder.write("image.png", png)
        for direct in [true, false] {
            let file = try #require(try ImageFile.openPNG(path, limit: 1 << 30))
            let fromMemory = try Self.decode(png, direct: direct)
            let fromFile = try Self.decode(png, direct: direct, file: file)
            #expect(fromFile.pixels == fromMemory.pixels)
            #expect(fromFile.decoder.decodedDirectly == fromMemory.decoder.decodedDirectly)
            #expect(fromFile.decoder.decodedDirectly == (direct && ["rgb8", "rgba8", "grey8", "greyAlpha8"].contains(kind)))
        }
        // Cut off half way, from a file too: refused as truncated.
        let cut = try folder.write("cut.png", Array(png.prefix(png.count / 2)))
        let file = try #require(try ImageFile.openPNG(cut, limit: 1 << 30))
        let error = try #require(throws: AttacheError.self) { _ = try Self.decode([], direct: true, file: file) }
        #expect(error.code == .corruptInput)
        // Not a PNG: left to the whole-file read.
        let text = try folder.write("text.png", Array("not a png at all".utf8))
        #expect(try ImageFile.openPNG(text, limit: 1 << 30) == nil)
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
        func outcome(_ direct: Bool) -> Result<[UInt8], AttacheError> {
            do { return .success(try decode(png, direct: direct).pixels) } catch let error as AttacheError {
                return .failure(error)
            } catch {
                return .failure(AttacheError(.internalError, stage: .transform, "\(error)"))
            }
        }
        switch (outcome(false), outcome(true)) {
        case (.success(let a), .success(let b)):
            #expect(a == b, sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)):
            #expect(a.code == b.code, sourceLocation: sourceLocation)
            #expect(a.code == .corruptInput, sourceLocation: sourceLocation)
        case (let a, let b):
            Issue.record("libpng's rows: \(a), the direct path: \(b)", sourceLocation: sourceLocation)
        }
    }
}
