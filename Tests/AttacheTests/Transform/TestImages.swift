import Foundation
@testable import Attache
@testable import AttacheCore

/// Builds test images in memory: pixel patterns, JPEGs through the library's encoder, and PNGs through a
/// tiny independent writer (stored deflate blocks), so that no binary fixtures are needed.
enum TestImages {
    /// A raster filled with `colour`.
    static func solid(width: Int, height: Int, _ colour: [UInt8]) -> Raster {
        var raster = Raster(width: width, height: height, channels: colour.count)
        for i in 0..<(width * height) {
            for k in 0..<colour.count { raster.pixels[i * colour.count + k] = colour[k] }
        }
        return raster
    }

    /// Paints a `size`-pixel square of `colour` with its corner at (`x`, `y`).
    static func paint(_ raster: inout Raster, x: Int, y: Int, size: Int, _ colour: [UInt8]) {
        for yy in y..<min(y + size, raster.height) {
            for xx in x..<min(x + size, raster.width) {
                for k in 0..<raster.channels { raster.pixels[(yy * raster.width + xx) * raster.channels + k] = colour[k] }
            }
        }
    }

    /// A photo-like RGB pattern: smooth gradients with fine detail, deterministic.
    static func photo(width: Int, height: Int) -> Raster {
        var raster = Raster(width: width, height: height, channels: 3)
        for y in 0..<height {
            for x in 0..<width {
                let fx = Double(x) / Double(width), fy = Double(y) / Double(height)
                let detail = sin(Double(x) * 0.15) * cos(Double(y) * 0.11) * 30
                let i = (y * width + x) * 3
                raster.pixels[i] = UInt8(clamping: Int(40 + 170 * fx + detail))
                raster.pixels[i + 1] = UInt8(clamping: Int(60 + 140 * fy - detail))
                raster.pixels[i + 2] = UInt8(clamping: Int(200 - 120 * fx * fy + detail / 2))
            }
        }
        return raster
    }

    static func jpeg(_ raster: Raster, quality: Int = 90, progressive: Bool = false) throws -> [UInt8] {
        try TurboJPEGEncoder().encode(packed: raster, quality: quality, progressive: progressive)
    }

    /// Decodes a JPEG at full size to RGB.
    static func decodeJPEG(_ bytes: [UInt8]) throws -> Raster {
        let decoder = try TurboJPEGDecoder()
        let header = try decoder.header(bytes)
        return try decoder.decodePacked(bytes, scaledWidth: header.width, scaledHeight: header.height,
                                        format: .rgb, flags: 0)
    }

    /// Inserts extra segments right after SOI.
    static func withSegments(_ jpeg: [UInt8], _ segments: [[UInt8]]) -> [UInt8] {
        var out = Array(jpeg[..<2])
        for segment in segments { out += segment }
        return out + jpeg[2...]
    }

    static func segment(_ marker: UInt8, _ body: [UInt8]) -> [UInt8] {
        let length = body.count + 2
        return [0xFF, marker, UInt8(length >> 8), UInt8(length & 0xFF)] + body
    }

    /// The average colour of a `size`-square at (`x`, `y`).
    static func average(_ raster: Raster, x: Int, y: Int, size: Int) -> [Double] {
        var sums = [Double](repeating: 0, count: raster.channels)
        for yy in y..<(y + size) {
            for xx in x..<(x + size) {
                for k in 0..<raster.channels { sums[k] += Double(raster.pixels[(yy * raster.width + xx) * raster.channels + k]) }
            }
        }
        return sums.map { $0 / Double(size * size) }
    }

    static func isClose(_ a: [Double], _ b: [Double], within tolerance: Double) -> Bool {
        zip(a, b).allSatisfy { abs($0 - $1) <= tolerance }
    }

    // MARK: PNG writer

    /// Writes a PNG. `colourType`: 0 grey, 2 RGB, 3 palette, 4 grey+alpha, 6 RGBA. `samples` are raw
    /// (big-endian for 16-bit) scanlines without filter bytes.
    static func png(width: Int, height: Int, bitDepth: UInt8 = 8, colourType: UInt8, samples: [UInt8],
                    palette: [UInt8]? = nil) -> [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        out += chunk("IHDR", be32(width) + be32(height) + [bitDepth, colourType, 0, 0, 0])
        if let palette { out += chunk("PLTE", palette) }
        let rowBytes = samples.count / height
        var raw: [UInt8] = []
        for y in 0..<height { raw.append(0); raw += samples[(y * rowBytes)..<((y + 1) * rowBytes)] }
        out += chunk("IDAT", zlibStored(raw))
        out += chunk("IEND", [])
        return out
    }

    /// A valid PNG header chunk declaring `width` × `height`, with a token of image data.
    static func pngBomb(width: Int, height: Int) -> [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        out += chunk("IHDR", be32(width) + be32(height) + [8, 2, 0, 0, 0])
        out += chunk("IDAT", zlibStored([UInt8](repeating: 0, count: 1000)))
        out += chunk("IEND", [])
        return out
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        return be32(data.count) + typed + be32(Int(crc32(typed)))
    }

    static func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            crc ^= UInt32(b)
            for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0xEDB8_8320 : 0) }
        }
        return ~crc
    }

    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let n = min(65535, data.count - offset)
            let final: UInt8 = offset + n == data.count ? 1 : 0
            out += [final, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += data[offset..<(offset + n)]
            offset += n
        } while offset < data.count
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in data { a = (a + UInt32(byte)) % 65521; b = (b + a) % 65521 }
        return out + be32(Int(b << 16 | a))
    }

    // MARK: Files

    /// A fresh directory for one test.
    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "attache-transform-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func write(_ bytes: [UInt8], _ name: String, in directory: String) throws -> String {
        let path = directory + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func read(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let n = Array(needle.utf8)
        guard haystack.count >= n.count else { return false }
        for i in 0...(haystack.count - n.count) where haystack[i] == n[0] {
            if haystack[i..<(i + n.count)].elementsEqual(n) { return true }
        }
        return false
    }
}
