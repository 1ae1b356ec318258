internal import CWebP

/// What a WebP header says, read before any pixel buffer exists.
struct WebPHeader {
    var width: Int
    var height: Int
    var hasAlpha: Bool
    var isAnimated: Bool
    /// VP8L (lossless) rather than VP8 (lossy) image data.
    var isLossless: Bool

    init(_ data: [UInt8]) throws {
        var features = WebPBitstreamFeatures()
        let status = data.withUnsafeBufferPointer { attache_webp_get_features($0.baseAddress, data.count, &features) }
        guard status == VP8_STATUS_OK else {
            throw AttacheError(.corruptInput, stage: .transform, "cannot read the WebP header",
                               cause: NativeError(library: "webp", code: Int(status.rawValue), text: "VP8StatusCode \(status.rawValue)"))
        }
        width = Int(features.width)
        height = Int(features.height)
        hasAlpha = features.has_alpha != 0
        isAnimated = features.has_animation != 0
        isLossless = features.format == 2
    }
}

/// Decodes a still WebP image.
enum WebPDecoder {
    /// Decodes to RGBA at full size.
    static func decodeRGBA(_ data: [UInt8], header: WebPHeader) throws -> Raster {
        try decode(data, header: header, width: header.width, height: header.height, alpha: true)
    }

    /// Decodes to RGBA (straight alpha) or RGB at `width` × `height`; a size smaller than the image's is
    /// reached by libwebp's own rescaler (an area average, alpha premultiplied around it) on the rows as
    /// they are decoded, so the full-size picture is never held (a lossless file excepted: its decoder
    /// keeps the whole ARGB picture regardless).
    static func decode(_ data: [UInt8], header: WebPHeader, width: Int, height: Int, alpha: Bool) throws -> Raster {
        var config = WebPDecoderConfig()
        guard attache_webp_init_decoder_config(&config) != 0 else {
            throw AttacheError(.nativeLibrary, stage: .transform, "libwebp version mismatch",
                               cause: NativeError(library: "webp", code: -1, text: "WebPInitDecoderConfig failed"))
        }
        let channels = alpha ? 4 : 3
        var raster = Raster(width: width, height: height, channels: channels)
        let status = data.withUnsafeBufferPointer { src in
            raster.pixels.withUnsafeMutableBufferPointer { dst in
                config.output.colorspace = alpha ? MODE_RGBA : MODE_RGB
                config.output.is_external_memory = 1
                config.output.u.RGBA.rgba = dst.baseAddress
                config.output.u.RGBA.stride = Int32(width * channels)
                config.output.u.RGBA.size = dst.count
                if header.width != width || header.height != height {
                    config.options.use_scaling = 1
                    config.options.scaled_width = Int32(width)
                    config.options.scaled_height = Int32(height)
                }
                return WebPDecode(src.baseAddress, data.count, &config)
            }
        }
        WebPFreeDecBuffer(&config.output)
        guard status == VP8_STATUS_OK else {
            throw AttacheError(.corruptInput, stage: .transform, "cannot decode the WebP image",
                               cause: NativeError(library: "webp", code: Int(status.rawValue), text: "VP8StatusCode \(status.rawValue)"))
        }
        return raster
    }
}

/// Owns one WebP picture and its in-memory writer for a single encode.
final class WebPEncoder {
    private let picture: UnsafeMutablePointer<WebPPicture>
    private let writer: UnsafeMutablePointer<WebPMemoryWriter>

    init() throws {
        picture = .allocate(capacity: 1)
        writer = .allocate(capacity: 1)
        WebPMemoryWriterInit(writer)
        guard attache_webp_picture_init(picture) != 0 else {
            writer.deallocate()
            picture.deallocate()
            throw AttacheError(.nativeLibrary, stage: .transform, "libwebp version mismatch",
                               cause: NativeError(library: "webp", code: -1, text: "WebPPictureInit failed"))
        }
    }

    deinit {
        WebPPictureFree(picture)
        WebPMemoryWriterClear(writer)
        picture.deallocate()
        writer.deallocate()
    }

    /// Encodes RGB or RGBA pixels lossily at `quality` (0–100); alpha is kept losslessly.
    func encode(_ raster: Raster, quality: Int) throws -> [UInt8] {
        var config = WebPConfig()
        guard attache_webp_config_preset(&config, WEBP_PRESET_PICTURE, Float(quality)) != 0 else {
            throw AttacheError(.nativeLibrary, stage: .transform, "cannot configure the WebP encoder")
        }
        config.method = 4
        config.alpha_quality = 100
        WebPPictureFree(picture)
        WebPMemoryWriterClear(writer)
        WebPMemoryWriterInit(writer)
        picture.pointee.width = Int32(raster.width)
        picture.pointee.height = Int32(raster.height)
        picture.pointee.use_argb = 1
        let imported = raster.pixels.withUnsafeBufferPointer { src in
            raster.channels == 4
                ? WebPPictureImportRGBA(picture, src.baseAddress, Int32(raster.width * 4))
                : WebPPictureImportRGB(picture, src.baseAddress, Int32(raster.width * 3))
        }
        guard imported != 0 else { throw failure("cannot import pixels into the WebP encoder") }
        picture.pointee.writer = WebPMemoryWrite
        picture.pointee.custom_ptr = UnsafeMutableRawPointer(writer)
        guard WebPEncode(&config, picture) != 0 else { throw failure("cannot encode the WebP image") }
        return Array(UnsafeBufferPointer(start: writer.pointee.mem, count: writer.pointee.size))
    }

    private func failure(_ message: String) -> AttacheError {
        let code = Int(picture.pointee.error_code.rawValue)
        return AttacheError(.nativeLibrary, stage: .transform, message,
                            cause: NativeError(library: "webp", code: code, text: "WebPEncodingError \(code)"))
    }
}
