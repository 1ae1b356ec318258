package import ArgumentParser
import Attache
import AttacheCore
// JSONEncoder without the rest of Foundation: ArgumentParser links FoundationEssentials already.
import FoundationEssentials
import Glibc

/// `attache recompress`: one file through the Transform stage, exactly as an upload would treat it.
///
/// The rules are the ``Transformer``'s, shared with `upload` and `batch`: a photo becomes a small clean
/// JPEG (an opaque screenshot PNG stays a smaller PNG), a HEIC/AVIF photo a JPEG, a sticker a 512 px WebP,
/// a video H.264/AAC MP4, a voice note Ogg/Opus, an animated GIF a silent MP4. A file that an upload sends
/// as it is (a document, a still GIF) is refused with `unsupported-input`: there is nothing to recompress.
package struct RecompressCommand: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "recompress",
        abstract: "Recompress a file the way uploads do: photos, HEIC, stickers, video, voice, animations.",
        discussion: """
            Applies the rules uploads apply. Reads a JPEG, PNG, WebP, BMP, HEIC or AVIF photo and writes a JPEG \
            (default) or WebP (an opaque PNG that needs no resizing stays a smaller PNG, as uploads send it); \
            with --sticker, a WebP sticker whose longer side is exactly 512 px and that fits in 512 KB. A video \
            becomes H.264/AAC MP4 with its index first (kept as it is when it already is one), a voice note \
            mono Ogg/Opus, an animated GIF a silent MP4; those need ffmpeg.
            """)

    @Argument(help: "The file to read.")
    var input: String

    @Option(name: .shortAndLong, help: ArgumentHelp(
        "Where to write the result (replaced only on success); - for standard output, the summary then going to standard error. An existing FIFO or device is written in place.",
        valueName: "output"))
    var output: String

    @Option(name: .long, help: "The longest side of a photo or video, in pixels (default 1280).")
    var maxSide: Int?

    @Option(name: .long, help: "Encoder quality, 1–100 (default 82).")
    var quality: Int?

    @Option(name: .long, help: "Output format of photos: jpeg or webp.")
    var format = ImageFormat.jpeg

    @Option(name: .long, help: ArgumentHelp(
        "The most memory the transform may need, estimated from the image's header before decoding (bytes, or with K, M, G; default: 256M); a larger one is refused, the message naming the estimate.",
        valueName: "size"))
    var memoryBudget: ByteSize?

    @Flag(name: .long, help: "Make a sticker (WebP, 512 px, ≤ 512 KB) instead of a photo.")
    var sticker = false

    @Flag(name: .long, help: "Write a progressive JPEG.")
    var progressive = false

    @Flag(name: .long, help: "Print the result as one JSON object.")
    var json = false

    @Option(help: ArgumentHelp(
        "Benchmark: time a photo's recompress, its thumbnails and its placeholders N times each in process (thread CPU).",
        visibility: .hidden))
    var measurePlaceholders: Int?

    package func validate() throws {
        if let maxSide, !(16...16384).contains(maxSide) {
            throw ValidationError("--max-side must be between 16 and 16384")
        }
        if let quality, !(1...100).contains(quality) {
            throw ValidationError("--quality must be between 1 and 100")
        }
    }

    /// The Transform stage as this command configures it.
    func transformConfiguration() -> Transformer.Configuration {
        var configuration = Transformer.Configuration()
        if let maxSide {
            configuration.image.maxSide = maxSide
            configuration.media.video.maxSide = maxSide
        }
        if let quality { configuration.image.quality = quality }
        if let memoryBudget { configuration.image.memoryBudget = Int(clamping: memoryBudget.bytes) }
        configuration.image.format = format
        configuration.image.progressive = progressive
        configuration.makeThumbnails = false
        // A command asked to recompress one file reports what stops it, rather than copy it unchanged.
        configuration.onTransformError = .fail
        configuration.heifDecoder = LibHEIFDecoder()
        return configuration
    }

    package func run() async throws {
        if let measurePlaceholders {
            try await reportingErrors { try measurePlaceholderCost(repeats: measurePlaceholders) }
            return
        }
        let configuration = transformConfiguration()
        let (input, output, sticker) = (input, output, sticker)
        do {
            let summary = try await BlockingPool.shared.run { () throws -> RecompressSummary in
                let detection = try MIMEDetector().detect(fileAt: input, declaredKind: sticker ? .sticker : nil)
                let kind: MessageKind = sticker ? .sticker : detection.kind
                let isAnimated = detection.metadata.isAnimated == true
                let action = configuration.action(mimeType: detection.mimeType, kind: kind, isAnimated: isAnimated)
                guard action != .none else {
                    throw AttacheError(
                        .unsupportedInput, stage: .transform,
                        "\(detection.mimeType) (\(kind)) is sent as it is: there is nothing to recompress", file: input)
                }
                let workDirectory = try Self.makeWorkDirectory()
                defer { Self.removeDirectory(workDirectory) }
                let transformed = try Transformer.transformBlocking(
                    path: input, mimeType: detection.mimeType, kind: kind, isAnimated: isAnimated,
                    workDirectory: workDirectory, configuration: configuration)
                let source = try FileSource(path: transformed.path)
                try OutputDestination(path: output, stage: .transform).write(try source.makeReader())
                return RecompressSummary(detection: detection, output: transformed)
            }
            // With -o -, standard output carries the file: the summary goes to standard error.
            let summaryToError = output == "-"
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                let line = String(decoding: TerminalText.escapingJSONControls(Array(try encoder.encode(summary))), as: UTF8.self)
                if summaryToError { writeToStandardError(line + "\n") } else { writeToStandardOutput(line + "\n") }
            } else {
                (summaryToError ? writeErrorLine : writeOutputLine)(summary.line(input: input))
            }
        } catch let error as AttacheError {
            throw Console.failing(error)
        }
    }

    private static func makeWorkDirectory() throws -> String {
        var template = Array((PathText.temporaryDirectory + "/attache-recompress-XXXXXX").utf8CString)
        guard let created = mkdtemp(&template) else {
            throw AttacheError(.fileUnwritable, stage: .transform, "cannot create a temporary directory",
                               cause: NativeError.posix())
        }
        return String(cString: created)
    }

    /// Removes the work directory and the files the Transform stage left in it (it makes no subfolders).
    private static func removeDirectory(_ path: String) {
        if let directory = opendir(path) {
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if name != ".", name != ".." { unlink(path + "/" + name) }
            }
            closedir(directory)
        }
        rmdir(path)
    }
}

