import AttacheCore

/// `ImageRecompressor` over one input as an image file: the format sniffing, the JPEG, PNG, WebP and
/// BMP header checks and decoders, resampling, and the JPEG and WebP encoders, once as a photo and
/// once as a sticker.
///
/// The pixel cap is 2^18 (512 × 512) and the output side 64 pixels, so every input stays fast; the
/// decoders' header checks see the cap exactly as they see the real 100 MP one.
///
/// Invariant besides "no crash": a recompressed photo fits in the requested side.
enum ImageTarget {
    static let recompressor: ImageRecompressor = {
        var options = ImageRecompressor.Options()
        options.pixelLimit = 1 << 18
        options.maxSide = 64
        options.stickerSide = 64
        options.stickerByteLimit = 1 << 16
        return ImageRecompressor(options: options)
    }()

    static func run(_ bytes: [UInt8]) {
        if let photo = try? recompressor.recompress(bytes, thumbnailSides: [16]) {
            let result = photo.result
            invariant((1...64).contains(result.outputWidth) && (1...64).contains(result.outputHeight),
                      "a photo came out \(result.outputWidth) × \(result.outputHeight) for a 64-pixel side")
        }
        _ = try? recompressor.makeSticker(bytes, thumbnailSides: [])
    }
}
