import Foundation
import AttacheTestSupport
import Testing

@testable import Attache
@testable import AttacheCore

/// Hostile and truncated input must give an answer, never a trap. A failure here is a crash of the
/// test process, so each case is small and named.
@Suite("Detect: hostile and truncated input")
struct RobustnessTests {
    static let cuts = [0, 1, 2, 3, 4, 5, 7, 8, 11, 12, 13, 16, 20, 24, 27, 28, 30, 31, 32, 36, 40, 44, 48, 64, 100, 128, 200, 300, 512, 1000, 2048, 4095]

    @Test("every corpus file cut short", arguments: DetectionCorpus.files)
    func truncated(_ file: DetectionCorpus.File) throws {
        let bytes = try CorpusFolder.bytes(file.name)
        let detector = MIMEDetector()
        for cut in Self.cuts where cut < bytes.count {
            let prefix = Array(bytes.prefix(cut))
            _ = try detector.detect(contents: prefix, filename: file.name)
            _ = detector.detect(prefix: prefix, filename: nil)
        }
    }

    @Test("every corpus file with corrupted bytes", arguments: DetectionCorpus.files)
    func corrupted(_ file: DetectionCorpus.File) throws {
        let original = try CorpusFolder.bytes(file.name)
        guard !original.isEmpty else { return }
        var generator = SeededGenerator(seed: UInt64(original.count))
        let detector = MIMEDetector()
        for round in 0..<64 {
            var bytes = original
            // Early bytes hold the headers and sizes; corrupt there most of the time.
            let span = round % 2 == 0 ? min(bytes.count, 64) : bytes.count
            for _ in 0..<(1 + round % 4) {
                let index = Int(generator.next() % UInt64(span))
                bytes[index] = [0x00, 0xFF, 0x7F, 0x80, UInt8(truncatingIfNeeded: generator.next())][round % 5]
            }
            _ = try detector.detect(contents: bytes, filename: file.name)
        }
    }

    @Test("truncated images keep their type", arguments: ["photo.jpg", "image.png", "still.gif", "lossy.webp"])
    func truncatedImage(_ name: String) throws {
        let bytes = try CorpusFolder.bytes(name)
        let detection = try MIMEDetector().detect(contents: Array(bytes.prefix(40)), filename: name)
        #expect(detection.mimeType == (try MIMEDetector().detect(contents: bytes, filename: name).mimeType))
    }

    @Test("tiny inputs", arguments: [[], [0], [0xFF], [0xFF, 0xD8], [0xFF, 0xD8, 0xFF], [0x1F, 0x8B, 0x08], [0x50, 0x4B, 0x03, 0x04]] as [[UInt8]])
    func tiny(_ bytes: [UInt8]) throws {
        let detection = try MIMEDetector().detect(contents: bytes, filename: nil)
        #expect(!detection.mimeType.isEmpty)
    }

