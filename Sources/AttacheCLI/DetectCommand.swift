package import ArgumentParser
import AttacheCore
import Glibc

/// `attache detect FILE... [--json]`: prints what each file is, one line per file.
package struct DetectCommand: AsyncParsableCommand, PathListCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "detect",
        abstract: "Detect the MIME type, message kind and metadata of files from their content.",
        discussion: """
            Prints `path: mime (kind)` per file, like `file --mime-type` plus the message kind, and \
            ` [mismatch: extension says TYPE]` when the extension lies. With --json, prints one JSON \
            object per line: path, mime, kind, mismatch, extensionMime, the metadata read from the \
            headers, and error (with code) for files that could not be read. When some file could not \
            be read, the others are still printed and the exit status is the first failure's (66 for \
            a missing or unreadable file; docs/EXIT-STATUS.md).

            With --placeholders, images and stickers (and, with ffmpeg, videos and animations: their \
            first frame) also get the placeholders a chat client draws before the file arrives: \
            BlurHash, ThumbHash (base64) and Telegram's stripped thumbnail (base64), from the same \
            40 px downscale as upload's receipt. Text: ` blurhash=… thumbhash=… stripped=…`; JSON: \
            "placeholders": {"blurhash","thumbhash","stripped"}.
            """)

    @Argument(help: "The files to detect.")
    var files: [String] = []

    @OptionGroup var list: PathListOptions

    @Flag(name: .long, help: "Print one JSON object per line.")
    var json = false

    @Flag(help: "Also compute the placeholders (BlurHash, ThumbHash, Telegram's stripped thumbnail) of pictures.")
    var placeholders = false

    @Option(help: ArgumentHelp("With --placeholders: BlurHash components across x down, each 1-9.", valueName: "XxY"))
    var blurhashComponents = BlurHashComponents(argument: "4x3")!

    package mutating func validate() throws {
        CommandLinePaths.restore(&files)
        try list.appending(to: &files)
        if files.isEmpty { throw ValidationError("give at least one file (or --files-from)") }
    }

    package func run() async throws {
        let status = Self.detect(files, json: json, placeholders: placeholders ? blurhashComponents.options : nil)
        if status != ExitStatus.success { throw ExitCode(status) }
    }

    /// Detects `files` in order and prints one line per file; returns 0, or the status
    /// (``ExitStatus/table``) of the first file that could not be read.
    static func detect(_ files: [String], json: Bool, placeholders: PlaceholderOptions? = nil) -> Int32 {
        let detector = MIMEDetector()
        var output = OutputBuffer(descriptor: STDOUT_FILENO)
        var scratch: [UInt8] = []
        var status = ExitStatus.success
        for path in files {
            do {
                let detection = try detector.detect(fileAt: path, reusing: &scratch)
                let made = try placeholders.flatMap { try Self.placeholders(of: path, detection: detection, options: $0) }
                if json {
                    output.appendJSONLine(path, detection, placeholders: made)
                } else {
                    output.appendTextLine(path, detection, placeholders: made)
                }
            } catch let error as AttacheError {
                if status == ExitStatus.success { status = ExitStatus.forError(error) }
                if json {
                    output.append("{\"path\":")
                    output.appendQuoted(path)
                    output.append(",\"error\":")
                    output.appendQuoted(error.message)
                    output.append(",\"code\":")
                    output.appendQuoted(error.code.rawValue)
                    output.append("}\n")
                } else {
                    output.flush()
                    var message = OutputBuffer(descriptor: STDERR_FILENO)
                    message.append("attache detect: ")
                    message.appendEscaped("\(error)")
                    message.append("\n")
                    message.flush()
                }
            } catch {
                if status == ExitStatus.success { status = ExitStatus.internalError }
            }
        }
        output.flush()
        return status
    }
}

