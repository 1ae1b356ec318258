import Glibc

/// The pipeline's Transform stage, and the one place that decides what happens to a file: images are
/// recompressed (HEIC/AVIF photos decoded first), stickers made, videos, voice notes and animations made
/// chat-ready with ffmpeg (``MediaConverter``), and thumbnails added; everything else passes through.
///
/// `attache upload`, `attache batch` and `attache recompress` all call it, so a file gets the same
/// treatment whichever way it goes. A `Transformer` holds only its configuration. The codec work runs on
/// `BlockingPool.shared`, never on the cooperative thread pool.
///
/// ```swift
/// let transformer = Transformer()
/// let output = try await transformer.transform(fileAt: "IMG_0001.jpg", mimeType: "image/jpeg",
///                                              kind: .image, workDirectory: scratch)
/// // send output.path as output.mimeType, plus output.thumbnails as extra parts
/// ```
public struct Transformer: Sendable {
    /// What the stage does.
    public struct Configuration: Sendable {
        /// Whether images (kind `.image`) are recompressed; when false they pass through unchanged.
        public var recompressImages = true
        /// How photos are recompressed.
        public var image: ImageRecompressor.Options = .standard
        /// Whether stickers (kind `.sticker`) in a still image format are converted to the sticker format.
        public var makeStickers = true
        /// Whether images and stickers get JPEG previews.
        public var makeThumbnails = true
        /// The longest side of each preview, largest first: `thumbnail`, then `thumbnailTiny`.
        public var thumbnailSides = [320, 40]
        /// What happens to an image or sticker that cannot be recompressed (broken, truncated, over a
        /// pixel or memory limit): by default it is sent as it is, and the receipt says why.
        public var onTransformError: TransformErrorPolicy = .sendOriginal
        /// Whether videos (kind `.video`) are converted to H.264/AAC MP4 with ffmpeg.
        public var convertVideo = true
        /// Whether voice notes (kind `.voice`) are converted to Ogg/Opus and get a waveform.
        public var convertVoice = true
        /// Whether animated GIFs and APNGs that are not stickers become silent MP4 animations.
        public var convertAnimations = true
        /// How video, voice and animations are converted, and the helpers' limits.
        public var media = MediaOptions()
        /// What decodes HEIC/HEIF and AVIF photos; nil sends them as they are (the receipt says why).
        /// The `Attache` library sets libheif's (``HEIFDecoding``).
        package var heifDecoder: (any HEIFDecoding)?

        /// Creates the default configuration.
        public init() {}
    }

    /// The stage's configuration.
    package let configuration: Configuration

    /// Creates the stage.
    package init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// Decides from `mimeType` and `kind` what to do with the file at `path`.
    ///
    /// Images are recompressed (or passed through, when already small, with metadata stripped), HEIC/HEIF
    /// and AVIF photos decoded and sent as JPEG; stickers in PNG/JPEG/WebP/BMP become 512 px WebP; an
    /// animated GIF or APNG (`isAnimated`) that is not a sticker becomes a silent MP4; videos become
    /// H.264/AAC MP4 and voice notes Ogg/Opus with a waveform (``MediaConverter``); animated WebP, files
    /// and unknown formats pass through unchanged. Any new file is written into `workDirectory`, which the
    /// caller creates and deletes.
    ///
    /// An image that cannot be recompressed (``TransformErrorPolicy/recoverable(_:)``) is sent as it is
    /// under ``Configuration/onTransformError`` `.sendOriginal` (the default), with the reason in
    /// ``TransformOutput/skipReason``; under `.fail` its error is thrown.
    ///
    /// - Throws: ``AttacheError`` in stage `.transform` naming `path`: under `.fail`, `.corruptInput` for a
    ///   broken image, `.limitExceeded` for one over the pixel, scan or memory limit, `.nativeLibrary`;
    ///   always `.fileNotFound`/`.fileUnreadable`, `.fileUnwritable` for the work directory.
    package func transform(fileAt path: String, mimeType: String, kind: MessageKind, isAnimated: Bool = false,
                          workDirectory: String) async throws -> TransformOutput {
        let configuration = configuration
        return try await BlockingPool.shared.run {
            try Self.transformBlocking(path: path, mimeType: mimeType, kind: kind, isAnimated: isAnimated,
                                       workDirectory: workDirectory, configuration: configuration)
        }
    }

    static let recompressibleTypes: Set<String> = ["image/jpeg", "image/pjpeg", "image/png", "image/webp", "image/bmp",
                                                   "image/x-ms-bmp"]
    static let heifTypes: Set<String> = ["image/heic", "image/heif", "image/avif"]
    static let animationTypes: Set<String> = ["image/gif", "image/apng", "image/png"]

