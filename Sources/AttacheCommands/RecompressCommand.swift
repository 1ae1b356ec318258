package import ArgumentParser
import AttacheCore
// JSONEncoder without the rest of Foundation: ArgumentParser links FoundationEssentials already.
import FoundationEssentials

/// `attache recompress`: one image to a small clean JPEG, WebP, or a sticker.
package struct RecompressCommand: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "recompress",
        abstract: "Recompress an image the way uploads do: resized, upright, metadata stripped.",
        discussion: """
            Reads a JPEG, PNG, WebP or BMP image and writes a JPEG (default) or WebP. With --sticker, writes \
            a WebP sticker whose longer side is exactly 512 px and that fits in 512 KB.
            """)

    @Argument(help: "The image to read.")
    var input: String

    @Option(name: .shortAndLong, help: ArgumentHelp(
        "Where to write the result (replaced only on success); - for standard output, the summary then going to standard error. An existing FIFO or device is written in place.",
        valueName: "output"))
    var output: String

    @Option(name: .long, help: "The longest side of the result, in pixels (default 1280).")
    var maxSide: Int?

    @Option(name: .long, help: "Encoder quality, 1–100 (default 82).")
    var quality: Int?

    @Option(name: .long, help: "Output format: jpeg or webp.")
    var format: String = "jpeg"

    @Flag(name: .long, help: "Make a sticker (WebP, 512 px, ≤ 512 KB) instead of a photo.")
    var sticker = false

    @Flag(name: .long, help: "Write a progressive JPEG.")
    var progressive = false

    @Flag(name: .long, help: "Print the result as one JSON object.")
    var json = false

    package func validate() throws {
        if let maxSide, !(16...16384).contains(maxSide) {
            throw ValidationError("--max-side must be between 16 and 16384")
        }
        if let quality, !(1...100).contains(quality) {
            throw ValidationError("--quality must be between 1 and 100")
        }
        guard ImageFormat(rawValue: format) != nil else {
            throw ValidationError("--format must be jpeg or webp")
        }
    }

    package func run() async throws {
        var options = ImageRecompressor.Options.standard
        if let maxSide { options.maxSide = maxSide }
        if let quality { options.quality = quality }
        options.format = ImageFormat(rawValue: format) ?? .jpeg
        options.progressive = progressive
        let recompressor = ImageRecompressor(options: options)
        let (input, output, sticker) = (input, output, sticker)
        do {
            let result = try await BlockingPool.shared.run {
                sticker
                    ? try recompressor.makeSticker(fileAt: input, to: output)
                    : try recompressor.recompress(fileAt: input, to: output)
            }
            // With -o -, standard output carries the image: the summary goes to standard error.
            let summaryToError = output == "-"
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                let line = String(decoding: TerminalText.escapingJSONControls(Array(try encoder.encode(result))), as: UTF8.self)
                if summaryToError { writeToStandardError(line + "\n") } else { writeToStandardOutput(line + "\n") }
            } else {
                (summaryToError ? writeErrorLine : writeOutputLine)("\(input): \(result.inputWidth)×\(result.inputHeight) \(result.inputByteCount) B → "
                      + "\(result.outputWidth)×\(result.outputHeight) \(result.outputByteCount) B \(result.mimeType)"
                      + (result.passedThrough ? " (passed through)" : ""))
            }
        } catch let error as AttacheError {
            writeErrorLine("attache: \(error) [\(error.code)]")
            throw ExitCode(ExitStatus.forError(error))
        }
    }
}
