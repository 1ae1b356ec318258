import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The pipeline's Transform stage: recompresses images, makes stickers, and adds thumbnails; passes
/// everything else through unchanged.
///
/// A `Transformer` holds only its configuration. The codec work runs on ``BlockingPool/shared``, never on
/// the cooperative thread pool.
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

        /// Creates the default configuration.
        public init() {}
    }

    /// The stage's configuration.
    public let configuration: Configuration

    /// Creates the stage.
    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// Decides from `mimeType` and `kind` what to do with the file at `path`.
    ///
    /// Images are recompressed (or passed through, when already small, with metadata stripped); stickers
    /// in PNG/JPEG/WebP/BMP become 512 px WebP; animated WebP, GIFs, voice, video, files and unknown
    /// formats pass through unchanged. Any new file is written into `workDirectory`, which the
    /// caller creates and deletes.
    ///
    /// An image that cannot be recompressed (``TransformErrorPolicy/recoverable(_:)``) is sent as it is
    /// under ``Configuration/onTransformError`` `.sendOriginal` (the default), with the reason in
    /// ``TransformOutput/skipReason``; under `.fail` its error is thrown.
    ///
    /// - Throws: ``AttacheError`` in stage `.transform` naming `path`: under `.fail`, `.corruptInput` for a
    ///   broken image, `.limitExceeded` for one over the pixel, scan or memory limit, `.nativeLibrary`;
    ///   always `.fileNotFound`/`.fileUnreadable`, `.fileUnwritable` for the work directory.
    public func transform(fileAt path: String, mimeType: String, kind: MessageKind,
                          workDirectory: String) async throws -> TransformOutput {
        let configuration = configuration
        return try await BlockingPool.shared.run {
            try Self.transformBlocking(path: path, mimeType: mimeType, kind: kind, workDirectory: workDirectory,
                                       configuration: configuration)
        }
    }

    static let recompressibleTypes: Set<String> = ["image/jpeg", "image/pjpeg", "image/png", "image/webp", "image/bmp",
                                                   "image/x-ms-bmp"]

    static func transformBlocking(path: String, mimeType: String, kind: MessageKind, workDirectory: String,
                                  configuration: Configuration) throws -> TransformOutput {
        let type = mimeType.lowercased()
        guard configuration.transforms(mimeType: type, kind: kind) else {
            return try passThrough(path: path, mimeType: mimeType)
        }

        let recompressor = ImageRecompressor(options: configuration.image)
        do {
            let data = try ImageFile.read(path, limit: configuration.image.maxInputByteCount)
            let sides = configuration.makeThumbnails ? configuration.thumbnailSides : []
            let outcome: ImageRecompressor.Outcome
            do {
                outcome = kind == .sticker
                    ? try recompressor.makeSticker(data, thumbnailSides: sides)
                    : try recompressor.recompress(data, thumbnailSides: sides)
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
               result.outputHeight == result.inputHeight, let png = PNGChunks.opaqueStripped(data),
               png.count <= outcome.bytes?.count ?? Int.max
            {
                var output = TransformOutput(
                    path: path, mimeType: "image/png", filenameExtension: nil, didTransform: png != data,
                    originalByteCount: Int64(data.count), outputByteCount: Int64(png.count),
                    width: result.outputWidth, height: result.outputHeight, thumbnails: outcome.thumbnails)
                if png != data {
                    output.path = Self.workPath(for: path, in: workDirectory, extension: "png")
                    try ImageFile.write(png, to: output.path)
                }
                return output
            }
            let format: ImageFormat = result.mimeType == ImageFormat.webp.mimeType ? .webp : .jpeg
            var output = TransformOutput(
                path: path, mimeType: result.mimeType,
                filenameExtension: format.mimeType == type ? nil : format.filenameExtension,
                didTransform: outcome.bytes != nil,
                originalByteCount: result.inputByteCount, outputByteCount: result.outputByteCount,
                width: result.outputWidth, height: result.outputHeight, thumbnails: outcome.thumbnails)
            if let bytes = outcome.bytes {
                let target = Self.workPath(for: path, in: workDirectory, extension: format.filenameExtension)
                try ImageFile.write(bytes, to: target)
                output.path = target
            }
            return output
        } catch let error as AttacheError {
            throw error.concerning(path)
        }
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
    static func passThrough(_ source: FileSource, mimeType: String) -> TransformOutput {
        passThrough(source, path: source.path, mimeType: mimeType)
    }

    /// What the stage hands on for bytes it leaves as they are (a file at `path`, or bytes in memory that
    /// go by that name), with the size of `source` recorded.
    static func passThrough(_ source: any ByteSource, path: String, mimeType: String) -> TransformOutput {
        TransformOutput(path: path, mimeType: mimeType, filenameExtension: nil, didTransform: false,
                        originalByteCount: source.byteCount, outputByteCount: source.byteCount, width: nil,
                        height: nil, thumbnails: [])
    }
}

/// What the Transform stage hands to the next stage.
public struct TransformOutput: Sendable {
    /// The file to send: the input path when it passed through unchanged.
    public var path: String
    /// The media type of what is sent.
    public var mimeType: String
    /// `"jpg"` or `"webp"` when the format changed, so the upload can rename the file; otherwise nil.
    public var filenameExtension: String?
    /// Whether a new file was made.
    public var didTransform: Bool
    /// The input file's size.
    public var originalByteCount: Int64
    /// The size of the file at ``path``.
    public var outputByteCount: Int64
    /// The output's width, for images and stickers.
    public var width: Int?
    /// The output's height, for images and stickers.
    public var height: Int?
    /// JPEG previews, sent as extra multipart parts.
    public var thumbnails: [Thumbnail]
    /// Why an image went as it is instead of recompressed (its Transform error, under
    /// ``TransformErrorPolicy/sendOriginal``); nil when it was transformed or was never meant to be.
    public var skipReason: String?

    /// Creates an output.
    public init(path: String, mimeType: String, filenameExtension: String?, didTransform: Bool,
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
    /// ``TransformReceipt/skipped`` and a log notice give the reason. The default: the upload itself is
    /// valid, and a picture that one decoder refuses often opens in another.
    case sendOriginal = "send-original"

    /// Whether `error` is about the picture itself (broken, truncated, over a limit, refused by a codec)
    /// rather than about the file system or a bug: only those fall back to the original.
    public static func recoverable(_ error: AttacheError) -> Bool {
        error.stage == .transform && [.corruptInput, .limitExceeded, .nativeLibrary].contains(error.code)
    }
}