    /// Runs the stage on the calling thread (blocking: a pool job, or a command-line tool's main thread).
    package static func transformBlocking(path: String, mimeType: String, kind: MessageKind, isAnimated: Bool = false,
                                          workDirectory: String, configuration: Configuration) throws -> TransformOutput {
        let type = mimeType.lowercased()
        switch configuration.action(mimeType: type, kind: kind, isAnimated: isAnimated) {
        case .none:
            return try passThrough(path: path, mimeType: mimeType)
        case .video, .voice, .animation:
            return try transformMedia(path: path, mimeType: mimeType, kind: kind, workDirectory: workDirectory,
                                      configuration: configuration)
        case .image, .sticker:
            break
        }

        let recompressor = ImageRecompressor(options: configuration.image)
        do {
            // A PNG photo stays on disk, read by its decoder a piece at a time: a 12 MP photo saved as PNG
            // is 28 MB, more than everything else its transform holds.
            let pngFile = try kind == .image && type == "image/png"
                ? ImageFile.openPNG(path, limit: configuration.image.maxInputByteCount) : nil
            var data: [UInt8] = try pngFile == nil ? ImageFile.read(path, limit: configuration.image.maxInputByteCount) : []
            let fileByteCount = Int64(pngFile?.size ?? data.count)
            if heifTypes.contains(type) {
                guard let decoder = configuration.heifDecoder else {
                    var output = try passThrough(path: path, mimeType: mimeType)
                    output.skipReason = "\(AttacheError.Code.unsupportedInput): no HEIF decoder in this program"
                    return output
                }
                do {
                    // Decoded, turned upright and flattened by libheif. A photo's rows go straight into the
                    // resampler (no picture-sized copy); a sticker, at most 512 px, takes the lossless,
                    // metadata-free BMP of it and from there is a picture like any other.
                    if kind == .sticker {
                        data = try decoder.decodeToBMP(data, pixelLimit: configuration.image.pixelLimit)
                    } else {
                        let sides = configuration.makeThumbnails ? configuration.thumbnailSides : []
                        let outcome = try recompressor.recompressHEIF(data, decoder: decoder, thumbnailSides: sides)
                        return try heifOutput(outcome, path: path, type: type, fileByteCount: fileByteCount,
                                              workDirectory: workDirectory)
                    }
                } catch let error as AttacheError
                    where configuration.onTransformError == .sendOriginal && TransformErrorPolicy.recoverable(error)
                {
                    var output = try passThrough(path: path, mimeType: mimeType)
                    output.skipReason = "\(error.code): \(error.message)"
                    return output
                }
            }
            let sides = configuration.makeThumbnails ? configuration.thumbnailSides : []
            let outcome: ImageRecompressor.Outcome
            do {
                if let pngFile {
                    outcome = try recompressor.recompress(png: pngFile, thumbnailSides: sides)
                } else {
                    outcome = kind == .sticker
                        ? try recompressor.makeSticker(data, thumbnailSides: sides)
                        : try recompressor.recompress(data, thumbnailSides: sides)
                }
            } catch let error as AttacheError where error.code == .unsupportedInput {
                // An animated WebP (or a BMP variant the decoder does not handle) is a valid file that this
                // stage cannot improve: send it as it is rather than fail the upload.
                return try passThrough(path: path, mimeType: mimeType)
            } catch let error as AttacheError
                where configuration.onTransformError == .sendOriginal && TransformErrorPolicy.recoverable(error)
            {
                // The server takes any file; a picture this stage cannot read may still open elsewhere
                // (or be wanted as it is), so it goes unchanged and the receipt says why.
                var output = try passThrough(path: path, mimeType: mimeType)
                output.skipReason = "\(error.code): \(error.message)"
                return output
            }
            let result = outcome.result
            // An opaque PNG that needs no downscaling (a screenshot, a diagram) is often smaller than any
            // JPEG of it: then it goes as a PNG, minus its metadata chunks, rather than grow.
            if kind == .image, type == "image/png", result.outputWidth == result.inputWidth,
               result.outputHeight == result.inputHeight
            {
                // Only here is the whole PNG needed, and it is no larger than the output size allows.
                if let pngFile { data = try pngFile.readAll() }
            }
            if kind == .image, type == "image/png", result.outputWidth == result.inputWidth,
               result.outputHeight == result.inputHeight, let png = PNGChunks.opaqueStripped(data),
               png.count <= outcome.bytes?.count ?? Int.max
            {
                var output = TransformOutput(
                    path: path, mimeType: "image/png", filenameExtension: nil, didTransform: png != data,
                    originalByteCount: Int64(data.count), outputByteCount: Int64(png.count),
                    width: result.outputWidth, height: result.outputHeight, thumbnails: outcome.thumbnails)
                output.placeholders = outcome.placeholders
                if png != data {
                    output.path = Self.workPath(for: path, in: workDirectory, extension: "png")
                    try ImageFile.write(png, to: output.path)
                }
                output.reason = Self.pngReason(sent: Int64(png.count), source: Int64(data.count))
                return output
            }
            let format: ImageFormat = result.mimeType == ImageFormat.webp.mimeType ? .webp : .jpeg
            var output = TransformOutput(
                path: path, mimeType: result.mimeType,
                filenameExtension: format.mimeType == type && !heifTypes.contains(type) ? nil : format.filenameExtension,
                didTransform: outcome.bytes != nil || heifTypes.contains(type),
                originalByteCount: fileByteCount, outputByteCount: result.outputByteCount,
                width: result.outputWidth, height: result.outputHeight, thumbnails: outcome.thumbnails)
            output.placeholders = outcome.placeholders
            output.reason = Self.imageReason(result, sourceType: type, kind: kind, sourceByteCount: fileByteCount)
            if let bytes = outcome.bytes ?? (heifTypes.contains(type) ? data : nil) {
                let target = Self.workPath(for: path, in: workDirectory, extension: format.filenameExtension)
                try ImageFile.write(bytes, to: target)
                output.path = target
            }
            return output
        } catch let error as AttacheError {
            throw error.concerning(path)
        }
    }

