import ArgumentParser
import AttacheCore
import Foundation
package import Logging
import Tracing

/// How log lines are written: `text` for people, `json` for log shippers.
package enum LogFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// `time level label: message key=value…`, escaped for the terminal.
    case text
    /// One JSON object per line: `time`, `level`, `label`, `message`, `metadata`, and `trace_id` and
    /// `span_id` inside a span.
    case json
}

/// The level and format of the running command's log lines: the process's, or those of a command run
/// in-process (kept in its ``CommandIO/Capture``).
package struct LogSettings: Sendable {
    /// The lowest level written.
    package var level: Logger.Level = .warning
    /// Text or JSON lines.
    package var format: LogFormat = .text

    private static let process = LockedValue(LogSettings())

    /// The settings of the running command.
    static var current: LogSettings { CommandIO.capture?.logSettings ?? process.withLock { $0 } }

    /// Sets the settings of the running command; loggers made from now on follow them.
    static func set(_ settings: LogSettings) {
        if let capture = CommandIO.capture {
            capture.logSettings = settings
        } else {
            process.withLock { $0 = settings }
        }
    }

    /// Bootstraps swift-log the first time it is read: each new logger gets the handler of the running
    /// command's format and level, and the trace ids of the span it logs in (``traceMetadataProvider``).
    static let bootstrapped: Void = LoggingSystem.bootstrap(
        { label, provider in
            let settings = LogSettings.current
            switch settings.format {
            case .text:
                var handler = TerminalLogHandler(label: label, metadataProvider: provider)
                handler.logLevel = settings.level
                return handler
            case .json:
                var handler = JSONLogHandler(label: label, metadataProvider: provider)
                handler.logLevel = settings.level
                return handler
            }
        }, metadataProvider: traceMetadataProvider)
}

/// Writes each log event to stderr as one JSON object on one line.
package struct JSONLogHandler: LogHandler {
    package var logLevel: Logger.Level = .info
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    private let label: String

    package init(label: String, metadataProvider: Logger.MetadataProvider?) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    private struct Line: Encodable {
        let time: String
        let level: String
        let label: String
        let message: String
        let metadata: [String: String]?
        let trace_id: String?
        let span_id: String?
    }

    package func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let own = event.metadata { merged.merge(own) { $1 } }
        let traceID = merged.removeValue(forKey: "trace_id").map { "\($0)" }
        let spanID = merged.removeValue(forKey: "span_id").map { "\($0)" }
        let line = Line(
            time: Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true)),
            level: event.level.rawValue, label: label, message: event.message.description,
            metadata: merged.isEmpty ? nil : merged.mapValues { "\($0)" }, trace_id: traceID, span_id: spanID)
        writeToStandardError(Console.json(line) + "\n")
    }
}

/// Adds `trace_id` and `span_id` to every log line written inside a span, read from the W3C
/// `traceparent` that the bootstrapped instrument writes for the current context (nothing without one).
package let traceMetadataProvider = Logger.MetadataProvider {
    guard let context = InstrumentationContext.current else { return [:] }
    var fields: [String: String] = [:]
    InstrumentationSystem.instrument.inject(context, into: &fields, using: DictionaryInjector())
    // traceparent: version-traceid-spanid-flags
    let parts = fields["traceparent"]?.split(separator: "-") ?? []
    guard parts.count == 4, parts[1].count == 32, parts[2].count == 16 else { return [:] }
    return ["trace_id": .string(String(parts[1])), "span_id": .string(String(parts[2]))]
}

private struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}
