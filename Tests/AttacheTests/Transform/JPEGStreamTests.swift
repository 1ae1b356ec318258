import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// The streaming JPEG decoder (libjpeg rows straight into the resampler) against broken input, and its
/// pixels against TurboJPEG's whole-plane decode of the same file.
@Suite struct JPEGStreamTests {
    /// Decodes `jpeg` at `numerator`/8 into whole planes through the stream decoder.
    static func streamPlanes(_ jpeg: [UInt8], numerator: Int = 8, maxScans: Int = 64) throws -> [Raster]? {
        var planes: [Raster] = []
        var filled: [Int] = []
        let decoded = try JPEGStreamDecoder().decode(jpeg, scaleNumerator: numerator, maxScans: maxScans, prepare: { layout in
            planes = layout.planes.map { Raster(width: $0.width, height: $0.height, channels: 1) }
            filled = Array(repeating: 0, count: planes.count)
        }, sink: { index, row in
            let width = planes[index].width
            planes[index].pixels.replaceSubrange(filled[index]..<(filled[index] + width),
                                                 with: UnsafeBufferPointer(start: row, count: width))
            filled[index] += width
        })
        #expect(zip(planes, filled).allSatisfy { $0.pixels.count == $1 })
        return decoded ? planes : nil
    }

    static func render(_ jpeg: [UInt8], maxSide: Int) throws -> RenderedImage {
        let image = try ImageRenderer.inspect(jpeg, pixelLimit: 100_000_000, scanLimit: 64)
        let (width, height) = LanczosResampler.fittedSize(width: image.displayedWidth, height: image.displayedHeight,
                                                          maxSide: maxSide)
        return try ImageRenderer.render(image, width: width, height: height, planar: true, keepAlpha: false,
                                        oversampling: 2)
    }

    @Test(arguments: [(8, false), (6, false), (4, false), (6, true)])
    func rowsMatchTurboJPEGsPlanarDecode(numerator: Int, progressive: Bool) throws {
        let jpeg = try TestImages.jpeg(TestImages.photo(width: 203, height: 157), progressive: progressive)
        let header = try TurboJPEGDecoder().header(jpeg)
        let factor = (num: numerator, denom: 8)
        let width = TurboJPEGDecoder.scaled(header.width, factor), height = TurboJPEGDecoder.scaled(header.height, factor)
        let reference = try TurboJPEGDecoder().decodePlanes(jpeg, header: header, scaledWidth: width, scaledHeight: height,
                                                            flags: 0)
        let planes = try #require(try Self.streamPlanes(jpeg, numerator: numerator))
        // TurboJPEG pads the luma plane of 4:2:0 to even sizes; the stream decoder does not. Chroma matches.
        #expect(planes.map { ($0.width + 1) / 2 } == reference.map { ($0.width + 1) / 2 })
        #expect(planes.map { ($0.height + 1) / 2 } == reference.map { ($0.height + 1) / 2 })
        #expect(planes.dropFirst().map(\.width) == reference.dropFirst().map(\.width))
        for (plane, expected) in zip(planes, reference) {
            // Same IDCT for luma and for chroma at its own resolution: equal up to rounding.
            var worst = 0
            for y in 0..<min(plane.height, expected.height) {
                for x in 0..<min(plane.width, expected.width) {
                    worst = max(worst, abs(Int(plane.pixels[y * plane.width + x]) - Int(expected.pixels[y * expected.width + x])))
                }
            }
            #expect(worst <= 1)
        }
    }

    /// A progressive file is cut in one of its scans (or between two): libjpeg runs out of data while it
    /// absorbs the scans into its coefficients, before any row, and the file is refused, not sent blurred.
    @Test(arguments: [false, true])
    func aTruncatedFileIsRefused(progressive: Bool) throws {
        let jpeg = try TestImages.jpeg(TestImages.photo(width: 320, height: 240), progressive: progressive)
        for fraction in [0.3, 0.6, 0.95] {
            let cut = Array(jpeg.prefix(Int(Double(jpeg.count) * fraction)))
            let error = try #require(throws: AttacheError.self) { try Self.streamPlanes(cut) }
            #expect(error.code == .corruptInput)
            #expect(error.message.contains("truncated"))
        }
    }

    @Test func garbageAfterSOIIsRefused() throws {
        var generator = SystemRandomNumberGenerator()
        let garbage: [UInt8] = [0xFF, 0xD8] + (0..<4000).map { _ in UInt8.random(in: 0...0xFE, using: &generator) }
        let error = try #require(throws: AttacheError.self) { try Self.streamPlanes(garbage) }
        #expect(error.code == .corruptInput)
    }

    /// A SOF that declares a far larger picture than the scan data holds: libjpeg runs out of data, and the
    /// missing rows must not come back as grey.
    @Test func aHeaderThatOverstatesTheSizeIsRefused() throws {
        var jpeg = try TestImages.jpeg(TestImages.photo(width: 64, height: 48))
        let sof = try #require(jpeg.indices.dropLast().first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 })
        // SOF0: FF C0, length (2), precision (1), height (2), width (2).
        jpeg[sof + 5] = 0x0B; jpeg[sof + 6] = 0xB8  // 3000
        jpeg[sof + 7] = 0x0F; jpeg[sof + 8] = 0xA0  // 4000
        let error = try #require(throws: AttacheError.self) { _ = try Self.streamPlanes(jpeg, numerator: 6) }
        #expect(error.code == .corruptInput)
        // And through the stage, which decodes it on this path.
        let staged = try #require(throws: AttacheError.self) { try Self.render(jpeg, maxSide: 1280) }
        #expect(staged.code == .corruptInput)
    }

    @Test func tooManyProgressiveScansAreRefused() throws {
        let jpeg = try TestImages.jpeg(TestImages.photo(width: 64, height: 48), progressive: true)
        let error = try #require(throws: AttacheError.self) { try Self.streamPlanes(jpeg, maxScans: 2) }
        #expect(error.code == .limitExceeded)
    }

    @Test func cmykIsLeftToTheTurboJPEGPath() throws {
        let cmyk = try TurboJPEGEncoder().encode(packed: TestImages.solid(width: 32, height: 32, [10, 200, 30, 40]),
                                                 quality: 90, progressive: false, format: .cmyk)
        #expect(try Self.streamPlanes(cmyk) == nil)
    }

    @Test func greyscaleStreams() throws {
        var grey = Raster(width: 90, height: 70, channels: 1)
        for i in grey.pixels.indices { grey.pixels[i] = UInt8(i % 90 * 2) }
        let jpeg = try TurboJPEGEncoder().encode(packed: grey, quality: 95, progressive: false)
        let planes = try #require(try Self.streamPlanes(jpeg, numerator: 6))
        #expect(planes.count == 1)
        #expect(planes[0].width == 68 && planes[0].height == 53)
        guard case .planes(let rendered, let width, let height) = try Self.render(jpeg, maxSide: 30) else {
            Issue.record("a greyscale JPEG should render as planes")
            return
        }
        #expect(rendered.count == 1 && width == 30 && height == 23)
    }
}