    /// What the stage hands on for a HEIF photo recompressed to `outcome`: always a new file.
    private static func heifOutput(_ outcome: ImageRecompressor.Outcome, path: String, type: String,
                                   fileByteCount: Int64, workDirectory: String) throws -> TransformOutput {
        let result = outcome.result
        let format: ImageFormat = result.mimeType == ImageFormat.webp.mimeType ? .webp : .jpeg
        let bytes = outcome.bytes ?? []
        var output = TransformOutput(
            path: Self.workPath(for: path, in: workDirectory, extension: format.filenameExtension),
            mimeType: result.mimeType, filenameExtension: format.filenameExtension, didTransform: true,
            originalByteCount: fileByteCount, outputByteCount: result.outputByteCount,
            width: result.outputWidth, height: result.outputHeight, thumbnails: outcome.thumbnails)
        output.placeholders = outcome.placeholders
        output.reason = Self.imageReason(result, sourceType: type, kind: .image, sourceByteCount: fileByteCount)
        try ImageFile.write(bytes, to: output.path)
        return output
    }

    /// Video, voice and animations through ffmpeg; sent as they are when ffmpeg is missing, or (under
    /// ``TransformErrorPolicy/sendOriginal``) when it cannot convert them, the receipt saying why.
    private static func transformMedia(path: String, mimeType: String, kind: MessageKind, workDirectory: String,
                                       configuration: Configuration) throws -> TransformOutput {
        let source = try FileSource(path: path)
        var mediaOptions = configuration.media
        mediaOptions.placeholders = configuration.image.placeholders
        guard let converter = MediaConverter.locate(options: mediaOptions) else {
            var output = passThrough(source, mimeType: mimeType)
            output.skipReason = "ffmpeg-missing: ffmpeg or ffprobe is not installed"
            return output
        }
        let sides = configuration.makeThumbnails ? configuration.thumbnailSides : []
        let result: MediaResult
        do {
            switch kind {
            case .voice: result = try converter.convertVoice(path, workDirectory: workDirectory)
            case .video: result = try converter.convertVideo(path, workDirectory: workDirectory, thumbnailSides: sides)
            default: result = try converter.convertAnimation(path, workDirectory: workDirectory, thumbnailSides: sides)
            }
        } catch let error as AttacheError
            where configuration.onTransformError == .sendOriginal && TransformErrorPolicy.recoverable(error)
        {
            var output = passThrough(source, mimeType: mimeType)
            output.skipReason = "\(error.code): \(error.message)"
            return output
        } catch let error as AttacheError {
            throw error.concerning(path)
        }
        var output = TransformOutput(
            path: result.path ?? path, mimeType: result.path == nil ? mimeType : result.mimeType,
            filenameExtension: result.filenameExtension, didTransform: result.path != nil,
            originalByteCount: source.byteCount,
            outputByteCount: try result.path.map { try FileSource(path: $0).byteCount } ?? source.byteCount,
            width: result.width, height: result.height, thumbnails: result.thumbnails)
        output.duration = result.duration
        output.supportsStreaming = kind == .voice ? nil : result.supportsStreaming
        output.waveform = result.waveform
        output.isAnimation = result.isAnimation
        output.mediaPlan = result.plan
        output.placeholders = result.placeholders
        output.reason = result.reason
        return output
    }