/// What `attache recompress --json` prints: the image summary fields it always had, and the media facts.
struct RecompressSummary: Encodable {
    var mimeType: String
    var kind: MessageKind
    var inputWidth: Int?
    var inputHeight: Int?
    var outputWidth: Int?
    var outputHeight: Int?
    var inputByteCount: Int64
    var outputByteCount: Int64
    var passedThrough: Bool
    var duration: Double?
    var supportsStreaming: Bool?
    var waveform: String?
    var animation: Bool?
    var plan: String?
    var reason: String?

    init(detection: Detection, output: TransformOutput) {
        mimeType = output.mimeType
        kind = detection.kind
        let rotated = detection.metadata.orientation.map { $0 >= 5 } ?? false
        inputWidth = rotated ? detection.metadata.height : detection.metadata.width
        inputHeight = rotated ? detection.metadata.width : detection.metadata.height
        outputWidth = output.width
        outputHeight = output.height
        inputByteCount = output.originalByteCount
        outputByteCount = output.outputByteCount
        passedThrough = !output.didTransform
        duration = output.duration
        supportsStreaming = output.supportsStreaming
        waveform = output.waveform.map { Base64.encode($0) }
        animation = output.isAnimation ? true : nil
        plan = output.mediaPlan?.rawValue
        reason = output.reason
    }

    func line(input: String) -> String {
        func size(_ width: Int?, _ height: Int?) -> String {
            guard let width, let height else { return "" }
            return "\(width)×\(height) "
        }
        return "\(input): \(size(inputWidth, inputHeight))\(inputByteCount) B → "
            + "\(size(outputWidth, outputHeight))\(outputByteCount) B \(mimeType)"
            + (passedThrough ? " (passed through)" : "")
            + (duration.map { " \(MediaMetadata.format($0)) s" } ?? "")
    }
}
