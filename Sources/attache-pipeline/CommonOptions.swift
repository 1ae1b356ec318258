import ArgumentParser
import Attache
import AttacheCommands
import Foundation
import Logging

/// Options every command shares.
struct GlobalOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Log requests, retries and stage timings to stderr.")
    var verbose = false

    @Option(name: .long, help: ArgumentHelp("Log level: trace, debug, info, notice, warning, error.", valueName: "level"))
    var logLevel: String?

    /// Sets up swift-log once, writing to stderr.
    func bootstrapLogging() -> Logger {
        let level: Logger.Level =
            logLevel.flatMap(Logger.Level.init(rawValue:)) ?? (verbose ? .debug : .warning)
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "attache")
    }

    func validate() throws {
        if let logLevel, Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("unknown log level '\(logLevel)'")
        }
    }
}

/// Writes to stderr and stdout without buffering surprises between the two.
enum Console {
    static let stderrIsTerminal = isatty(STDERR_FILENO) == 1

    static func out(_ line: String) {
        writeToStandardOutput(line + "\n")
    }

    static func err(_ line: String) {
        writeToStandardError(line + "\n")
    }

    /// Redraws the current stderr line (terminal only).
    static func status(_ text: String) {
        guard stderrIsTerminal else { return }
        writeToStandardError("\r\u{1B}[2K" + text)
    }

    static func clearStatus() {
        guard stderrIsTerminal else { return }
        writeToStandardError("\r\u{1B}[2K")
    }

    /// One JSON object, keys sorted, on one line.
    static func json<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The JSON line printed for a file that failed.
struct FailureLine: Encodable {
    let path: String
    let status = "error"
    let stage: String
    let code: String
    let message: String
    let retryable: Bool

    init(path: String, error: AttacheError) {
        self.path = path
        self.stage = error.stage.rawValue
        self.code = error.code.rawValue
        self.message = error.message
        self.retryable = error.isRetryable
    }
}

/// Formats byte counts for people: 999 B, 1.2 KB, 3.4 MB (decimal units).
func formatBytes(_ count: Int64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"]
    var value = Double(count)
    var unit = 0
    while value >= 1000, unit < units.count - 1 {
        value /= 1000
        unit += 1
    }
    return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
}

/// Parses a message kind argument, listing the valid ones on error.
func parseKind(_ text: String) throws -> MessageKind {
    guard let kind = MessageKind(rawValue: text.lowercased()) else {
        throw ValidationError(
            "unknown kind '\(text)'; expected one of \(MessageKind.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    return kind
}
