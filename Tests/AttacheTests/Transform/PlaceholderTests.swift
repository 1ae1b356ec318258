import Foundation
import AttacheTestSupport
import Testing
@testable import AttacheCore

/// BlurHash, ThumbHash and Telegram's stripped thumbnail, checked by others' code: the PyPI reference
/// implementations `blurhash` and `thumbhash` (installed by Scripts/bootstrap.sh) fed the very pixels our
/// placeholders came from, and ImageMagick decoding the JPEG rebuilt with Telegram's header template.
@Suite("placeholders", .serialized)
struct PlaceholderTests {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples")

    /// Telegram's header template for stripped thumbnails, as Telegram's API documentation ("Stripped
    /// thumbnails") and its clients publish it: 623 bytes, the height at offset 164, the width at 166.
    static let telegramHeader = hexBytes(
        "ffd8ffe000104a46494600010100000100010000ffdb004300281c1e231e19282321232d2b28303c64413c37373c7b585d49"
            + "64918099968f808c8aa0b4e6c3a0aadaad8a8cc8ffcbdaeef5ffffff9bc1fffffffaffe6fdfff8ffdb0043012b2d2d3c353c"
            + "76414176f8a58ca5f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8f8"
            + "f8f8f8f8f8f8f8f8ffc00011080000000003012200021101031101ffc4001f00000105010101010101000000000000000001"
            + "02030405060708090a0bffc400b5100002010303020403050504040000017d01020300041105122131410613516107227114"
            + "328191a1082342b1c11552d1f02433627282090a161718191a25262728292a3435363738393a434445464748494a53545556"
            + "5758595a636465666768696a737475767778797a838485868788898a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5"
            + "b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7e8e9eaf1f2f3f4f5f6f7f8f9faffc4001f010003"
            + "0101010101010101010000000000000102030405060708090a0bffc400b51100020102040403040705040400010277000102"
            + "031104052131061241510761711322328108144291a1b1c109233352f0156272d10a162434e125f11718191a262728292a35"
            + "363738393a434445464748494a535455565758595a636465666768696a737475767778797a82838485868788898a92939495"
            + "969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae2e3e4e5e6e7e8e9ea"
            + "f2f3f4f5f6f7f8f9faffda000c03010002110311003f00")

    /// Runs the reference encoders and decoders on `pixels` (RGBA written raw) and our strings; prints JSON.
    static let referenceScript = """
        import base64, json, sys, blurhash, thumbhash
        path, w, h, cx, cy, ours_blur, ours_thumb = sys.argv[1:8]
        w, h, cx, cy = int(w), int(h), int(cx), int(cy)
        rgba = list(open(path, "rb").read())
        def on_white(i, k):
            a = rgba[i * 4 + 3]
            return (rgba[i * 4 + k] * a + 255 * (255 - a) + 127) // 255
        rgb = [[[on_white(y * w + x, k) for k in range(3)] for x in range(w)] for y in range(h)]
        has_alpha = any(rgba[i * 4 + 3] < 255 for i in range(w * h))
        theirs_blur = blurhash.encode(rgb, cx, cy)
        def mean_error(a, b):
            flat_a = [v for row in a for px in row for v in px]
            flat_b = [v for row in b for px in row for v in px]
            return sum(abs(p - q) for p, q in zip(flat_a, flat_b)) / len(flat_a)
        out = {"blurhash": theirs_blur,
               "blurhashError": mean_error(blurhash.decode(ours_blur, 32, 32), blurhash.decode(theirs_blur, 32, 32))}
        ours_thumb_bytes = list(base64.b64decode(ours_thumb))
        ow, oh, ours_decoded = thumbhash.thumb_hash_to_rgba(ours_thumb_bytes)
        out["thumbhashSize"] = [ow, oh]
        out["thumbhashMeanAlpha"] = sum(ours_decoded[3::4]) / (ow * oh) / 255
        out["sourceMeanAlpha"] = sum(rgba[3::4]) / (w * h) / 255
        if not has_alpha:
            theirs_thumb = thumbhash.rgba_to_thumb_hash(w, h, rgba)
            out["thumbhash"] = base64.b64encode(bytes(theirs_thumb)).decode()
            tw, th, theirs_decoded = thumbhash.thumb_hash_to_rgba(theirs_thumb)
            out["thumbhashError"] = sum(abs(p - q) for p, q in zip(ours_decoded, theirs_decoded)) / len(ours_decoded)
        print(json.dumps(out))
        """