extension DetectCommand {
    /// The placeholders of a picture: an image or sticker decoded here, a video or animation's first frame
    /// through ffmpeg (nil when ffmpeg is missing); nil for other kinds.
    /// - Throws: ``AttacheError`` when the picture cannot be decoded.
    static func placeholders(of path: String, detection: Detection, options: PlaceholderOptions) throws -> Placeholders? {
        var imageOptions = ImageRecompressor.Options.standard
        imageOptions.placeholders = options
        let sides = [StrippedThumbnail.side]
        switch detection.kind {
        case .image, .sticker:
            guard detection.mimeType.hasPrefix("image/") else { return nil }
            if detection.metadata.isAnimated == true, detection.kind == .image {
                return try mediaPlaceholders(path, options: options)
            }
            let bytes = try EncryptCommand.readWholeFile(path)
            do {
                return try ImageRecompressor(options: imageOptions).previews(ofImage: bytes, sides: sides).placeholders
            } catch let error as AttacheError where error.code == .unsupportedInput {
                return nil
            }
        case .video:
            return try mediaPlaceholders(path, options: options)
        default:
            return nil
        }
    }

    private static func mediaPlaceholders(_ path: String, options: PlaceholderOptions) throws -> Placeholders? {
        var media = MediaOptions()
        media.placeholders = options
        guard let converter = MediaConverter.locate(options: media) else { return nil }
        return try converter.posterPreviews(of: path, sides: [StrippedThumbnail.side]).placeholders
    }
}

/// Bytes for standard output, written with `write(2)` when 64 KiB have gathered: one system call
/// per few hundred lines, and no `String` built per line.
struct OutputBuffer {
    private let descriptor: Int32
    private var bytes: [UInt8] = []
    private static let threshold = 64 << 10

    init(descriptor: Int32) {
        self.descriptor = descriptor
        bytes.reserveCapacity(Self.threshold + 4096)
    }

