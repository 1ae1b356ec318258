internal import CPNG

/// Reads a PNG whole through libpng's simplified API, which handles every bit depth, palette, grey, tRNS
/// and interlacing, and reduces 16-bit samples to 8-bit sRGB correctly.
///
/// The Transform stage decodes with ``PNGStreamDecoder``, row by row; this whole-picture decoder is the
/// independent reference the tests hold it to, pixel for pixel.
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
        let data = Self.assumingSRGBWhenUntagged(data)
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
    ///
    /// The compositing is done here on the sRGB values, as browsers and chat clients draw a PNG on a
    /// white page, not by libpng (which composites in linear light and so makes half-transparent areas
    /// visibly lighter than anyone expects). It happens in place, so an opaque result costs no second
    /// buffer.
    func decode(onWhite: Bool) throws -> Raster {
        let opaque = onWhite && !hasAlpha
        // PNG_FORMAT_RGBA is a compound macro that Swift does not import.
        image.pointee.format = opaque ? PNG_FORMAT_FLAG_COLOR : (PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)
        let channels = opaque ? 3 : 4
        var raster = Raster(width: width, height: height, channels: channels)
        let image = image
        let ok = raster.pixels.withUnsafeMutableBytes { buffer in
            png_image_finish_read(image, nil, buffer.baseAddress, Int32(width * channels), nil)
        }
        guard ok != 0 else {
            let text = Self.message(of: image)
            throw AttacheError(.corruptInput, stage: .transform, "cannot decode the PNG image: \(text)",
                               cause: NativeError(library: "png", code: Int(image.pointee.warning_or_error), text: text))
        }
        if onWhite && channels == 4 { raster.compositeOnWhiteInPlace() }
        return raster
    }

    /// libpng's simplified API takes a 16-bit PNG without gAMA, sRGB, iCCP or cHRM to be linear light,
    /// which brightens mid-grey 0x8080 to 186; browsers and image tools take such a file to be sRGB. An
    /// sRGB chunk (perceptual intent) is inserted after IHDR in that case so that the decoder agrees
    /// with what people see.
    static func assumingSRGBWhenUntagged(_ data: [UInt8]) -> [UInt8] {
        guard data.count > 33, data[24] == 16 else { return data }
        var i = 8
        while i + 8 <= data.count {
            let length = Int(data[i]) << 24 | Int(data[i + 1]) << 16 | Int(data[i + 2]) << 8 | Int(data[i + 3])
            let type = String(decoding: data[(i + 4)..<(i + 8)], as: UTF8.self)
            if ["gAMA", "sRGB", "iCCP", "cHRM"].contains(type) { return data }
            if type == "IDAT" || type == "IEND" { break }
            guard length >= 0, length <= data.count else { return data }
            i += 12 + length
        }
        let chunk: [UInt8] = [0, 0, 0, 1] + Array("sRGB".utf8) + [0, 0xAE, 0xCE, 0x1C, 0xE9]
        return Array(data[..<33]) + chunk + data[33...]
    }

    private static func message(of image: UnsafeMutablePointer<png_image>) -> String {
        withUnsafeBytes(of: &image.pointee.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
