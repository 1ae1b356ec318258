package import ArgumentParser
package import Attache
import FoundationEssentials
import Glibc
package import Logging

/// Options every command shares.
package struct GlobalOptions: ParsableArguments {
    package init() {}

    @Flag(name: .shortAndLong, help: "Log requests, retries and stage timings to stderr.")
    package var verbose = false

    @Option(name: .long, help: ArgumentHelp("Log level: trace, debug, info, notice, warning, error.", valueName: "level"))
    package var logLevel: Logger.Level?

    @Option(name: .long, help: ArgumentHelp("Log lines as text, or as one JSON object per line.", valueName: "format"))
    package var logFormat: LogFormat = .text

    /// Sets up swift-log once, writing to stderr; a line written inside a span carries its trace and
    /// span ids.
    package func bootstrapLogging() -> Logger {
        let level = logLevel ?? (verbose ? .debug : .warning)
        let format = logFormat
        LoggingSystem.bootstrap({ label, provider in
            switch format {
            case .text:
                var handler = TerminalLogHandler(label: label, metadataProvider: provider)
                handler.logLevel = level
                return handler
            case .json:
                var handler = JSONLogHandler(label: label, metadataProvider: provider)
                handler.logLevel = level
                return handler
            }
        }, metadataProvider: traceMetadataProvider)
        return Logger(label: "attache")
    }
}

/// Writes to stderr and stdout without buffering surprises between the two.
///
/// Every line for people goes through ``TerminalText``, so a file name or a server message cannot
/// send escape sequences to the terminal; JSON lines are written with ``outJSON(_:)``, whose encoder
/// escapes control characters the JSON way.
package enum Console {
    package static let stderrIsTerminal = isatty(STDERR_FILENO) == 1

    /// One line for people on stdout, control characters escaped.
    package static func out(_ line: String) {
        writeToStandardOutput(TerminalText.escaping(line) + "\n")
    }

    /// One JSON object on stdout, on one line (``json(_:)``).
    package static func outJSON<T: Encodable>(_ value: T) {
        writeToStandardOutput(json(value) + "\n")
    }

    /// One line for people on stderr, control characters escaped.
    package static func err(_ line: String) {
        writeToStandardError(TerminalText.escaping(line) + "\n")
    }

    /// Redraws the current stderr line (terminal only); `text`'s control characters are escaped.
    package static func status(_ text: String) {
        guard stderrIsTerminal else { return }
        writeToStandardError("\r\u{1B}[2K" + TerminalText.escaping(text))
    }

    package static func clearStatus() {
        guard stderrIsTerminal else { return }
        writeToStandardError("\r\u{1B}[2K")
    }

    /// One JSON object, keys sorted, on one line; DEL and C1 controls escaped as well as C0
    /// (``TerminalText/escapingJSONControls(_:)``).
    package static func json<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: TerminalText.escapingJSONControls(Array(data)), as: UTF8.self)
    }
}

/// swift-log's stderr handler with the message and metadata values escaped (``TerminalText``): a
/// verbose log line quotes server answers and file names.
package struct TerminalLogHandler: LogHandler {
    private var inner: StreamLogHandler

    package init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        inner = StreamLogHandler.standardError(label: label, metadataProvider: metadataProvider)
    }

    package var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    package var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue.map { .string(TerminalText.escaping("\($0)")) } }
    }

    package func log(event: LogEvent) {
        var event = event
        event.message = "\(TerminalText.escaping(event.message.description))"
        event.metadata = event.metadata?.mapValues { .string(TerminalText.escaping("\($0)")) }
        inner.log(event: event)
    }
}

/// The JSON line printed for a file that failed.
package struct FailureLine: Encodable {
    package let path: String
    package let status = "error"
    package let stage: String
    package let code: String
    package let message: String
    package let retryable: Bool

    package init(path: String, error: AttacheError) {
        self.path = path
        self.stage = error.stage.rawValue
        self.code = error.code.rawValue
        self.message = error.message
        self.retryable = error.isRetryable
    }
}

/// Formats byte counts for people: 999 B, 1.2 KB, 3.4 MB (decimal units).
package func formatBytes(_ count: Int64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"]
    var value = Double(count)
    var unit = 0
    while value >= 1000, unit < units.count - 1 {
        value /= 1000
        unit += 1
    }
    return unit == 0 ? "\(count) B" : "\(value.formatted(decimals: 1)) \(units[unit])"
}
