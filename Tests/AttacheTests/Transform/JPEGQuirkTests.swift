import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// JPEGs with the harmless defects libjpeg only warns about: every image tool opens them, and so must the
/// Transform stage, on each of its decode paths.
@Suite struct JPEGQuirkTests {
    enum Quirk: String, CaseIterable {
        /// Two stray bytes between the JFIF segment and the quantisation tables.
        case strayBytesBeforeDQT
        /// Two stray bytes between the entropy-coded data and EOI.
        case strayBytesBeforeEOI
        /// JFIF version 2.01 ("unknown JFIF revision number").
        case jfif201
    }

    static func applying(_ quirk: Quirk, to jpeg: [UInt8]) throws -> [UInt8] {
        var bytes = jpeg
        switch quirk {
        case .strayBytesBeforeDQT:
            let markers: Range<Int> = 2..<(bytes.count - 1)
            let dqt = try #require(markers.first { (i: Int) -> Bool in bytes[i] == 0xFF && bytes[i + 1] == 0xDB })
            bytes.insert(contentsOf: [0x12, 0x34], at: dqt)
        case .strayBytesBeforeEOI:
            #expect(Array(bytes.suffix(2)) == [0xFF, 0xD9])
            bytes.insert(contentsOf: [0x12, 0x34], at: bytes.count - 2)
        case .jfif201:
            // TurboJPEG writes APP0 "JFIF\0" first, version 1.01 at bytes 11 and 12.
            let app0: [UInt8] = [0xFF, 0xE0, 0x00, 0x10] + Array("JFIF\0".utf8)
            #expect(Array(bytes[2...10]) == app0)
            bytes[11] = 2
            bytes[12] = 1
        }
        return bytes
    }

    @Test("libjpeg warns but the header is read", arguments: Quirk.allCases)
    func headerIsRead(quirk: Quirk) throws {
        let jpeg = try Self.applying(quirk, to: try TestImages.jpeg(TestImages.photo(width: 640, height: 480)))
        let header = try TurboJPEGDecoder().header(jpeg)
        #expect(header.width == 640 && header.height == 480)
        let markers = try #require(JPEGMarkers(jpeg))
        #expect(markers.scanCount == 1)
    }

    @Test("a downscaled photo with the quirk is recompressed (streamed decode)", arguments: Quirk.allCases)
    func downscaledPhotoIsRecompressed(quirk: Quirk) throws {
        let jpeg = try Self.applying(quirk, to: try TestImages.jpeg(TestImages.photo(width: 640, height: 480)))
        var options = ImageRecompressor.Options()
        options.maxSide = 320
        let outcome = try ImageRecompressor(options: options).recompress(jpeg, thumbnailSides: [40])
        let decoded = try TestImages.decodeJPEG(try #require(outcome.bytes))
        #expect(decoded.width == 320 && decoded.height == 240)
        #expect(outcome.thumbnails.count == 1)
        // The picture itself came through: a corner's colour matches the source's.
        let source = TestImages.photo(width: 640, height: 480)
        #expect(TestImages.isClose(TestImages.average(decoded, x: 150, y: 110, size: 20),
                                   TestImages.average(source, x: 300, y: 220, size: 40), within: 12))
    }

    @Test("a small photo with the quirk passes through as a clean, decodable JPEG", arguments: Quirk.allCases)
    func smallPhotoPassesThrough(quirk: Quirk) throws {
        let jpeg = try Self.applying(quirk, to: try TestImages.jpeg(TestImages.solid(width: 320, height: 240, [90, 140, 200]), quality: 70))
        let outcome = try ImageRecompressor().recompress(jpeg, thumbnailSides: [])
        #expect(outcome.result.passedThrough)
        let sent = outcome.bytes ?? jpeg
        let decoded = try TestImages.decodeJPEG(sent)
        #expect(decoded.width == 320 && decoded.height == 240)
        if quirk == .strayBytesBeforeDQT {
            // Stray bytes between segments are left out of what is sent.
            #expect(sent.count == jpeg.count - 2)
        }
    }

    @Test("a sticker from a JPEG with the quirk is made (TurboJPEG packed decode)", arguments: Quirk.allCases)
    func stickerIsMade(quirk: Quirk) throws {
        let jpeg = try Self.applying(quirk, to: try TestImages.jpeg(TestImages.photo(width: 640, height: 480)))
        let outcome = try ImageRecompressor().makeSticker(jpeg, thumbnailSides: [])
        let webp = try #require(outcome.bytes)
        let header = try WebPHeader(webp)
        #expect(header.width == 512 && header.height == 384)
    }
}