    struct Reference: Decodable {
        var blurhash: String
        var blurhashError: Double
        var thumbhash: String?
        var thumbhashError: Double?
        var thumbhashSize: [Int]
        var thumbhashMeanAlpha: Double
        var sourceMeanAlpha: Double
    }

    /// The script's JSON: its last line (thumbhash 0.1.2's decoder prints the aspect ratio on lines of its own).
    static func reference(_ output: Data) throws -> Reference {
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
        return try JSONDecoder().decode(Reference.self, from: Data(try #require(lines.last).utf8))
    }

    enum Picture: String, CaseIterable, CustomTestStringConvertible {
        case photo = "photo.jpg", screenshot = "screenshot.png", alpha = "alpha.png", sticker = "sticker.webp", gradient
        var testDescription: String { rawValue }
    }

    /// The previews an upload makes for `picture` (a photo's 320 and 40 px thumbnails, or a sticker's).
    static func previews(_ picture: Picture) throws -> (ImagePreviews, ImageRecompressor) {
        let recompressor = ImageRecompressor()
        let data: [UInt8]
        if picture == .gradient {
            // A wide picture with strong horizontal and vertical structure: 600 × 150, RGB.
            var samples: [UInt8] = []
            for y in 0..<150 { for x in 0..<600 { samples += [UInt8(x * 255 / 599), UInt8(y * 255 / 149), UInt8((x / 50 + y / 50) % 2 * 200)] } }
            data = TestImages.png(width: 600, height: 150, colourType: 2, samples: samples)
        } else {
            data = [UInt8](try Data(contentsOf: samples.appendingPathComponent(picture.rawValue)))
        }
        return (try recompressor.previews(ofImage: data, sides: [320, 40]), recompressor)
    }

    @Test("BlurHash and ThumbHash agree with the PyPI reference implementations fed the same pixels", arguments: Picture.allCases)
    func referenceImplementations(_ picture: Picture) async throws {
        let python = try python(with: ["blurhash", "thumbhash"])
        let (previews, _) = try Self.previews(picture)
        let placeholders = try #require(previews.placeholders)
        let source = try #require(previews.placeholderSource).expandedToRGBA()
        #expect(max(source.width, source.height) == StrippedThumbnail.side)
        #expect(placeholders.blurhash.count == 28, "4×3 components: 28 characters")
        let folder = try ScratchFolder(prefix: "attache-placeholders")
        defer { folder.remove() }
        let pixels = try folder.write("pixels.rgba", source.pixels)
        let script = try folder.write("reference.py", Self.referenceScript)
        let output = try await run(
            python, [script, pixels, "\(source.width)", "\(source.height)", "4", "3", placeholders.blurhash, placeholders.thumbhash])
        let reference = try Self.reference(output)

        // BlurHash: the same string, or one that differs only in the last AC digit pair, where a value on a
        // quantisation step rounds the other way after floating-point sums in another order. Here the basis
        // and the order of the sums are the reference's, and the strings are identical.
        #expect(placeholders.blurhash == reference.blurhash)
        #expect(placeholders.blurhash.dropLast(2) == reference.blurhash.dropLast(2))
        #expect(reference.blurhashError < 1, "decoded ours vs theirs, mean error in 0…255")

        if let theirs = reference.thumbhash {
            // ThumbHash: the same bytes, or one differing in the last AC nibble (the reference rounds halves to
            // even, the algorithm's description half up). Identical here.
            #expect(placeholders.thumbhash == theirs)
            #expect(try #require(reference.thumbhashError) < 1, "decoded ours vs theirs, mean error in 0…255")
        } else {
            // thumbhash 0.1.2 cannot encode pictures with alpha (its alpha channel assignment is a tuple), so
            // for those only its decoder judges ours: the alpha it decodes matches the picture's.
            #expect(abs(reference.thumbhashMeanAlpha - reference.sourceMeanAlpha) < 0.08,
                    "\(reference.thumbhashMeanAlpha) vs \(reference.sourceMeanAlpha)")
        }
        // The decoded ThumbHash has the picture's aspect ratio (to the precision of its component counts).
        let ratio = Double(reference.thumbhashSize[0]) / Double(reference.thumbhashSize[1])
        let sourceRatio = Double(source.width) / Double(source.height)
        #expect(abs(log(ratio / sourceRatio)) < 0.45, "\(reference.thumbhashSize) vs \(source.width)×\(source.height)")
    }

    @Test("other component counts: 4×4 is 36 characters, 1×1 is 6, and both match the reference",
          arguments: [(4, 4, 36), (1, 1, 6), (9, 9, 6 + 2 * 80)])
    func components(_ x: Int, _ y: Int, _ length: Int) async throws {
        let python = try python(with: ["blurhash", "thumbhash"])
        let (previews, _) = try Self.previews(.photo)
        let source = try #require(previews.placeholderSource)
        let rgb = source.channels == 3 ? source : source.expandedToRGBA().compositedOnWhite()
        let ours = BlurHash.encode(rgb: rgb.pixels, width: rgb.width, height: rgb.height, componentsX: x, componentsY: y)
        #expect(ours.count == length)
        let folder = try ScratchFolder(prefix: "attache-placeholders")
        defer { folder.remove() }
        let pixels = try folder.write("pixels.rgba", source.expandedToRGBA().pixels)
        let script = try folder.write("reference.py", Self.referenceScript)
        let output = try await run(
            python, [script, pixels, "\(source.width)", "\(source.height)", "\(x)", "\(y)", ours, previews.placeholders!.thumbhash])
        let reference = try Self.reference(output)
        #expect(ours == reference.blurhash)
    }

    @Test("the stripped thumbnail, rebuilt with Telegram's header template, is a JPEG ImageMagick decodes at the right size",
          arguments: Picture.allCases)
    func strippedThumbnail(_ picture: Picture) async throws {
        #expect(Self.telegramHeader.count == 623)
        let (previews, _) = try Self.previews(picture)
        let source = try #require(previews.placeholderSource)
        let stripped = try #require(Base64.decode(try #require(previews.placeholders?.stripped), alphabet: .standard))
        #expect(stripped[0] == 1 && Int(stripped[1]) == source.height && Int(stripped[2]) == source.width)
        #expect(stripped.count < 1000, "a few hundred bytes: \(stripped.count)")
        var jpeg = Self.telegramHeader
        jpeg[164] = stripped[1]
        jpeg[166] = stripped[2]
        jpeg += stripped[3...] + [0xFF, 0xD9]
        let folder = try ScratchFolder(prefix: "attache-stripped")
        defer { folder.remove() }
        let path = try folder.write("rebuilt.jpg", jpeg)
        let identify = String(decoding: try await run("identify", ["-regard-warnings", "-format", "%m %w %h", path]), as: UTF8.self)
        #expect(identify == "JPEG \(source.width) \(source.height)")
        // And it is the picture: decoded by ImageMagick, exactly what the whole JPEG our encoder made decodes
        // to (so Telegram's header holds the tables the scan was coded with), and near the pixels it was made
        // from (quality 20 at 40 px: hard edges ring).
        let decoded = [UInt8](try await run("convert", ["-regard-warnings", path, "-depth", "8", "rgb:-"]))
        let rgb = source.channels == 4 ? source.compositedOnWhite() : source.expandedToRGBA().compositedOnWhite()
        let whole = try folder.write("whole.jpg", try TurboJPEGEncoder().encode(packed: rgb, quality: 20, progressive: false))
        #expect(decoded == [UInt8](try await run("convert", ["-regard-warnings", whole, "-depth", "8", "rgb:-"])))
        try #require(decoded.count == rgb.pixels.count)
        let error = zip(decoded, rgb.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
        #expect(Double(error) / Double(decoded.count) < 40, "mean error \(Double(error) / Double(decoded.count))")
    }

    @Test("no placeholders when the options turn them off or no preview is made")
    func off() throws {
        var options = ImageRecompressor.Options()
        options.placeholders = nil
        let data = [UInt8](try Data(contentsOf: Self.samples.appendingPathComponent("photo.jpg")))
        #expect(try ImageRecompressor(options: options).previews(ofImage: data, sides: [320, 40]).placeholders == nil)
        #expect(try ImageRecompressor().previews(ofImage: data, sides: []).placeholders == nil)
        #expect(try ImageRecompressor().recompress(data, thumbnailSides: [320, 40]).placeholders != nil)
    }
}
