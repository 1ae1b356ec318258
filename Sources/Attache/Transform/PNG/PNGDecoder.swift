internal import CPNG

/// Reads a PNG through libpng's simplified API, which handles every bit depth, palette, grey, tRNS and
/// interlacing, and reduces 16-bit samples to 8-bit sRGB correctly.
///
/// The header is read in `init`, so a caller can refuse an oversized image before any pixel buffer exists.
/// The `png_image` and a copy of the file live at fixed heap addresses because libpng keeps pointers
/// to both between `begin_read` and `finish_read`.
final class PNGDecoder {
    private let image: UnsafeMutablePointer<png_image>
    private let data: UnsafeMutableRawBufferPointer
    let width: Int
    let height: Int
    let hasAlpha: Bool

    init(_ data: [UInt8]) throws {
        self.data = .allocate(byteCount: max(data.count, 1), alignment: 16)
        _ = self.data.initializeMemory(as: UInt8.self, from: data)
        image = .allocate(capacity: 1)
        attache_png_image_init(image)
        let ok = png_image_begin_read_from_memory(image, self.data.baseAddress, data.count)
        guard ok != 0 else {
            let text = Self.message(of: image)
            let code = Int(image.pointee.warning_or_error)
            png_image_free(image)
            image.deallocate()
            self.data.deallocate()
            throw AttacheError(.corruptInput, stage: .transform, "cannot read the PNG header: \(text)",
                               cause: NativeError(library: "png", code: code, text: text))
        }
        width = Int(image.pointee.width)
        height = Int(image.pointee.height)
        hasAlpha = (image.pointee.format & PNG_FORMAT_FLAG_ALPHA) != 0
    }

    deinit {
        png_image_free(image)
        image.deallocate()
        data.deallocate()
    }

    /// Decodes to 8-bit RGBA, or to RGB composited onto white when `onWhite` is set.
    func decode(onWhite: Bool) throws -> Raster {
        // PNG_FORMAT_RGBA is a compound macro that Swift does not import.
        image.pointee.format = onWhite ? PNG_FORMAT_FLAG_COLOR : (PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)
        let channels = onWhite ? 3 : 4
        var raster = Raster(width: width, height: height, channels: channels)
        var white = png_color(red: 255, green: 255, blue: 255)
        let image = image
        let ok = withUnsafePointer(to: &white) { background in
            raster.pixels.withUnsafeMutableBytes { buffer in
                png_image_finish_read(image, onWhite ? background : nil, buffer.baseAddress,
                                      Int32(width * channels), nil)
            }
        }
        guard ok != 0 else {
            let text = Self.message(of: image)
            throw AttacheError(.corruptInput, stage: .transform, "cannot decode the PNG image: \(text)",
                               cause: NativeError(library: "png", code: Int(image.pointee.warning_or_error), text: text))
        }
        return raster
    }

    private static func message(of image: UnsafeMutablePointer<png_image>) -> String {
        withUnsafeBytes(of: &image.pointee.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
