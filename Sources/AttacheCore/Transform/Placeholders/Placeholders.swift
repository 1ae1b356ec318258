/// What a chat client draws the moment a message arrives, before the attachment is downloaded: three
/// placeholders of one picture (a photo, a sticker, a video's poster frame, an animation's first frame),
/// all computed from the same small downscale the Transform stage makes for the tiny thumbnail.
public struct Placeholders: Sendable, Codable, Hashable {
    /// BlurHash (Mastodon, Signal, Element): 28 characters at the default 4×3 components.
    public var blurhash: String
    /// ThumbHash (aspect ratio and alpha included) as base64 (RFC 4648, padded): about 25 bytes.
    public var thumbhash: String
    /// Telegram's stripped thumbnail (`photoStrippedSize`, type `i`) as base64 (RFC 4648, padded): a
    /// header-less JPEG of at most 40 px that a Telegram client rebuilds with its header template. Nil
    /// when the picture could not be encoded so.
    public var stripped: String?

    /// Creates placeholders.
    package init(blurhash: String, thumbhash: String, stripped: String?) {
        self.blurhash = blurhash
        self.thumbhash = thumbhash
        self.stripped = stripped
    }
}

/// How placeholders are made: the BlurHash components (4×3 by default, as Mastodon and Element send).
public struct PlaceholderOptions: Sendable, Codable, Hashable {
    /// BlurHash components across, 1…9.
    public var componentsX = 4
    /// BlurHash components down, 1…9.
    public var componentsY = 3

    /// The default: 4×3.
    public init() {}

    /// `componentsX` × `componentsY` BlurHash components, each clamped to 1…9.
    package init(componentsX: Int, componentsY: Int) {
        self.componentsX = min(max(componentsX, 1), 9)
        self.componentsY = min(max(componentsY, 1), 9)
    }
}

/// Makes ``Placeholders`` from a small picture.
enum PlaceholderMaker {
    /// The placeholders of `small`: grey, RGB or straight RGBA pixels whose sides are at most
    /// ``StrippedThumbnail/side`` (the tiny thumbnail's downscale). ThumbHash sees the alpha; BlurHash and
    /// the stripped JPEG see the picture on white, as the thumbnails do.
    /// - Throws: ``AttacheError`` from the JPEG encoder.
    static func make(from small: Raster, options: PlaceholderOptions) throws -> Placeholders {
        precondition(small.width <= ThumbHash.maximumSide && small.height <= ThumbHash.maximumSide)
        let rgba = small.expandedToRGBA()
        let rgb = small.channels == 4 ? small.compositedOnWhite() : small.channels == 1 ? rgba.compositedOnWhite() : small
        let blurhash = BlurHash.encode(
            rgb: rgb.pixels, width: rgb.width, height: rgb.height, componentsX: options.componentsX,
            componentsY: options.componentsY)
        let thumbhash = ThumbHash.encode(rgba: rgba.pixels, width: rgba.width, height: rgba.height)
        let stripped = try StrippedThumbnail.make(rgb: rgb)
        return Placeholders(
            blurhash: blurhash, thumbhash: Base64.encode(thumbhash, alphabet: .standard),
            stripped: stripped.map { Base64.encode($0, alphabet: .standard) })
    }

    /// The packed picture `rendered` fitted into `side` px: planes are resampled to full-size Y, Cb and
    /// Cr and converted to RGB (JFIF's full-range BT.601), packed pixels are resampled as they are.
    static func downscale(_ rendered: RenderedImage, side: Int) -> Raster {
        let (width, height) = LanczosResampler.fittedSize(width: rendered.width, height: rendered.height, maxSide: side)
        switch rendered {
        case .packed(let raster):
            return LanczosResampler.resample(raster, width: width, height: height)
        case .planes(let planes, _, _):
            let resampled = planes.map { LanczosResampler.resample($0, width: width, height: height) }
            guard resampled.count == 3 else { return resampled[0] }
            var rgb = [UInt8](repeating: 0, count: width * height * 3)
            for index in 0..<(width * height) {
                let y = Float(resampled[0].pixels[index])
                let cb = Float(resampled[1].pixels[index]) - 128
                let cr = Float(resampled[2].pixels[index]) - 128
                rgb[index * 3] = LanczosResampler.clampToByte(y + 1.402 * cr)
                rgb[index * 3 + 1] = LanczosResampler.clampToByte(y - 0.344136 * cb - 0.714136 * cr)
                rgb[index * 3 + 2] = LanczosResampler.clampToByte(y + 1.772 * cb)
            }
            return Raster(width: width, height: height, channels: 3, pixels: rgb)
        }
    }
}
