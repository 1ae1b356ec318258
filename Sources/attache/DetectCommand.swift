import ArgumentParser
import Attache
import Foundation

/// `attache detect FILE... [--json]`: prints what each file is, one line per file.
struct DetectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "detect",
        abstract: "Detect the MIME type, message kind and metadata of files from their content.",
        discussion: """
            Prints `path: mime (kind)` per file, like `file --mime-type` plus the message kind, and \
            ` [mismatch: extension says TYPE]` when the extension lies. With --json, prints one JSON \
            object per line: path, mime, kind, mismatch, extensionMime, the metadata read from the \
            headers, and error (with code) for files that could not be read. Exits 1 when some file \
            could not be read (the others are still printed).
            """)

    @Argument(help: "The files to detect.")
    var files: [String]

    @Flag(name: .long, help: "Print one JSON object per line.")
    var json = false

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one file") }
    }

    func run() async throws {
        let detector = MIMEDetector()
        var failed = false
        var output = ""
        output.reserveCapacity(files.count * 80)
        for path in files {
            do {
                let detection = try detector.detect(fileAt: path)
                output += json ? Self.jsonLine(path, detection) : Self.textLine(path, detection)
            } catch let error as AttacheError {
                failed = true
                if json {
                    output += "{\"path\":\(Self.quoted(path)),\"error\":\(Self.quoted(error.message)),\"code\":\(Self.quoted(error.code.rawValue))}\n"
                } else {
                    FileHandle.standardError.write(Data("attache detect: \(error)\n".utf8))
                }
            }
            if output.utf8.count > 1 << 16 {
                FileHandle.standardOutput.write(Data(output.utf8))
                output.removeAll(keepingCapacity: true)
            }
        }
        FileHandle.standardOutput.write(Data(output.utf8))
        if failed { throw ExitCode(1) }
    }

    static func textLine(_ path: String, _ detection: Detection) -> String {
        var line = "\(path): \(detection.mimeType) (\(detection.kind))"
        if detection.mismatch, let claimed = detection.extensionMIMEType {
            line += " [mismatch: extension says \(claimed)]"
        }
        return line + "\n"
    }

    static func jsonLine(_ path: String, _ detection: Detection) -> String {
        var line = "{\"path\":\(quoted(path)),\"mime\":\(quoted(detection.mimeType)),\"kind\":\(quoted(detection.kind.rawValue))"
        line += ",\"mismatch\":\(detection.mismatch),\"extensionMime\":"
        line += detection.extensionMIMEType.map(quoted) ?? "null"
        // Metadata keys come from the upload fields, with numbers and booleans unquoted.
        for field in detection.uploadFields where field.name != "mimeType" && field.name != "kind" {
            let bare = ["width", "height", "orientation", "rotation", "hasAlpha", "isAnimated", "frameCount",
                        "duration", "sampleRate", "channels"].contains(field.name)
            line += ",\(quoted(field.name)):\(bare ? field.value : quoted(field.value))"
        }
        return line + "}\n"
    }

    /// A JSON string literal. Paths that are not valid UTF-8 were already repaired by the argument parser.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }
}