    /// Where the transformed copy of `path` is written: `<stem>-transformed.<extension>` in the work directory.
    private static func workPath(for path: String, in workDirectory: String, extension: String) -> String {
        let stem = PathText.deletingExtension(PathText.lastComponent(path))
        return PathText.appending("\(stem.isEmpty ? "image" : stem)-transformed.\(`extension`)", to: workDirectory)
    }

    private static func passThrough(path: String, mimeType: String) throws -> TransformOutput {
        passThrough(try FileSource(path: path), mimeType: mimeType)
    }

    /// What the stage hands on for a file it leaves as it is, with the size `source` recorded.
    package static func passThrough(_ source: FileSource, mimeType: String) -> TransformOutput {
        passThrough(source, path: source.path, mimeType: mimeType)
    }

    /// What the stage hands on for bytes it leaves as they are (a file at `path`, or bytes in memory that
    /// go by that name), with the size of `source` recorded.
    package static func passThrough(_ source: any ByteSource, path: String, mimeType: String) -> TransformOutput {
        TransformOutput(path: path, mimeType: mimeType, filenameExtension: nil, didTransform: false,
                        originalByteCount: source.byteCount, outputByteCount: source.byteCount, width: nil,
                        height: nil, thumbnails: [])
    }
}

/// What the Transform stage hands to the next stage.
package struct TransformOutput: Sendable {
    /// The file to send: the input path when it passed through unchanged.
    package var path: String
    /// The media type of what is sent.
    package var mimeType: String
    /// `"jpg"` or `"webp"` when the format changed, so the upload can rename the file; otherwise nil.
    package var filenameExtension: String?
    /// Whether a new file was made.
    package var didTransform: Bool
    /// The input file's size.
    package var originalByteCount: Int64
    /// The size of the file at ``path``.
    package var outputByteCount: Int64
    /// The output's width, for images and stickers.
    package var width: Int?
    /// The output's height, for images and stickers.
    package var height: Int?
    /// JPEG previews, sent as extra multipart parts.
    package var thumbnails: [Thumbnail]
    /// BlurHash, ThumbHash and Telegram's stripped thumbnail, made with the previews.
    package var placeholders: Placeholders?
    /// Why an image went as it is instead of recompressed (its Transform error, under
    /// ``TransformErrorPolicy/sendOriginal``), or a video or voice note unconverted (`ffmpeg-missing: …`);
    /// nil when it was transformed or was never meant to be.
    package var skipReason: String?
    /// Seconds, for video, voice and animations.
    package var duration: Double?
    /// For video and animations: whether the MP4 has its index first, so a player can start early.
    package var supportsStreaming: Bool?
    /// For voice: Telegram's 63-byte waveform (``VoiceWaveform``).
    package var waveform: [UInt8]?
    /// True for a GIF or APNG sent as a silent MP4.
    package var isAnimation = false
    /// For video, voice and animations: whether the file was kept, remuxed or encoded.
    package var mediaPlan: MediaConverter.VideoPlan?
    /// Why the output is what it is: what the source lacked, and why an output larger than the source
    /// was kept (or a larger one dropped for the source). Nil when nothing was decided.
    package var reason: String?

    /// Creates an output.
    package init(path: String, mimeType: String, filenameExtension: String?, didTransform: Bool,
                originalByteCount: Int64, outputByteCount: Int64, width: Int?, height: Int?,
                thumbnails: [Thumbnail]) {
        self.path = path
        self.mimeType = mimeType
        self.filenameExtension = filenameExtension
        self.didTransform = didTransform
        self.originalByteCount = originalByteCount
        self.outputByteCount = outputByteCount
        self.width = width
        self.height = height
        self.thumbnails = thumbnails
    }
}

/// What the pipeline does with an image or sticker the Transform stage cannot recompress.
public enum TransformErrorPolicy: String, Sendable, Codable, CaseIterable {
    /// The upload fails with the Transform stage's error (exit 65 for a broken image, from the command line).
    case fail
    /// The original bytes are sent unchanged, as any other file would be; the receipt's
    /// ``Attache/TransformReceipt`` (its `skipped` member, in the encoded receipt) and a log notice give the
    /// reason. The default: the upload itself is valid, and a picture that one decoder refuses often opens
    /// in another.
    case sendOriginal = "send-original"

    /// Whether `error` is about the picture itself (broken, truncated, over a limit, refused by a codec)
    /// rather than about the file system or a bug: only those fall back to the original.
    package static func recoverable(_ error: AttacheError) -> Bool {
        error.stage == .transform && [.corruptInput, .limitExceeded, .nativeLibrary].contains(error.code)
    }
}

