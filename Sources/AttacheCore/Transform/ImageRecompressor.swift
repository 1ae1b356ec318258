/// Recompresses photos to small, clean JPEGs (or WebP), and turns pictures into stickers.
///
/// A photo is decoded with the TurboJPEG DCT scaling factor that lands on the smallest size still at
/// least twice the target (a 12 MP photo bound for 1280 px is decoded at 3/4 scale), resampled
/// with a separable Lanczos-3 filter, turned upright according to its EXIF orientation, and encoded as
/// 4:2:0 JPEG. YCbCr JPEGs go through as Y/Cb/Cr planes without ever being converted to RGB.
///
/// What leaves is only pixels: EXIF (GPS included), XMP, IPTC, comments, maker notes and data appended
/// after the image are all dropped. An ICC profile of a JPEG source is kept as it is (it changes how
/// colours look, not who took the picture); PNG, WebP and BMP colour profiles are dropped, which treats
/// those images as sRGB.
///
/// A JPEG that is already small enough (not larger than the target, upright, at most `w·h/2` bytes —
/// Telegram Desktop's rule) is passed through: byte for byte when it carries no metadata, otherwise with
/// the metadata segments cut out and the compressed data copied unchanged. A recompressed JPEG that would
/// come out larger than that stripped original is replaced by it.
///
/// Memory: the pixel limit is checked from the header before anything is allocated. A YCbCr or grey JPEG
/// is decoded a few rows at a time straight into the resampler, so a baseline 12 MP JPEG to 1280 px needs
/// the file, the output planes (1.8 MB at 1280 × 960) and well under 1 MB of rows, never the decoded
/// picture; a progressive one adds libjpeg's coefficient buffer, 2 bytes per sample (about 36 MB at
/// 12 MP, 4:2:0). PNG and BMP rows also go straight into the resampler as they are decoded (a 100 MP
/// PNG to 1280 px holds a few MB; a PNG file is read from disk a piece at a time, never whole), and a
/// WebP larger than twice the target is scaled down by libwebp while it is decoded. What cannot stream
/// is bounded by the whole-image limit (64 MiB): an interlaced PNG (decoded whole, 3–4 bytes per pixel),
/// a lossless WebP (libwebp holds 4 bytes per pixel) and the alpha plane of a lossy WebP (1 byte per
/// pixel). CMYK JPEGs are decoded whole at their DCT-scaled size.
/// GIFs are not decoded at all (they are sent as they are). Above all that, a transform whose estimated
/// memory (``Options/memoryBudget``) is over the budget is refused from the header, before decoding.
///
/// ```swift
/// let recompressor = ImageRecompressor(options: .standard)
/// let result = try recompressor.recompress(fileAt: "IMG_0001.HEIC.jpg", to: "out.jpg")
/// print(result.outputWidth, result.outputByteCount)
/// ```
public struct ImageRecompressor: Sendable {
    /// How images are recompressed.
    public struct Options: Sendable, Codable, Equatable {
        /// The longest side of the output, in pixels; smaller images are not enlarged.
        public var maxSide = 1280
        /// The encoder quality, 1–100.
        public var quality = 82
        /// The output format.
        public var format: ImageFormat = .jpeg
        /// Whether JPEG output is progressive.
        public var progressive = false
        /// The largest width × height accepted, checked from the header before decoding.
        public var pixelLimit = 100_000_000
        /// The most scans a progressive JPEG may have; each scan is a full pass over the coefficients,
        /// so a crafted file with thousands of tiny scans costs minutes of CPU.
        public var maxProgressiveScans = 64
        /// Whether a JPEG that is already small enough is sent as it is (metadata stripped).
        public var passThroughSmallJPEG = true
        /// How much larger than the output a JPEG's DCT-scaled decode must be, at least.
        ///
        /// libjpeg-turbo's 1/2, 1/4 and 1/8 reductions are 2×2, 4×4 and 8×8 box averages: they fold
        /// detail above the new Nyquist limit back into the picture as false texture, which no later
        /// filter can remove. With 2 (the default, libvips' rule too) the Lanczos step that follows
        /// still has a factor of two to filter that detail out properly: a 12 MP photo bound for
        /// 1280 px is decoded at 3/4 scale, and comes out as sharp as from a full decode. 1 is cheaper
        /// (1/2 scale for that photo, about 15 % less CPU) at a measurable loss on detailed pictures.
        public var decodeOversampling = 2.0
        /// The largest input file read, in bytes.
        public var maxInputByteCount = 200 << 20
        /// The most bytes a decoder may hold for a whole picture, checked from the header: an interlaced
        /// PNG, a lossless WebP or a lossy WebP's alpha plane over it is refused with `.limitExceeded`
        /// (in the pipeline it is then sent as it is, by default). Every other image is
        /// decoded a few rows at a time and needs no such bound.
        public var wholeImageByteLimit = 64 << 20
        /// The most memory, in bytes, one image's transform may need, estimated from its header before
        /// anything is decoded; an image over it is refused with `.limitExceeded`, the message giving the
        /// estimate and the budget (in the pipeline it is then sent as it is, by default).
        ///
        /// The estimate counts the file when it is held in memory (a PNG is read from disk a piece at a
        /// time), what the decoder keeps whole (libjpeg's coefficients of a progressive JPEG, 2 bytes per
        /// sample; an interlaced PNG; a lossless WebP; a CMYK JPEG at its DCT-scaled size), the rows and
        /// the output. A 12 MP photo to 1280 px is estimated at about 16 MB, or 52 MB as a progressive
        /// JPEG (file included); the default, 256 MiB, takes progressive 4:2:0 JPEGs up to about 60 MP.
        /// Several transforms at once (`attache batch --concurrency`) each have this budget.
        ///
        /// ```swift
        /// var configuration = Transformer.Configuration()
        /// configuration.image.memoryBudget = 64 << 20  // refuse what needs more than 64 MiB
        /// ```
        public var memoryBudget = 256 << 20
        /// The side of a sticker (the longer side is made exactly this long).
        public var stickerSide = 512
        /// The most bytes a sticker may have; quality is stepped down until it fits.
        public var stickerByteLimit = 512 * 1024
        /// How the placeholders (BlurHash, ThumbHash, Telegram's stripped thumbnail) are made with the
        /// thumbnails; nil makes none.
        public var placeholders: PlaceholderOptions? = PlaceholderOptions()

