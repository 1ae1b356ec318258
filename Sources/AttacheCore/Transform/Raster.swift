/// An 8-bit image held in memory: `channels` interleaved samples per pixel, rows packed without padding.
///
/// One type serves planes (one channel: a JPEG's Y, Cb or Cr), RGB and premultiplied RGBA images, so the
/// resampler and the orientation code are written once.
struct Raster: Sendable {
    var width: Int
    var height: Int
    var channels: Int
    var pixels: [UInt8]

    init(width: Int, height: Int, channels: Int, pixels: [UInt8]) {
        precondition(pixels.count == width * height * channels, "raster size mismatch")
        self.width = width
        self.height = height
        self.channels = channels
        self.pixels = pixels
    }

    init(width: Int, height: Int, channels: Int, filling value: UInt8 = 0) {
        self.init(width: width, height: height, channels: channels,
                  pixels: [UInt8](repeating: value, count: width * height * channels))
    }

    /// The samples of the pixel at (`x`, `y`).
    subscript(x: Int, y: Int) -> ArraySlice<UInt8> {
        let start = (y * width + x) * channels
        return pixels[start..<start + channels]
    }
}

extension Raster {
    /// Returns the image turned so that it displays upright for an EXIF orientation tag (1–8).
    ///
    /// Values outside 1–8 are treated as 1, as cameras that write garbage there mean "as stored".
    func applyingOrientation(_ orientation: Int) -> Raster {
        guard (2...8).contains(orientation) else { return self }
        let swaps = orientation >= 5
        let outWidth = swaps ? height : width
        let outHeight = swaps ? width : height
        let inWidth = width, inHeight = height, c = channels
        var out = [UInt8](repeating: 0, count: pixels.count)
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<outHeight {
                    for x in 0..<outWidth {
                        // Where the displayed pixel (x, y) is stored, per the EXIF definition of each value.
                        let sx: Int, sy: Int
                        switch orientation {
                        case 2: (sx, sy) = (inWidth - 1 - x, y)
                        case 3: (sx, sy) = (inWidth - 1 - x, inHeight - 1 - y)
                        case 4: (sx, sy) = (x, inHeight - 1 - y)
                        case 5: (sx, sy) = (y, x)
                        case 6: (sx, sy) = (y, inHeight - 1 - x)
                        case 7: (sx, sy) = (inWidth - 1 - y, inHeight - 1 - x)
                        default: (sx, sy) = (inWidth - 1 - y, x)
                        }
                        let s = (sy * inWidth + sx) * c
                        let d = (y * outWidth + x) * c
                        for k in 0..<c { dst[d + k] = src[s + k] }
                    }
                }
            }
        }
        return Raster(width: outWidth, height: outHeight, channels: c, pixels: out)
    }

    /// Composites an RGBA image onto opaque white and returns RGB.
    /// The raster grown to at least `width` × `height`, its last column and row repeated; itself when
    /// it is already that large.
    func padded(width paddedWidth: Int, height paddedHeight: Int) -> Raster {
        guard paddedWidth > width || paddedHeight > height else { return self }
        let newWidth = max(width, paddedWidth)
        let newHeight = max(height, paddedHeight)
        var result = Raster(width: newWidth, height: newHeight, channels: channels)
        let rowCount = width * channels
        let newRowCount = newWidth * channels
        for y in 0..<newHeight {
            let source = min(y, height - 1) * rowCount
            let target = y * newRowCount
            result.pixels.replaceSubrange(target..<(target + rowCount), with: pixels[source..<(source + rowCount)])
            for x in width..<newWidth {
                for c in 0..<channels {
                    result.pixels[target + x * channels + c] = pixels[source + (width - 1) * channels + c]
                }
            }
        }
        return result
    }

    func compositedOnWhite() -> Raster {
        precondition(channels == 4)
        var out = [UInt8](repeating: 0, count: width * height * 3)
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for i in 0..<(width * height) {
                    let a = UInt32(src[i * 4 + 3])
                    for k in 0..<3 {
                        let v = UInt32(src[i * 4 + k]) * a + 255 * (255 - a)
                        dst[i * 3 + k] = UInt8((v + 127) / 255)
                    }
                }
            }
        }
        return Raster(width: width, height: height, channels: 3, pixels: out)
    }

    /// Composites RGBA onto white into RGB, reusing the same storage (each RGB pixel is written at or
    /// before the RGBA pixel it comes from).
    mutating func compositeOnWhiteInPlace() {
        precondition(channels == 4)
        let count = width * height
        pixels.withUnsafeMutableBufferPointer { p in
            for i in 0..<count {
                let a = UInt32(p[i * 4 + 3])
                let r = p[i * 4], g = p[i * 4 + 1], b = p[i * 4 + 2]
                p[i * 3] = UInt8((UInt32(r) * a + 255 * (255 - a) + 127) / 255)
                p[i * 3 + 1] = UInt8((UInt32(g) * a + 255 * (255 - a) + 127) / 255)
                p[i * 3 + 2] = UInt8((UInt32(b) * a + 255 * (255 - a) + 127) / 255)
            }
        }
        pixels.removeLast(count)
        channels = 3
    }

    /// Multiplies colour by alpha, so that resampling does not bleed the colour of invisible pixels.
    mutating func premultiplyAlpha() {
        precondition(channels == 4)
        pixels.withUnsafeMutableBufferPointer { p in
            for i in stride(from: 0, to: p.count, by: 4) {
                let a = UInt32(p[i + 3])
                if a == 255 { continue }
                for k in 0..<3 { p[i + k] = UInt8((UInt32(p[i + k]) * a + 127) / 255) }
            }
        }
    }

    /// Undoes ``premultiplyAlpha()``.
    mutating func unpremultiplyAlpha() {
        precondition(channels == 4)
        pixels.withUnsafeMutableBufferPointer { p in
            for i in stride(from: 0, to: p.count, by: 4) {
                let a = UInt32(p[i + 3])
                if a == 255 { continue }
                if a == 0 {
                    p[i] = 0; p[i + 1] = 0; p[i + 2] = 0
                    continue
                }
                for k in 0..<3 { p[i + k] = UInt8(min(255, (UInt32(p[i + k]) * 255 + a / 2) / a)) }
            }
        }
    }

    /// Expands grey or RGB to RGBA with opaque alpha; RGBA is returned as is.
    func expandedToRGBA() -> Raster {
        if channels == 4 { return self }
        var out = [UInt8](repeating: 255, count: width * height * 4)
        for i in 0..<(width * height) {
            for k in 0..<3 { out[i * 4 + k] = pixels[i * channels + (channels == 1 ? 0 : k)] }
        }
        return Raster(width: width, height: height, channels: 4, pixels: out)
    }
}