    mutating func append(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Text for people: control characters escaped (``TerminalText``).
    mutating func appendEscaped(_ text: String) {
        TerminalText.append(text, to: &bytes)
    }

    mutating func append(_ value: Int) {
        if value < 0 {
            bytes.append(UInt8(ascii: "-"))
            if value == .min {
                append("9223372036854775808")
                return
            }
        }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of room, filled from the end
        var count = 0
        withUnsafeMutableBytes(of: &digits) { room in
            repeat {
                count += 1
                room[room.count - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: room[(room.count - count)...])
        }
    }

    mutating func append(_ value: Bool) {
        if value { append("true") } else { append("false") }
    }

    /// Seconds with two decimals and no exponent (`3.52`, `0.00`), as in the upload fields.
    mutating func appendSeconds(_ seconds: Double) {
        guard seconds.isFinite else {
            append("0.00")
            return
        }
        let hundredths = Int64((min(max(seconds, 0), 1e15) * 100).rounded())
        append(Int(hundredths / 100))
        bytes.append(UInt8(ascii: "."))
        let fraction = Int(hundredths % 100)
        if fraction < 10 { bytes.append(UInt8(ascii: "0")) }
        append(fraction)
    }

    /// A JSON string literal: quotes, backslashes and control characters (C0, DEL and, by
    /// ``TerminalText/escapingJSONControls(_:)``'s rule, C1) escaped; everything else, non-ASCII
    /// included, as its UTF-8 bytes.
    mutating func appendQuoted(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var afterC2 = false
        for byte in text.utf8 {
            if afterC2 {
                afterC2 = false
                if byte < 0xA0 {
                    // U+0080…U+009F (C2 80…C2 9F): the C2 was held back.
                    append("\\u00")
                    appendHex(byte)
                    continue
                }
                bytes.append(0xC2)
            }
            switch byte {
            case UInt8(ascii: "\""): append("\\\"")
            case UInt8(ascii: "\\"): append("\\\\")
            case 0x0A: append("\\n")
            case 0x0D: append("\\r")
            case 0x09: append("\\t")
            case 0..<0x20, 0x7F:
                append("\\u00")
                appendHex(byte)
            case 0xC2:
                afterC2 = true
            default:
                bytes.append(byte)
            }
        }
        if afterC2 { bytes.append(0xC2) }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendHex(_ byte: UInt8) {
        let hex: StaticString = "0123456789abcdef"
        bytes.append(hex.utf8Start[Int(byte >> 4)])
        bytes.append(hex.utf8Start[Int(byte & 0x0F)])
    }

    /// `path: mime (kind)`, and ` [mismatch: extension says TYPE]` when the extension lies.
    mutating func appendTextLine(_ path: String, _ detection: Detection, placeholders: Placeholders? = nil) {
        appendEscaped(path)
        append(": ")
        appendEscaped(detection.mimeType)
        append(" (")
        append(detection.kind.rawValue)
        append(")")
        if detection.mismatch, let claimed = detection.extensionMIMEType {
            append(" [mismatch: extension says ")
            appendEscaped(claimed)
            append("]")
        }
        if let placeholders {
            append(" blurhash=")
            appendEscaped(placeholders.blurhash)
            append(" thumbhash=")
            append(placeholders.thumbhash)
            if let stripped = placeholders.stripped {
                append(" stripped=")
                append(stripped)
            }
        }
        append("\n")
        flushIfFull()
    }

    /// `{"path","mime","kind","mismatch","extensionMime", …metadata}` with the metadata keys of the
    /// upload fields, in their order; numbers and booleans bare.
    mutating func appendJSONLine(_ path: String, _ detection: Detection, placeholders: Placeholders? = nil) {
        append("{\"path\":")
        appendQuoted(path)
        append(",\"mime\":")
        appendQuoted(detection.mimeType)
        append(",\"kind\":\"")
        append(detection.kind.rawValue)
        append("\",\"mismatch\":")
        append(detection.mismatch)
        append(",\"extensionMime\":")
        if let type = detection.extensionMIMEType { appendQuoted(type) } else { append("null") }
        let metadata = detection.metadata
        if let width = metadata.width { append(",\"width\":"); append(width) }
        if let height = metadata.height { append(",\"height\":"); append(height) }
        if let orientation = metadata.orientation { append(",\"orientation\":"); append(orientation) }
        if let rotation = metadata.rotation { append(",\"rotation\":"); append(rotation) }
        if let hasAlpha = metadata.hasAlpha { append(",\"hasAlpha\":"); append(hasAlpha) }
        if let isAnimated = metadata.isAnimated { append(",\"isAnimated\":"); append(isAnimated) }
        if let frameCount = metadata.frameCount { append(",\"frameCount\":"); append(frameCount) }
        if let duration = metadata.duration { append(",\"duration\":"); appendSeconds(duration) }
        if let codec = metadata.audioCodec { append(",\"audioCodec\":"); appendQuoted(codec) }
        if let codec = metadata.videoCodec { append(",\"videoCodec\":"); appendQuoted(codec) }
        if let sampleRate = metadata.sampleRate { append(",\"sampleRate\":"); append(sampleRate) }
        if let channels = metadata.channels { append(",\"channels\":"); append(channels) }
        if let encoding = metadata.textEncoding { append(",\"textEncoding\":"); appendQuoted(encoding) }
        if let title = metadata.title { append(",\"title\":"); appendQuoted(title) }
        if let performer = metadata.performer { append(",\"performer\":"); appendQuoted(performer) }
        if let album = metadata.album { append(",\"album\":"); appendQuoted(album) }
        if let placeholders {
            append(",\"placeholders\":{\"blurhash\":")
            appendQuoted(placeholders.blurhash)
            append(",\"thumbhash\":")
            appendQuoted(placeholders.thumbhash)
            append(",\"stripped\":")
            if let stripped = placeholders.stripped { appendQuoted(stripped) } else { append("null") }
            append("}")
        }
        append("}\n")
        flushIfFull()
    }

    private mutating func flushIfFull() {
        if bytes.count >= Self.threshold { flush() }
    }

    /// Writes everything gathered; a failed write (a closed pipe) drops the output, as `print` would.
    mutating func flush() {
        bytes.withUnsafeBytes { CommandIO.write($0, to: descriptor) }
        bytes.removeAll(keepingCapacity: true)
    }
}