        /// Photos at 1280 px, quality 82.
        public static let standard = Options()
        /// "HD" photos at 2560 px, quality 85.
        public static let hd: Options = {
            var options = Options()
            options.maxSide = 2560
            options.quality = 85
            return options
        }()

        /// Creates the standard options.
        public init() {}
    }

    /// The options this recompressor applies.
    package let options: Options

    /// Creates a recompressor.
    package init(options: Options = .standard) {
        self.options = options
    }

    /// Recompresses the image at `input` into a new file at `output`.
    ///
    /// `output` appears complete or not at all (a temporary file renamed over it); `-` is standard
    /// output, and an existing FIFO or device is written in place (``OutputDestination``).
    ///
    /// Runs on the calling thread and blocks it for the codec work (tens of milliseconds for a 12 MP
    /// photo); from async code call it inside `BlockingPool.shared.run`, as ``Transformer`` does.
    ///
    /// - Throws: ``AttacheError`` in stage `.transform`, naming `input`: `.fileNotFound`/`.fileUnreadable`,
    ///   `.unsupportedInput` (not an image, animated WebP, GIF), `.corruptInput`, `.limitExceeded` (pixel,
    ///   scan, whole-image, memory budget or file size limit), `.fileUnwritable`.
    ///
    /// ```swift
    /// let result = try ImageRecompressor().recompress(fileAt: "photo.jpg", to: "photo-small.jpg")
    /// ```
    package func recompress(fileAt input: String, to output: String) throws -> RecompressionResult {
        do {
            if let png = try ImageFile.openPNG(input, limit: options.maxInputByteCount) {
                let outcome = try recompress(png: png, thumbnailSides: [])
                try OutputDestination(path: output, stage: .transform).write(outcome.bytes ?? png.readAll())
                return outcome.result
            }
            let data = try ImageFile.read(input, limit: options.maxInputByteCount)
            let outcome = try recompress(data, thumbnailSides: [])
            try OutputDestination(path: output, stage: .transform).write(outcome.bytes ?? data)
            return outcome.result
        } catch let error as AttacheError {
            throw error.concerning(input)
        }
    }