    static let hostile: [(String, [UInt8])] = [
        // An ISO box whose 64-bit length is 2^64 - 1, and one that claims 2^63.
        ("box2^64", be32(24) + Array("ftypisom".utf8) + be32(0) + Array("isom".utf8) + be32(1) + Array("moov".utf8) + [UInt8](repeating: 0xFF, count: 8) + be32(8) + Array("trak".utf8)),
        ("box2^63", be32(16) + Array("ftypmp42".utf8) + be32(0) + be32(1) + Array("moov".utf8) + [0x80, 0, 0, 0, 0, 0, 0, 0] + be32(0) + Array("trak".utf8)),
        // Nested boxes of size zero ("to the end") all the way down.
        ("zero-size", be32(16) + Array("ftypM4A ".utf8) + be32(0) + be32(0) + Array("moov".utf8) + be32(0) + Array("trak".utf8) + be32(0) + Array("mdia".utf8) + be32(0) + Array("minf".utf8)),
        // EBML with unknown sizes everywhere and an 8-byte size of 2^56 - 2.
        ("ebml", [0x1A, 0x45, 0xDF, 0xA3, 0x84, 0x42, 0x82, 0x84] + Array("webm".utf8) + [0x18, 0x53, 0x80, 0x67, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE, 0x16, 0x54, 0xAE, 0x6B, 0xFF, 0xAE, 0xFF, 0x83]),
        // An Ogg page whose segment table runs past the end.
        ("ogg", Array("OggS".utf8) + [0, 2] + [UInt8](repeating: 0, count: 20) + [255] + [UInt8](repeating: 255, count: 10)),
        // A GIF with a full global colour table and nothing after it.
        ("gif", Array("GIF89a".utf8) + [0xFF, 0xFF, 0xFF, 0xFF, 0xF7, 0, 0]),
        // An ID3 tag claiming 256 MB.
        ("id3", Array("ID3".utf8) + [4, 0, 0, 0x7F, 0x7F, 0x7F, 0x7F]),
        // A zip that is only an end-of-central-directory record pointing before the file.
        ("eocd", [0x50, 0x4B, 0x05, 0x06] + [UInt8](repeating: 0xFF, count: 18)),
        // An OLE header with a directory sector far beyond the end and a huge sector shift.
        ("ole", [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1] + [UInt8](repeating: 0, count: 22) + [12, 0] + [UInt8](repeating: 0, count: 16) + [0xF0, 0xFF, 0xFF, 0x7F] + [UInt8](repeating: 0xFF, count: 460)),
        // WebP VP8X whose chunk sizes are 4 GB.
        ("webp", Array("RIFF".utf8) + [0xFF, 0xFF, 0xFF, 0xFF] + Array("WEBPVP8X".utf8) + [0xFF, 0xFF, 0xFF, 0xFF, 0x12, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
        // A JPEG whose segments have length 0 and 1.
        ("jpeg", [0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x01]),
        // A PNG with a chunk length of 2^32 - 1.
        ("png", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0xFF, 0xFF, 0xFF, 0xFF] + Array("acTL".utf8)),
        // gzip whose deflate stream is garbage, and one with every flag set.
        ("gzip", [0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0, 3, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
        ("gzip-flags", [0x1F, 0x8B, 0x08, 0x1E, 0, 0, 0, 0, 0, 3, 0xFF, 0xFF]),
        // A deflate block of stored type whose length check fails, then a dynamic block with no codes.
        ("deflate", [0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0, 3, 0x00, 0x05, 0x00, 0x00, 0x00, 0x05]),
        // WAV with a data chunk larger than the file, CAF with a negative chunk size.
        ("wav", Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WAVEdata".utf8) + [0xFF, 0xFF, 0xFF, 0xFF]),
        ("caf", Array("caff".utf8) + [0, 1, 0, 0] + Array("data".utf8) + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
        // A TIFF whose IFD offset points at itself and claims 65535 entries.
        ("tiff", [0x49, 0x49, 0x2A, 0x00, 0x04, 0x00, 0x00, 0x00, 0xFF, 0xFF]),
        // An MPEG audio frame header at the very end.
        ("mp3", [0xFF, 0xFB, 0x90, 0x64]),
        // JSON nested ten thousand levels deep.
        ("json", [UInt8](repeating: 0x5B, count: 10_000)),
    ]

    @Test("hostile headers", arguments: hostile.map(\.0))
    func hostileHeaders(_ name: String) throws {
        let bytes = try #require(Self.hostile.first { $0.0 == name }).1
        _ = try MIMEDetector().detect(contents: bytes, filename: nil)
        _ = MIMEDetector().detect(prefix: bytes, filename: nil)
        let path = CorpusFolder.write(bytes, name: "hostile-\(name)")
        _ = try MIMEDetector().detect(fileAt: path)
    }

    /// Inputs the fuzzer (Scripts/fuzz.sh) found to crash, kept as they were found.
    static let fuzzCrashers: [(String, String)] = [
        // A HEIC whose `ispe` says 0xFFFFFFFF × 0xFFFFFFFF: the area overflowed Int.
        ("heic-ispe-overflow", """
            AAAAHGZ0eXBoZWljAAAAAG1pZjFoZWljbWlhZgAAAaptZXRhAAAAAAAAACFoZGxyAAAAAAAAAABwaWN0AAAAAAAAAAAAAAAA
            AAAAAA5waXRtAAAAAAACAAAAEGlkYXQAAAAAADAAIAAAADhpbG9jAQAAAERAAAIAAQAAAAAAAAHOAAEAAAAAAAAALgACAAEA
            AAAAAAAAAQAAAAAAAAAIAAAAOGlpbmYAAAAAAAIAAAAVaW5mZQIAAAEAAQAAaHZjMQAAAAAVaW5mZQIAAAAAAgAAZ3JpZAAA
            AADVaXBycAAAALNpcGNvAAAAc2h2Y0MBA3AAAAAAAAAAAAAe8AD8/fj4AAAPAyAAAQAYQAEMAf//A3AAAAMAkAAAAwAAAwAe
            ugJAIQABACdCAQEDcAAAAwCQAAADAAADAB6gIIEFlurkprmwIAAAAwAgAAADACEiAAEABkQBwXPAiQAAABRpc3BlAAD/////
            /////////////////////////////wAAAAAAQAAAAEAAAAAUaXNwZQAAAAAAAAAwAAAAIAAAABBwaXhpAAAAAAMICAgAAAAa
            aXBtYQAAAAAAAAACAAECgQIAAgIDhAAAABppcmVmAAAAAAAAAA5kaW1nAAIAAQABAAAANm1kYXQAAAAqKAGvE4D1KxPKlyJe
            qrr5bIpuFdsqFSsy3vH2uQAMsRLU1NeAtV/8q6r4
            """),
    ]

    @Test("fuzzer crashers stay fixed", arguments: fuzzCrashers.map(\.0))
    func fuzzCrasher(_ name: String) throws {
        let encoded = try #require(Self.fuzzCrashers.first { $0.0 == name }).1
        let bytes = [UInt8](try #require(Data(base64Encoded: encoded, options: .ignoreUnknownCharacters)))
        let detection = try MIMEDetector().detect(contents: bytes, filename: nil)
        #expect(detection.mimeType == "image/heic")
    }

    @Test("overflow-prone values from headers give an answer")
    func overflowProneHeaders() throws {
        // Lottie sizes far beyond Int, a CAF whose packets hold 2^32 - 1 frames each.
        let lottie = Array(#"{"tgs":1,"v":"5.5.2","fr":60,"ip":0,"op":60,"w":99999999999999999999999,"h":1}"#.utf8)
        var gzip: [UInt8] = [0x1F, 0x8B, 0x08, 0, 0, 0, 0, 0, 0, 3, 0x01]
        gzip += [UInt8(lottie.count & 0xFF), UInt8(lottie.count >> 8), UInt8(~lottie.count & 0xFF), UInt8((~lottie.count >> 8) & 0xFF)]
        gzip += lottie
        let sticker = try MIMEDetector().detect(contents: gzip, filename: nil)
        #expect(sticker.mimeType == "application/x-tgsticker")
        #expect(sticker.metadata.width == nil)

        var caf = Array("caff".utf8) + [0, 1, 0, 0] + Array("desc".utf8) + [0, 0, 0, 0, 0, 0, 0, 32]
        caf += [0x40, 0xBF, 0x40, 0, 0, 0, 0, 0] + Array("lpcm".utf8) + [0, 0, 0, 0] + [0, 0, 0, 1] + [0xFF, 0xFF, 0xFF, 0xFF] + [0, 0, 0, 1] + [0, 0, 0, 16]
        caf += Array("data".utf8) + [UInt8](repeating: 0xFF, count: 8) + [UInt8](repeating: 0, count: 64)
        let audio = try MIMEDetector().detect(contents: caf, filename: nil)
        #expect(audio.mimeType == "audio/x-caf")
        #expect(MediaMetadata.format(.infinity) == "0.00")
        #expect(MediaMetadata.format(1e300) == "1000000000000000.00")
    }

    private static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
}
