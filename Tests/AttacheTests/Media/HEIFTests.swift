import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

@Suite struct HEIFTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// A 96 × 64 photo, red on top and blue below, made by heif-enc from a JPEG that carries GPS EXIF
    /// (which heif-enc copies), then given `irot` and `imir` by Scripts/heif-orient.py.
    static func photo(in dir: String, rotate: Int = 0, mirrorAxis: Int? = nil) throws -> String {
        let jpeg = dir + "/source.jpg"
        try MediaTools.ffmpeg([
            "-f", "lavfi", "-i", "color=c=red:s=96x32", "-f", "lavfi", "-i", "color=c=blue:s=96x32",
            "-filter_complex", "vstack", "-frames:v", "1", "-q:v", "2", jpeg,
        ])
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: jpeg)))
        bytes.insert(contentsOf: JPEGMarkers.exifSegment(orientation: 1), at: 2)
        try Data(bytes).write(to: URL(fileURLWithPath: jpeg))
        let plain = dir + "/plain.heic"
        try MediaTools.run("/usr/bin/heif-enc", ["-q", "90", "-o", plain, jpeg])
        let output = dir + "/photo.heic"
        var arguments = [root + "/Scripts/heif-orient.py", plain, output, "--rotate", String(rotate)]
        if let mirrorAxis { arguments += ["--mirror-axis", String(mirrorAxis)] }
        try MediaTools.run("/usr/bin/python3", arguments)
        return output
    }

    static func configuration() -> Transformer.Configuration {
        var configuration = Transformer.Configuration()
        configuration.heifDecoder = LibHEIFDecoder()
        return configuration
    }

    static func isRed(_ raster: Raster, _ x: Int, _ y: Int) -> Bool {
        let p = raster[x, y]
        return p[p.startIndex] > 200 && p[p.startIndex + 2] < 60
    }

    static func isBlue(_ raster: Raster, _ x: Int, _ y: Int) -> Bool {
        let p = raster[x, y]
        return p[p.startIndex] < 60 && p[p.startIndex + 2] > 200
    }

    @Test func rotatedHEICIsSentAsAnUprightJPEGWithoutMetadata() throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let input = try Self.photo(in: dir, rotate: 90)
        let output = try Transformer.transformBlocking(
            path: input, mimeType: "image/heic", kind: .image, workDirectory: dir, configuration: Self.configuration())
        #expect(output.didTransform && output.mimeType == "image/jpeg" && output.filenameExtension == "jpg")
        #expect(output.skipReason == nil)
        let sent = try TestImages.read(output.path)
        let image = try TestImages.decodeJPEG(sent)
        // irot 90 is counter-clockwise: the red top becomes the left half.
        #expect(image.width == 64 && image.height == 96)
        #expect(output.width == 64 && output.height == 96)
        #expect(Self.isRed(image, 10, 48) && Self.isBlue(image, 54, 48))
        #expect(!TestImages.contains(sent, "Exif"), "no metadata leaves")
        #expect(output.thumbnails.map(\.name) == ["thumbnail", "thumbnailTiny"])
    }

    @Test func mirroredAndRotatedHEICIsUpright() throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // irot 180 (red below), then libheif 1.15's imir axis 0 (top and bottom swap): red on top again.
        let input = try Self.photo(in: dir, rotate: 180, mirrorAxis: 0)
        let output = try Transformer.transformBlocking(
            path: input, mimeType: "image/heic", kind: .image, workDirectory: dir, configuration: Self.configuration())
        let image = try TestImages.decodeJPEG(try TestImages.read(output.path))
        #expect(image.width == 96 && image.height == 64)
        #expect(Self.isRed(image, 48, 8) && Self.isBlue(image, 48, 56))
    }

    @Test func hostileHEIFIsRefusedOrSentAsItIs() throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let input = try Self.photo(in: dir)
        let decoder = LibHEIFDecoder()
        let data = Array(try Data(contentsOf: URL(fileURLWithPath: input)))
        let overLimit = #expect(throws: AttacheError.self) { try decoder.decodeToBMP(data, pixelLimit: 96 * 64 - 1) }
        #expect(overLimit?.code == .limitExceeded && overLimit?.message.contains("96×64") == true)
        let truncated = #expect(throws: AttacheError.self) {
            try decoder.decodeToBMP(Array(data.prefix(data.count - 40)), pixelLimit: 1 << 20)
        }
        #expect(truncated?.code == .corruptInput && truncated?.stage == .transform)
        #expect(throws: AttacheError.self) { try decoder.decodeToBMP(Array(repeating: 0, count: 64), pixelLimit: 1 << 20) }

        // In the pipeline's Transform stage, a broken photo goes as it is and the receipt says why.
        let cut = dir + "/cut.heic"
        try Data(data.prefix(data.count - 40)).write(to: URL(fileURLWithPath: cut))
        let output = try Transformer.transformBlocking(
            path: cut, mimeType: "image/heic", kind: .image, workDirectory: dir, configuration: Self.configuration())
        #expect(!output.didTransform && output.path == cut && output.skipReason?.hasPrefix("corrupt-input") == true)

        // Without a decoder (the static front executable), a HEIC photo goes as it is.
        let none = try Transformer.transformBlocking(
            path: input, mimeType: "image/heic", kind: .image, workDirectory: dir, configuration: .init())
        #expect(!none.didTransform && none.skipReason?.contains("no HEIF decoder") == true)
    }
}