    /// Makes a sticker from the image at `input`: WebP with alpha, the longer side exactly
    /// ``Options/stickerSide`` (enlarging if needed), at most ``Options/stickerByteLimit`` bytes.
    ///
    /// - Throws: ``AttacheError`` as ``recompress(fileAt:to:)`` does; `.limitExceeded` also when no quality
    ///   fits the byte limit.
    ///
    /// ```swift
    /// try ImageRecompressor().makeSticker(fileAt: "cat.png", to: "cat.webp")
    /// ```
    package func makeSticker(fileAt input: String, to output: String) throws -> RecompressionResult {
        do {
            let data = try ImageFile.read(input, limit: options.maxInputByteCount)
            let outcome = try makeSticker(data, thumbnailSides: [])
            try OutputDestination(path: output, stage: .transform).write(outcome.bytes ?? data)
            return outcome.result
        } catch let error as AttacheError {
            throw error.concerning(input)
        }
    }

    // MARK: - In memory

    /// The result of one image held in memory.
    package struct Outcome: Sendable {
        /// The new bytes; nil when the input is sent as it is (``bytes(of:)`` picks).
        package var bytes: [UInt8]?
        /// What was done: format, dimensions, sizes.
        package var result: RecompressionResult
        /// The thumbnails asked for, largest side as given, in order.
        package var thumbnails: [Thumbnail]
        /// The placeholders, made with the thumbnails (nil when none were asked for, or
        /// ``Options/placeholders`` is nil).
        package var placeholders: Placeholders?

        init(bytes: [UInt8]?, result: RecompressionResult, previews: ImagePreviews) {
            self.bytes = bytes
            self.result = result
            thumbnails = previews.thumbnails
            placeholders = previews.placeholders
        }

        /// The bytes to send: ``bytes``, or `input` when it passes through unchanged.
        package func bytes(of input: [UInt8]) -> [UInt8] { bytes ?? input }
    }

    /// Recompresses a photo held in memory, as ``recompress(fileAt:to:)`` does a file, and makes
    /// thumbnails whose longer side is each of `thumbnailSides` (none by default).
    ///
    /// Runs on the calling thread (see ``recompress(fileAt:to:)``).
    ///
    /// ```swift
    /// let outcome = try ImageRecompressor().recompress(jpegBytes, thumbnailSides: [320])
    /// let toSend = outcome.bytes(of: jpegBytes)
    /// ```
    /// - Throws: ``AttacheError`` in stage `.transform` as ``recompress(fileAt:to:)`` does, without a file.
    package func recompress(_ data: [UInt8], thumbnailSides: [Int] = []) throws -> Outcome {
        try recompress(ImageRenderer.inspect(data, pixelLimit: options.pixelLimit, scanLimit: options.maxProgressiveScans,
                                             wholeImageByteLimit: options.wholeImageByteLimit),
                       thumbnailSides: thumbnailSides)
    }

    /// Recompresses the PNG open as `png`, as ``recompress(_:thumbnailSides:)`` does one in memory, reading
    /// it a piece at a time: the file is never held whole.
    /// - Throws: ``AttacheError`` in stage `.transform` as ``recompress(fileAt:to:)`` does, without a file.
    package func recompress(png: OpenImageFile, thumbnailSides: [Int] = []) throws -> Outcome {
        try recompress(ImageRenderer.inspect(png: png, pixelLimit: options.pixelLimit,
                                             wholeImageByteLimit: options.wholeImageByteLimit),
                       thumbnailSides: thumbnailSides)
    }

