internal import CPNG

/// Reads a PNG through libpng's simplified API, which handles every bit depth, palette, grey, tRNS and
/// interlacing, and reduces 16-bit samples to 8-bit sRGB correctly.
///
/// The header is read in `init`, so a caller can refuse an oversized image before any pixel buffer exists.
final class PNGDecoder {
    private var image = png_image()
    private let data: [UInt8]
    let width: Int
    let height: Int
    let hasAlpha: Bool

    init(_ data: [UInt8]) throws {
        self.data = data
        attache_png_image_init(&image)
        let ok = data.withUnsafeBytes { png_image_begin_read_from_memory(&image, $0.baseAddress, data.count) }
        guard ok != 0 else {
            let text = Self.message(of: &image)
            png_image_free(&image)
            throw AttacheError(.corruptInput, stage: .transform, "cannot read the PNG header: \(text)",
                               cause: NativeError(library: "png", code: Int(image.warning_or_error), text: text))
        }
        width = Int(image.width)
        height = Int(image.height)
        hasAlpha = (image.format & PNG_FORMAT_FLAG_ALPHA) != 0
    }

    deinit { png_image_free(&image) }

    /// Decodes to 8-bit RGBA, or to RGB composited onto white when `onWhite` is set.
    func decode(onWhite: Bool) throws -> Raster {
        // PNG_FORMAT_RGBA is a compound macro that Swift does not import.
        image.format = onWhite ? PNG_FORMAT_FLAG_COLOR : (PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)
        let channels = onWhite ? 3 : 4
        var raster = Raster(width: width, height: height, channels: channels)
        var white = png_color(red: 255, green: 255, blue: 255)
        let ok = withUnsafePointer(to: &white) { background in
            raster.pixels.withUnsafeMutableBytes { buffer in
                png_image_finish_read(&image, onWhite ? background : nil, buffer.baseAddress, Int32(width * channels), nil)
            }
        }
        guard ok != 0 else {
            let text = Self.message(of: &image)
            throw AttacheError(.corruptInput, stage: .transform, "cannot decode the PNG image: \(text)",
                               cause: NativeError(library: "png", code: Int(image.warning_or_error), text: text))
        }
        return raster
    }

    private static func message(of image: inout png_image) -> String {
        withUnsafeBytes(of: &image.message) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
