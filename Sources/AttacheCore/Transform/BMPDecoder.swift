/// A decoder for the uncompressed BMP variants screenshots and old tools write: 24-bit BGR and 32-bit
/// BGRA/BGRX, bottom-up or top-down. Anything else is reported as unsupported.
enum BMPDecoder {
    struct Header {
        var width: Int
        var height: Int
        var topDown: Bool
        var bitsPerPixel: Int
        var pixelOffset: Int
        var hasAlpha: Bool

        init(_ data: [UInt8]) throws {
            func u16(_ at: Int) -> Int { Int(data[at]) | Int(data[at + 1]) << 8 }
            func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
            guard data.count >= 54, u32(14) >= 40 else {
                throw AttacheError(.corruptInput, stage: .transform, "the BMP header is truncated or too old")
            }
            pixelOffset = u32(10)
            width = Int(Int32(truncatingIfNeeded: u32(18)))
            let rawHeight = Int(Int32(truncatingIfNeeded: u32(22)))
            topDown = rawHeight < 0
            height = abs(rawHeight)
            bitsPerPixel = u16(28)
            let compression = u32(30)
            // BI_RGB, or BI_BITFIELDS with the usual masks, which 32-bit files from most tools use.
            guard (bitsPerPixel == 24 && compression == 0) || (bitsPerPixel == 32 && (compression == 0 || compression == 3)),
                  u16(26) == 1
            else {
                throw AttacheError(.unsupportedInput, stage: .transform,
                                   "only uncompressed 24- and 32-bit BMP images are supported")
            }
            hasAlpha = bitsPerPixel == 32 && u32(14) >= 56 && compression == 3 && data.count >= 70
                && u32(54 + 12) == 0xFF00_0000
            guard width > 0, height > 0 else {
                throw AttacheError(.corruptInput, stage: .transform, "the BMP header declares no pixels")
            }
        }
    }

    static func decode(_ data: [UInt8]) throws -> Raster {
        let header = try Header(data)
        let bytesPerPixel = header.bitsPerPixel / 8
        let rowBytes = (header.width * bytesPerPixel + 3) & ~3
        guard header.pixelOffset >= 0, header.pixelOffset + rowBytes * header.height <= data.count else {
            throw AttacheError(.corruptInput, stage: .transform, "the BMP pixel data is truncated")
        }
        let channels = header.hasAlpha ? 4 : 3
        var raster = Raster(width: header.width, height: header.height, channels: channels)
        for y in 0..<header.height {
            let sourceRow = header.topDown ? y : header.height - 1 - y
            let rowStart = header.pixelOffset + sourceRow * rowBytes
            for x in 0..<header.width {
                let s = rowStart + x * bytesPerPixel
                let d = (y * header.width + x) * channels
                raster.pixels[d] = data[s + 2]
                raster.pixels[d + 1] = data[s + 1]
                raster.pixels[d + 2] = data[s]
                if channels == 4 { raster.pixels[d + 3] = data[s + 3] }
            }
        }
        return raster
    }
}

extension BMPDecoder {
    /// Calls `body` with each row of the picture, top to bottom, as RGB or straight RGBA
    /// (`width × 3` or `× 4` bytes, valid during the call); the rows are converted one at a time from
    /// the file, which already holds them uncompressed.
    static func forEachRow(_ data: [UInt8], header: Header, _ body: (UnsafePointer<UInt8>) -> Void) throws {
        let bytesPerPixel = header.bitsPerPixel / 8
        let rowBytes = (header.width * bytesPerPixel + 3) & ~3
        guard header.pixelOffset >= 0, header.pixelOffset + rowBytes * header.height <= data.count else {
            throw AttacheError(.corruptInput, stage: .transform, "the BMP pixel data is truncated")
        }
        let channels = header.hasAlpha ? 4 : 3
        let row = UnsafeMutablePointer<UInt8>.allocate(capacity: header.width * channels)
        defer { row.deallocate() }
        data.withUnsafeBufferPointer { file in
            for y in 0..<header.height {
                let sourceRow = header.topDown ? y : header.height - 1 - y
                let source = file.baseAddress! + header.pixelOffset + sourceRow * rowBytes
                for x in 0..<header.width {
                    let s = source + x * bytesPerPixel, d = row + x * channels
                    d[0] = s[2]
                    d[1] = s[1]
                    d[2] = s[0]
                    if channels == 4 { d[3] = s[3] }
                }
                body(row)
            }
        }
    }
}

extension BMPDecoder {
    /// The 54-byte header of an uncompressed top-down 24-bit BMP of `width` × `height` pixels (rows of
    /// `width × 3` bytes padded to 4 follow it).
    static func header(width: Int, height: Int) -> [UInt8] {
        let rowBytes = (width * 3 + 3) & ~3
        var header = [UInt8](repeating: 0, count: 54)
        func put(_ value: UInt32, at offset: Int, bytes: Int = 4) {
            for i in 0..<bytes { header[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
        }
        header[0] = UInt8(ascii: "B")
        header[1] = UInt8(ascii: "M")
        put(UInt32(truncatingIfNeeded: 54 + rowBytes * height), at: 2)
        put(54, at: 10)
        put(40, at: 14)
        put(UInt32(truncatingIfNeeded: width), at: 18)
        put(UInt32(bitPattern: Int32(truncatingIfNeeded: -height)), at: 22)  // negative: top-down rows
        put(1, at: 26, bytes: 2)
        put(24, at: 28, bytes: 2)
        put(UInt32(truncatingIfNeeded: rowBytes * height), at: 34)
        return header
    }
}