    private func recompress(_ image: InspectedImage, thumbnailSides: [Int]) throws -> Outcome {
        let data = image.data
        let (width, height) = LanczosResampler.fittedSize(width: image.displayedWidth, height: image.displayedHeight,
                                                          maxSide: options.maxSide)
        try ImageRenderer.checkMemoryBudget(image, width: width, height: height, planar: options.format == .jpeg,
                                            oversampling: options.decodeOversampling, budget: options.memoryBudget)
        let downscaled = width != image.displayedWidth || height != image.displayedHeight

        // A JPEG that can go as it is, minus metadata.
        var strippedOriginal: [UInt8]?
        if options.format == .jpeg, options.passThroughSmallJPEG, let header = image.jpeg, let markers = image.markers,
           header.isYCbCrOrGray, !downscaled, image.orientation == 1
        {
            let original = markers.hasRemovableMetadata ? JPEGMarkers.stripped(data) : data
            if data.count <= image.width * image.height / 2 {
                return Outcome(bytes: markers.hasRemovableMetadata ? original : nil,
                               result: result(image, width: width, height: height, outputCount: original.count,
                                              passedThrough: true, format: .jpeg),
                               previews: try previews(of: image, sides: thumbnailSides))
            }
            strippedOriginal = markers.hasRemovableMetadata ? original : nil
            if strippedOriginal == nil { strippedOriginal = data }
        }

        let rendered = try ImageRenderer.render(image, width: width, height: height,
                                                planar: options.format == .jpeg, keepAlpha: options.format == .webp,
                                                oversampling: options.decodeOversampling)
        var bytes = try encode(rendered, format: options.format, quality: options.quality,
                               progressive: options.progressive)
        if options.format == .jpeg, let icc = image.markers?.iccSegments, !icc.isEmpty {
            bytes = JPEGMarkers.inserting(icc.map { Array(data[$0.range]) }, into: bytes)
        }
        let thumbs = try previews(of: rendered, sides: thumbnailSides)
        // Never send a bigger file than the (stripped) original without a reason to.
        if let original = strippedOriginal, original.count <= bytes.count {
            return Outcome(bytes: original == data ? nil : original,
                           result: result(image, width: width, height: height, outputCount: original.count,
                                          passedThrough: true, format: .jpeg),
                           previews: thumbs)
        }
        return Outcome(bytes: bytes,
                       result: result(image, width: width, height: height, outputCount: bytes.count,
                                      passedThrough: false, format: options.format),
                       previews: thumbs)
    }

