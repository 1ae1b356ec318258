import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

@Suite struct HEIFTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// A 96 × 64 photo, red on top and blue below, made by heif-enc from a JPEG that carries GPS EXIF
    /// (which heif-enc copies), then given `irot` and `imir` by Scripts/heif-orient.py.
    static func photo(in dir: String, rotate: Int = 0, mirrorAxis: Int? = nil) async throws -> String {
        let jpeg = dir + "/source.jpg"
        try await MediaTools.ffmpeg([
            "-f", "lavfi", "-i", "color=c=red:s=96x32", "-f", "lavfi", "-i", "color=c=blue:s=96x32",
            "-filter_complex", "vstack", "-frames:v", "1", "-q:v", "2", jpeg,
        ])
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: jpeg)))
        bytes.insert(contentsOf: JPEGMarkers.exifSegment(orientation: 1), at: 2)
        try Data(bytes).write(to: URL(fileURLWithPath: jpeg))
        let plain = dir + "/plain.heic"
        try await MediaTools.run("/usr/bin/heif-enc", ["-q", "90", "-o", plain, jpeg])
        let output = dir + "/photo.heic"
        var arguments = [root + "/Scripts/heif-orient.py", plain, output, "--rotate", String(rotate)]
        if let mirrorAxis { arguments += ["--mirror-axis", String(mirrorAxis)] }
        try await MediaTools.run("/usr/bin/python3", arguments)
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

    @Test func rotatedHEICIsSentAsAnUprightJPEGWithoutMetadata() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let input = try await Self.photo(in: dir, rotate: 90)
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

    @Test func mirroredAndRotatedHEICIsUpright() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // irot 180 (red below), then libheif 1.15's imir axis 0 (top and bottom swap): red on top again.
        let input = try await Self.photo(in: dir, rotate: 180, mirrorAxis: 0)
        let output = try Transformer.transformBlocking(
            path: input, mimeType: "image/heic", kind: .image, workDirectory: dir, configuration: Self.configuration())
        let image = try TestImages.decodeJPEG(try TestImages.read(output.path))
        #expect(image.width == 96 && image.height == 64)
        #expect(Self.isRed(image, 48, 8) && Self.isBlue(image, 48, 56))
    }

    @Test func hostileHEIFIsRefusedOrSentAsItIs() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let input = try await Self.photo(in: dir)
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

        // Without a decoder (libheif not installed), a HEIC photo goes as it is.
        let none = try Transformer.transformBlocking(
            path: input, mimeType: "image/heic", kind: .image, workDirectory: dir, configuration: .init())
        #expect(!none.didTransform && none.skipReason?.contains("no HEIF decoder") == true)
    }

    // MARK: FFmpeg's HEVC decoder inside libheif

    static func sample() throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: root + "/Samples/photo.heic")))
    }

    /// The largest difference of one BMP byte between `a` and `b` (the same size), headers included.
    static func largestDifference(_ a: [UInt8], _ b: [UInt8]) -> Int {
        zip(a, b).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
    }

    @Test func libavcodecDecodesHEVCWithLibde265sPixels() async throws {
        // Scripts/bootstrap.sh installs ffmpeg, hence libavcodec.so.59: the plugin is registered.
        #expect(LibHEIFDecoder.hevcDecoderID == "attache-avcodec")
        let data = try Self.sample()
        let before = LibHEIFDecoder.avcodecPicturesOnThisThread
        let preferred = try LibHEIFDecoder().decodeToBMP(data, pixelLimit: 1 << 24)
        #expect(LibHEIFDecoder.avcodecPicturesOnThisThread == before + 1, "libavcodec decoded the picture")
        let libde265 = try LibHEIFDecoder(decoderID: "libde265").decodeToBMP(data, pixelLimit: 1 << 24)
        #expect(LibHEIFDecoder.avcodecPicturesOnThisThread == before + 1, "libde265 decoded this one")
        #expect(preferred.count == 54 + 1200 * 3 * 1600 && libde265.count == preferred.count)
        // HEVC decoding is exact and libheif converts both the same way: equal pixels are expected, one
        // step of rounding is tolerated.
        #expect(Self.largestDifference(preferred, libde265) <= 1)
        // Orientation (irot) is still libheif's: the sample is stored 1600 × 1200 and shown upright.
        let image = try BMPDecoder.decode(preferred)
        #expect(image.width == 1200 && image.height == 1600)
    }

    @Test(arguments: [
        ("4:4:4", ["-p", "chroma=444"], "rgb24"), ("4:2:2", ["-p", "chroma=422"], "rgb24"),
        ("10 bits", ["-b", "10"], "rgb48be"), ("12 bits", ["-b", "12"], "rgb48be"),
        ("monochrome", [], "gray"), ("alpha", [], "rgba"), ("odd size", [], "rgb24"),
    ])
    func variantsDecodeAlikeWithBothDecoders(name: String, options: [String], pixelFormat: String) async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let png = dir + "/source.png"
        let size = name == "odd size" ? "97x61" : "160x120"
        // Alpha: a horizontal ramp, so that compositing on white is visible.
        let filter = pixelFormat == "rgba" ? "format=rgba,geq=r='r(X,Y)':g='g(X,Y)':b='b(X,Y)':a='X*255/W'" : "format=\(pixelFormat)"
        try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=\(size)", "-frames:v", "1", "-vf", filter, png])
        let heic = dir + "/variant.heic"
        try await MediaTools.run("/usr/bin/heif-enc", ["-q", "60"] + options + ["-o", heic, png])
        let data = Array(try Data(contentsOf: URL(fileURLWithPath: heic)))
        let before = LibHEIFDecoder.avcodecPicturesOnThisThread
        let preferred = try LibHEIFDecoder().decodeToBMP(data, pixelLimit: 1 << 20)
        // The alpha plane is an HEVC picture of its own. heif-enc stores an odd size as a grid of one tile
        // (cropped), and libheif decodes grid tiles on threads of its own, where this count cannot see them.
        if name != "odd size" {
            #expect(LibHEIFDecoder.avcodecPicturesOnThisThread == before + (name == "alpha" ? 2 : 1), "\(name)")
        }
        // libheif 1.15 passes the choice of decoder on to neither the alpha plane nor grid tiles: libavcodec
        // decodes those here too (RecompressRulesTests compares them with libde265's in a process without
        // libavcodec).
        let libde265 = try LibHEIFDecoder(decoderID: "libde265").decodeToBMP(data, pixelLimit: 1 << 20)
        #expect(preferred.count == libde265.count, "\(name)")
        #expect(Self.largestDifference(preferred, libde265) <= 1, "\(name)")
    }

    @Test func damagedHEVCDataIsATypedErrorOrConcealedNeverACrash() async throws {
        let data = try Self.sample()
        let decoder = LibHEIFDecoder()
        #expect(LibHEIFDecoder.hevcDecoderID == "attache-avcodec")

        // The sequence parameter set of the hvcC box overwritten: libavcodec finds no picture to decode.
        var badSPS = data
        let hvcC = try #require(Self.find("hvcC", in: data))
        var at = hvcC + 4 + 22
        let arrays = Int(data[at])
        at += 1
        for _ in 0..<arrays {
            let type = data[at] & 0x3F
            let count = Int(data[at + 1]) << 8 | Int(data[at + 2])
            at += 3
            for _ in 0..<count {
                let length = Int(data[at]) << 8 | Int(data[at + 1])
                at += 2
                if type == 33 { for i in (at + 2)..<(at + length) { badSPS[i] = 0xFF } }
                at += length
            }
        }
        #expect(badSPS != data)
        let spsError = #expect(throws: AttacheError.self) { try decoder.decodeToBMP(badSPS, pixelLimit: 1 << 24) }
        #expect(spsError?.code == .corruptInput && spsError?.stage == .transform, "\(String(describing: spsError))")
        #expect(spsError?.message.contains("libavcodec") == true)

        // A picture of another size than the item's ispe box declares.
        var otherSize = data
        let ispe = try #require(Self.find("ispe", in: data))
        otherSize[ispe + 8 + 2] = 0x06
        otherSize[ispe + 8 + 3] = 0x41  // 1600 → 1601
        let sizeError = #expect(throws: AttacheError.self) { try decoder.decodeToBMP(otherSize, pixelLimit: 1 << 24) }
        #expect(sizeError?.code == .corruptInput && sizeError?.stage == .transform)

        // Bytes of the slices changed: decoded with concealment, or refused; the process goes on.
        var garbled = data
        let mdat = try #require(Self.find("mdat", in: data))
        var state: UInt32 = 5
        for i in stride(from: mdat + 2000, to: data.count - 100, by: 997) {
            state = state &* 1_103_515_245 &+ 12345
            garbled[i] = UInt8(truncatingIfNeeded: state >> 16)
        }
        do {
            let bmp = try decoder.decodeToBMP(garbled, pixelLimit: 1 << 24)
            #expect(bmp.count == Self.preferredCount)
        } catch let error as AttacheError {
            #expect(error.stage == .transform && [.corruptInput, .unsupportedInput].contains(error.code))
        }

        // A NAL unit whose length runs past the end of the item's data.
        var overlong = data
        let firstNAL = mdat + 4
        overlong[firstNAL] = 0x7F
        let lengthError = #expect(throws: AttacheError.self) { try decoder.decodeToBMP(overlong, pixelLimit: 1 << 24) }
        #expect(lengthError?.code == .corruptInput && lengthError?.stage == .transform)
    }

    static let preferredCount = 54 + 1200 * 3 * 1600

    static func find(_ type: String, in data: [UInt8]) -> Int? {
        let pattern = Array(type.utf8)
        guard data.count >= pattern.count else { return nil }
        return (0...(data.count - pattern.count)).first { data[$0..<($0 + pattern.count)].elementsEqual(pattern) }
    }
}
