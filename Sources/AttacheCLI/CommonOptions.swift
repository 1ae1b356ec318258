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

    /// Sets up swift-log (once per process), writing to stderr at this command's level and in its format,
    /// and returns the command's logger. A line written inside a span carries its trace and span ids.
    package func bootstrapLogging() -> Logger {
        LogSettings.set(LogSettings(level: logLevel ?? (verbose ? .debug : .warning), format: logFormat))
        _ = LogSettings.bootstrapped
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

    /// The one way a command ends on an error: `attache: MESSAGE [code]` on stderr (`text` replaces the
    /// message where it must be redacted), and the exit code of its status (``ExitStatus/forError(_:)``)
    /// for the caller to throw.
    package static func failing(_ error: AttacheError, text: String? = nil) -> ExitCode {
        err("attache: \(text ?? error.description) [\(error.code)]")
        return ExitCode(ExitStatus.forError(error))
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

/// swift-log's handler for the tool: one line per event on standard error (``CommandIO``), with the
/// message and metadata values escaped (``TerminalText``), since a verbose log line quotes server answers
/// and file names.
package struct TerminalLogHandler: LogHandler {
    private let label: String
    private let metadataProvider: Logger.MetadataProvider?
    package var logLevel: Logger.Level = .warning
    package var metadata: Logger.Metadata = [:]

    package init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var line = "\(Self.timestamp()) \(event.level) \(label) :"
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let own = event.metadata { merged.merge(own) { $1 } }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            line += " \(key)=\(value)"
        }
        line += " [\(event.source)] \(event.message)"
        writeToStandardError(TerminalText.escaping(line) + "\n")
    }

    /// The local time as ISO 8601 with the offset, as swift-log's stream handler writes it.
    private static func timestamp() -> String {
        var now = time(nil)
        var parts = tm()
        localtime_r(&now, &parts)
        var buffer = [Int8](repeating: 0, count: 32)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
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