    /// Makes a sticker from an image held in memory, as ``makeSticker(fileAt:to:)`` does from a file.
    /// - Throws: ``AttacheError`` as ``makeSticker(fileAt:to:)`` does, without a file.
    package func makeSticker(_ data: [UInt8], thumbnailSides: [Int] = []) throws -> Outcome {
        let image = try ImageRenderer.inspect(data, pixelLimit: options.pixelLimit, scanLimit: options.maxProgressiveScans,
                                              wholeImageByteLimit: options.wholeImageByteLimit)
        let (width, height) = LanczosResampler.fittedSize(width: image.displayedWidth, height: image.displayedHeight,
                                                          maxSide: options.stickerSide, allowUpscale: true)
        try ImageRenderer.checkMemoryBudget(image, width: width, height: height, planar: false, oversampling: 1,
                                            budget: options.memoryBudget)
        // A WebP that already is a sticker (right size, within the byte limit, no EXIF/XMP chunks) goes as
        // it is: re-encoding it would only cost quality and, usually, bytes.
        if width == image.displayedWidth, height == image.displayedHeight, data.count <= options.stickerByteLimit,
           Self.isMetadataFreeWebP(data)
        {
            let rendered = try ImageRenderer.render(image, width: width, height: height, planar: false, keepAlpha: true)
            return Outcome(bytes: nil,
                           result: result(image, width: width, height: height, outputCount: data.count,
                                          passedThrough: true, format: .webp),
                           previews: try previews(of: rendered, sides: thumbnailSides))
        }
        let rendered = try ImageRenderer.render(image, width: width, height: height, planar: false, keepAlpha: true)
        guard case .packed(let raster) = rendered else {
            throw AttacheError(.internalError, stage: .transform, "a sticker was rendered as planes")
        }
        let encoder = try WebPEncoder()
        var quality = min(max(options.quality, 10), 90)
        var bytes = try encoder.encode(raster, quality: quality)
        while bytes.count > options.stickerByteLimit {
            guard quality > 10 else {
                throw AttacheError(.limitExceeded, stage: .transform,
                                   "the sticker does not fit in \(options.stickerByteLimit) bytes even at the lowest quality")
            }
            quality = max(10, quality - 15)
            bytes = try encoder.encode(raster, quality: quality)
        }
        return Outcome(bytes: bytes,
                       result: result(image, width: width, height: height, outputCount: bytes.count,
                                      passedThrough: false, format: .webp),
                       previews: try previews(of: rendered, sides: thumbnailSides))
    }

    // MARK: - Helpers

    /// True for a RIFF/WEBP file without EXIF or XMP: a simple VP8/VP8L file, or VP8X with those flags clear.
    static func isMetadataFreeWebP(_ data: [UInt8]) -> Bool {
        guard data.count >= 21, data[0..<4].elementsEqual("RIFF".utf8), data[8..<12].elementsEqual("WEBP".utf8)
        else { return false }
        let chunk = data[12..<16]
        if chunk.elementsEqual("VP8 ".utf8) || chunk.elementsEqual("VP8L".utf8) { return true }
        guard chunk.elementsEqual("VP8X".utf8) else { return false }
        let flags = data[20]
        return flags & 0x0C == 0  // 0x08 EXIF, 0x04 XMP
    }

    private func result(_ image: InspectedImage, width: Int, height: Int, outputCount: Int,
                        passedThrough: Bool, format: ImageFormat) -> RecompressionResult {
        RecompressionResult(inputWidth: image.displayedWidth, inputHeight: image.displayedHeight,
                            outputWidth: width, outputHeight: height,
                            inputByteCount: Int64(image.byteCount), outputByteCount: Int64(outputCount),
                            passedThrough: passedThrough, mimeType: format.mimeType)
    }

    func encode(_ rendered: RenderedImage, format: ImageFormat, quality: Int, progressive: Bool) throws -> [UInt8] {
        let quality = min(max(quality, 1), 100)
        switch (rendered, format) {
        case (.planes(let planes, let width, let height), .jpeg):
            return try TurboJPEGEncoder().encode(planes: planes, width: width, height: height,
                                                 quality: quality, progressive: progressive)
        case (.packed(let raster), .jpeg):
            let opaque = raster.channels == 4 ? raster.compositedOnWhite() : raster
            return try TurboJPEGEncoder().encode(packed: opaque, quality: quality, progressive: progressive)
        case (.packed(let raster), .webp):
            return try WebPEncoder().encode(raster.channels == 1 ? raster.expandedToRGBA() : raster, quality: quality)
        case (.planes, .webp):
            throw AttacheError(.internalError, stage: .transform, "planes cannot be encoded as WebP")
        }
    }

