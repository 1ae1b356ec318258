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
            var handler = TerminalLogHandler(label: label)
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
///
/// Every line for people goes through ``TerminalText``, so a file name or a server message cannot
/// send escape sequences to the terminal; JSON lines are written with ``outJSON(_:)``, whose encoder
/// escapes control characters the JSON way.
enum Console {
    static let stderrIsTerminal = isatty(STDERR_FILENO) == 1

    /// One line for people on stdout, control characters escaped.
    static func out(_ line: String) {
        writeToStandardOutput(TerminalText.escaping(line) + "\n")
    }

    /// One JSON object on stdout, on one line (``json(_:)``).
    static func outJSON<T: Encodable>(_ value: T) {
        writeToStandardOutput(json(value) + "\n")
    }

    /// One line for people on stderr, control characters escaped.
    static func err(_ line: String) {
        writeToStandardError(TerminalText.escaping(line) + "\n")
    }

    /// Redraws the current stderr line (terminal only); `text`'s control characters are escaped.
    static func status(_ text: String) {
        guard stderrIsTerminal else { return }
        writeToStandardError("\r\u{1B}[2K" + TerminalText.escaping(text))
    }

    static func clearStatus() {
        guard stderrIsTerminal else { return }
        writeToStandardError("\r\u{1B}[2K")
    }

    /// One JSON object, keys sorted, on one line; DEL and C1 controls escaped as well as C0
    /// (``TerminalText/escapingJSONControls(_:)``).
    static func json<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: TerminalText.escapingJSONControls(Array(data)), as: UTF8.self)
    }
}

/// swift-log's stderr handler with the message and metadata values escaped (``TerminalText``): a
/// verbose log line quotes server answers and file names.
struct TerminalLogHandler: LogHandler {
    private var inner: StreamLogHandler

    init(label: String) { inner = StreamLogHandler.standardError(label: label) }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue.map { .string(TerminalText.escaping("\($0)")) } }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(TerminalText.escaping(event.message.description))"
        event.metadata = event.metadata?.mapValues { .string(TerminalText.escaping("\($0)")) }
        inner.log(event: event)
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
