import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

/// Grids of HEVC tiles (as phones write them) decoded a row of tiles at a time, against libheif decoding
/// the same file whole.
@Suite struct HEIFGridTests {
    /// ffmpeg's testsrc2 picture of `size` (sharp colour edges, gradients), as a PNG of `pixelFormat`.
    static func source(in dir: String, size: String, pixelFormat: String = "rgb24") async throws -> String {
        let png = dir + "/source-\(size)-\(pixelFormat).png"
        try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=\(size)", "-frames:v", "1", "-vf",
                                     "format=\(pixelFormat)", png])
        return png
    }

    /// A HEIC whose primary image is a grid of `tile`-pixel tiles of `png` (Scripts/heif-grid.py), given
    /// `irot`/`imir` (Scripts/heif-orient.py) when asked.
    static func grid(of png: String, in dir: String, tile: Int, options: [String] = ["-q", "80"], rotate: Int = 0,
                     mirrorAxis: Int? = nil) async throws -> String {
        let plain = dir + "/grid-plain.heic"
        try await MediaTools.run("/usr/bin/python3", [HEIFTests.root + "/Scripts/heif-grid.py", png, plain, "--tile",
                                                      String(tile)] + options)
        let output = dir + "/grid-\(rotate)-\(mirrorAxis.map { String($0) } ?? "none").heic"
        var arguments = [HEIFTests.root + "/Scripts/heif-orient.py", plain, output, "--rotate", String(rotate)]
        if let mirrorAxis { arguments += ["--mirror-axis", String(mirrorAxis)] }
        try await MediaTools.run("/usr/bin/python3", arguments)
        return output
    }

    /// The rows `decoder` hands over, turned upright as its layout says.
    static func decode(_ data: [UInt8], with decoder: LibHEIFDecoder) throws -> (layout: HEIFLayout, upright: Raster) {
        var layout = HEIFLayout(width: 0, height: 0, orientation: 1)
        var raster = Raster(width: 0, height: 0, channels: 3, pixels: [])
        var y = 0
        try decoder.decodeRows(data, pixelLimit: 1 << 24, prepare: { given in
            layout = given
            raster = Raster(width: given.width, height: given.height, channels: 3)
        }, row: { row in
            guard y < raster.height else { return }
            let count = raster.width * 3
            raster.pixels.withUnsafeMutableBufferPointer { ($0.baseAddress! + y * count).update(from: row, count: count) }
            y += 1
        })
        #expect(y == layout.height, "every row came")
        return (layout, raster.applyingOrientation(layout.orientation))
    }

    /// The largest and the mean difference of one sample between two rasters of the same size.
    static func differences(_ a: Raster, _ b: Raster) -> (largest: Int, mean: Double) {
        let d = zip(a.pixels, b.pixels).map { abs(Int($0) - Int($1)) }
        return (d.max() ?? 0, Double(d.reduce(0, +)) / Double(max(d.count, 1)))
    }

    static let libheifWhole = LibHEIFDecoder(decoderID: nil, libheifDecodes: true)

    @Test(arguments: [(0, nil), (90, nil), (180, nil), (270, nil), (0, 0), (0, 1), (90, 0), (270, 1)] as [(Int, Int?)])
    func gridDecodedTileByTileHasLibheifsPixels(rotate: Int, mirrorAxis: Int?) async throws {
        #expect(LibHEIFDecoder.hevcDecoderID == "attache-avcodec")
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // 200 × 150 in 64-pixel tiles: the last column and row are cropped, as in a 4032 × 3024 photo.
        let input = try await Self.grid(of: try await Self.source(in: dir, size: "200x150"), in: dir, tile: 64,
                                        rotate: rotate, mirrorAxis: mirrorAxis)
        let data = Array(try Data(contentsOf: URL(fileURLWithPath: input)))
        let tiledBefore = LibHEIFDecoder.tiledGridsOnThisThread
        let tiled = try Self.decode(data, with: LibHEIFDecoder())
        #expect(LibHEIFDecoder.tiledGridsOnThisThread == tiledBefore + 1, "decoded tile by tile")
        let whole = try Self.decode(data, with: Self.libheifWhole)
        #expect(LibHEIFDecoder.tiledGridsOnThisThread == tiledBefore + 1, "libheif decoded this one")
        // Stored as coded, turned by the caller: libheif's own orientation is the reference.
        #expect(tiled.layout.width == 200 && tiled.layout.height == 150)
        #expect(whole.layout.orientation == 1)
        #expect(tiled.upright.width == whole.upright.width && tiled.upright.height == whole.upright.height)
        #expect((tiled.upright.width, tiled.upright.height) == (rotate % 180 == 0 ? (200, 150) : (150, 200)))
        // The same HEVC pictures, converted with libheif's own arithmetic: the same pixels.
        let (largest, _) = Self.differences(tiled.upright, whole.upright)
        #expect(largest == 0, "largest difference \(largest)")
    }

    @Test(arguments: [("10 bits", ["-q", "80", "-b", "10"], "rgb48be"), ("4:4:4", ["-q", "80", "-p", "chroma=444"], "rgb24"),
                      ("monochrome", ["-q", "80"], "gray")])
    func gridVariantsHaveLibheifsPixels(name: String, options: [String], pixelFormat: String) async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = try await Self.source(in: dir, size: "160x96", pixelFormat: pixelFormat)
        let data = Array(try Data(contentsOf: URL(fileURLWithPath: try await Self.grid(of: source, in: dir, tile: 64,
                                                                                       options: options))))
        let tiledBefore = LibHEIFDecoder.tiledGridsOnThisThread
        let tiled = try Self.decode(data, with: LibHEIFDecoder())
        #expect(LibHEIFDecoder.tiledGridsOnThisThread == tiledBefore + 1, "\(name): decoded tile by tile")
        let whole = try Self.decode(data, with: Self.libheifWhole)
        // 8-bit pictures come out equal; deeper ones are reduced to 8 bits here in one step, by libheif in
        // two (to RGB at their depth, then to 8 bits): one step of rounding apart at most.
        let (largest, mean) = Self.differences(tiled.upright, whole.upright)
        #expect(largest <= (name == "10 bits" ? 1 : 0) && mean < 0.3, "\(name): largest \(largest), mean \(mean)")
    }

    @Test func gridAndOnePictureOfOnePhotoLookAlike() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let png = try await Self.source(in: dir, size: "256x192")
        let single = dir + "/single.heic"
        try await MediaTools.run("/usr/bin/heif-enc", ["-q", "90", "-o", single, png])
        let gridPath = try await Self.grid(of: png, in: dir, tile: 128, options: ["-q", "90"])
        let tiledBefore = LibHEIFDecoder.tiledGridsOnThisThread
        let one = try Self.decode(Array(try Data(contentsOf: URL(fileURLWithPath: single))), with: LibHEIFDecoder())
        #expect(LibHEIFDecoder.tiledGridsOnThisThread == tiledBefore, "one picture: libheif")
        let grid = try Self.decode(Array(try Data(contentsOf: URL(fileURLWithPath: gridPath))), with: LibHEIFDecoder())
        #expect(LibHEIFDecoder.tiledGridsOnThisThread == tiledBefore + 1, "grid: tile by tile")
        #expect(one.layout == grid.layout)
        // Two lossy encodings of one picture: close, not equal.
        let (_, mean) = Self.differences(one.upright, grid.upright)
        #expect(mean < 3, "mean \(mean)")
    }

    @Test func rotatedGridIsSentUpright() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Red on top, blue below, 128 × 64 in two 64-pixel tiles (x265's smallest block; heif-enc makes a
        // grid of its own below that); irot 90 (counter-clockwise): red on the left.
        let png = dir + "/halves.png"
        try await MediaTools.ffmpeg([
            "-f", "lavfi", "-i", "color=c=red:s=128x32", "-f", "lavfi", "-i", "color=c=blue:s=128x32",
            "-filter_complex", "vstack", "-frames:v", "1", png,
        ])
        let input = try await Self.grid(of: png, in: dir, tile: 64, options: ["-q", "90"], rotate: 90)
        let tiledBefore = LibHEIFDecoder.tiledGridsOnThisThread
        let output = try Transformer.transformBlocking(
            path: input, mimeType: "image/heic", kind: .image, workDirectory: dir, configuration: HEIFTests.configuration())
        #expect(LibHEIFDecoder.tiledGridsOnThisThread == tiledBefore + 1, "decoded tile by tile")
        #expect(output.didTransform && output.skipReason == nil && output.mimeType == "image/jpeg")
        let image = try TestImages.decodeJPEG(try TestImages.read(output.path))
        #expect(image.width == 64 && image.height == 128 && output.width == 64 && output.height == 128)
        #expect(HEIFTests.isRed(image, 10, 64) && HEIFTests.isBlue(image, 54, 64))
        #expect(output.thumbnails.map(\.name) == ["thumbnail", "thumbnailTiny"])
    }

    @Test func alphaIsCompositedOnWhite() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Black, transparent on the left and opaque on the right.
        let png = dir + "/ramp.png"
        try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "color=c=black:s=128x64", "-frames:v", "1", "-vf",
                                     "format=rgba,geq=r=0:g=0:b=0:a='X*255/W'", png])
        let heic = dir + "/ramp.heic"
        try await MediaTools.run("/usr/bin/heif-enc", ["-q", "90", "-o", heic, png])
        let output = try Transformer.transformBlocking(
            path: heic, mimeType: "image/heic", kind: .image, workDirectory: dir, configuration: HEIFTests.configuration())
        let image = try TestImages.decodeJPEG(try TestImages.read(output.path))
        let left = image[2, 32], right = image[125, 32]
        #expect(left.allSatisfy { $0 > 230 }, "transparent black is white: \(Array(left))")
        #expect(right.allSatisfy { $0 < 30 }, "opaque black stays black: \(Array(right))")
    }

    @Test func damagedGridIsATypedError() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let input = try await Self.grid(of: try await Self.source(in: dir, size: "200x150"), in: dir, tile: 64)
        let data = Array(try Data(contentsOf: URL(fileURLWithPath: input)))
        let decoder = LibHEIFDecoder()
        let mdat = try #require(HEIFTests.find("mdat", in: data))
        // The first tile's first NAL unit claims to run past its data; a tile's slice data garbled; the
        // file cut short in the last tile; the grid claiming 41 columns.
        var overlong = data
        overlong[mdat + 4] = 0x7F
        var garbled = data
        for i in stride(from: mdat + 200, to: data.count - 50, by: 331) { garbled[i] ^= 0x5A }
        var columns = data
        let idat = try #require(HEIFTests.find("idat", in: data))
        columns[idat + 4 + 3] = 40
        for (name, bytes) in [("overlong", overlong), ("cut", Array(data.prefix(data.count - 300))),
                              ("columns", columns), ("garbled", garbled)] {
            do {
                _ = try Self.decode(bytes, with: decoder)
                // Concealment is libavcodec's right for garbled slices; never for a broken structure.
                #expect(name == "garbled", "\(name) was decoded")
            } catch let error as AttacheError {
                #expect(error.stage == .transform && [.corruptInput, .unsupportedInput].contains(error.code), "\(name): \(error)")
            }
        }
        // Over the pixel limit: refused from the header, before any tile is decoded.
        let pictures = LibHEIFDecoder.avcodecPicturesOnThisThread
        let overLimit = #expect(throws: AttacheError.self) {
            try decoder.decodeRows(data, pixelLimit: 200 * 150 - 1, prepare: { _ in }, row: { _ in })
        }
        #expect(overLimit?.code == .limitExceeded)
        #expect(LibHEIFDecoder.avcodecPicturesOnThisThread == pictures)
        // In the pipeline, a broken grid goes as it is and the receipt says why.
        let cut = dir + "/cut.heic"
        try Data(overlong).write(to: URL(fileURLWithPath: cut))
        let output = try Transformer.transformBlocking(
            path: cut, mimeType: "image/heic", kind: .image, workDirectory: dir, configuration: HEIFTests.configuration())
        #expect(!output.didTransform && output.skipReason?.hasPrefix("corrupt-input") == true)
    }

    /// libheif 1.15 allocates a derived image's canvas from the grid or overlay description, not from the
    /// image's ispe: the fuzzer's overlay declares 24 × 8 pixels in its ispe and asked libheif for 2.5 GB.
    @Test func derivedImagesAreMeasuredByTheirCanvasAndMayNotNest() throws {
        let bomb = HEIFTests.root + "/Tests/FuzzCorpus/heif/overlay-bomb.heic"
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: bomb)))
        var prepared = false
        let error = #expect(throws: AttacheError.self) {
            try LibHEIFDecoder().decodeRows(bytes, pixelLimit: 100_000_000, prepare: { _ in prepared = true }, row: { _ in })
        }
        #expect(error?.code == .limitExceeded && error?.message.contains("grid or overlay") == true, "\(String(describing: error))")
        #expect(!prepared)
        // And it follows a derived image's inputs without looking for a loop: this grid is its own tile.
        let loop = HEIFTests.root + "/Tests/FuzzCorpus/heif/grid-of-itself.heic"
        let looped = #expect(throws: AttacheError.self) {
            try LibHEIFDecoder().decodeRows([UInt8](try Data(contentsOf: URL(fileURLWithPath: loop))),
                                            pixelLimit: 100_000_000, prepare: { _ in prepared = true }, row: { _ in })
        }
        #expect(looped?.code == .unsupportedInput && looped?.message.contains("made of another") == true,
                "\(String(describing: looped))")
        #expect(!prepared)
        // The same loop behind a reference box longer than its list, and behind a count of ids larger than
        // its box: libheif reads both anyway.
        for name in ["grid-of-itself-hidden.heic", "grid-of-itself-counted.heic"] {
            let hidden = HEIFTests.root + "/Tests/FuzzCorpus/heif/" + name
            let unread = #expect(throws: AttacheError.self) {
                try LibHEIFDecoder().decodeRows([UInt8](try Data(contentsOf: URL(fileURLWithPath: hidden))),
                                                pixelLimit: 100_000_000, prepare: { _ in prepared = true }, row: { _ in })
            }
            #expect(unread?.code == .corruptInput && unread?.message.contains("cannot be read") == true,
                    "\(name): \(String(describing: unread))")
            #expect(!prepared)
        }
    }
}