    /// JPEG previews of already rendered pixels, one per side in `sides` (e.g. 320 and 40), and the
    /// placeholders (``Options/placeholders``) from the tiny one's downscale; none of either when `sides`
    /// is empty.
    func previews(of rendered: RenderedImage, sides: [Int]) throws -> ImagePreviews {
        var tiny: RenderedImage?
        let thumbnails = try sides.map { side in
            let (width, height) = LanczosResampler.fittedSize(width: rendered.width, height: rendered.height, maxSide: side)
            let small: RenderedImage
            switch rendered {
            case .planes(let planes, _, _):
                small = .planes(planes.enumerated().map { index, plane in
                    index == 0
                        ? LanczosResampler.resample(plane, width: width, height: height)
                        : LanczosResampler.resample(plane, width: (width + 1) / 2, height: (height + 1) / 2)
                }, width: width, height: height)
            case .packed(var raster):
                if raster.channels == 4 { raster = raster.compositedOnWhite() }
                small = .packed(LanczosResampler.resample(raster, width: width, height: height))
            }
            // Placeholders reuse this downscale, except where compositing on white lost the alpha they
            // keep (then they downscale the rendered picture itself, a sticker of at most 512 px).
            if side <= StrippedThumbnail.side, tiny == nil, !rendered.hasAlpha { tiny = small }
            let bytes = try encode(small, format: .jpeg, quality: side <= 64 ? 60 : 75, progressive: false)
            return Thumbnail(side: side, bytes: bytes, width: width, height: height)
        }
        guard let placeholderOptions = options.placeholders, !sides.isEmpty else {
            return ImagePreviews(thumbnails: thumbnails, placeholders: nil)
        }
        let small = PlaceholderMaker.downscale(tiny ?? rendered, side: StrippedThumbnail.side)
        var previews = ImagePreviews(
            thumbnails: thumbnails, placeholders: try PlaceholderMaker.make(from: small, options: placeholderOptions))
        previews.placeholderSource = small
        return previews
    }

    /// JPEG previews and placeholders of the image `data` (a poster frame, a decoded photo), one preview
    /// per side in `sides`.
    package func previews(ofImage data: [UInt8], sides: [Int]) throws -> ImagePreviews {
        let image = try ImageRenderer.inspect(data, pixelLimit: options.pixelLimit, scanLimit: options.maxProgressiveScans,
                                              wholeImageByteLimit: options.wholeImageByteLimit)
        return try previews(of: image, sides: sides)
    }

    private func previews(of image: InspectedImage, sides: [Int]) throws -> ImagePreviews {
        guard let largest = sides.max() else { return ImagePreviews(thumbnails: [], placeholders: nil) }
        let (width, height) = LanczosResampler.fittedSize(width: image.displayedWidth, height: image.displayedHeight,
                                                          maxSide: largest)
        try ImageRenderer.checkMemoryBudget(image, width: width, height: height, planar: true, oversampling: 1,
                                            budget: options.memoryBudget)
        let rendered = try ImageRenderer.render(image, width: width, height: height, planar: true, keepAlpha: false)
        return try previews(of: rendered, sides: sides)
    }
}

/// What recompressing one image did.
package struct RecompressionResult: Sendable, Codable, Equatable {
    /// The input's width as displayed (after EXIF orientation).
    package var inputWidth: Int
    /// The input's height as displayed.
    package var inputHeight: Int
    /// The output's width.
    package var outputWidth: Int
    /// The output's height.
    package var outputHeight: Int
    /// The input file's size.
    package var inputByteCount: Int64
    /// The output file's size.
    package var outputByteCount: Int64
    /// Whether the input's compressed data was kept (byte for byte, or with only metadata removed).
    package var passedThrough: Bool
    /// The output's media type.
    package var mimeType: String

    /// Creates a result.
    package init(inputWidth: Int, inputHeight: Int, outputWidth: Int, outputHeight: Int,
                inputByteCount: Int64, outputByteCount: Int64, passedThrough: Bool, mimeType: String) {
        self.inputWidth = inputWidth
        self.inputHeight = inputHeight
        self.outputWidth = outputWidth
        self.outputHeight = outputHeight
        self.inputByteCount = inputByteCount
        self.outputByteCount = outputByteCount
        self.passedThrough = passedThrough
        self.mimeType = mimeType
    }
}
