import ArgumentParser
import Attache
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

/// Exit statuses, documented in the README. One switch maps error codes to them.
enum ExitStatus {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 64
    static let badInput: Int32 = 65
    static let cannotRead: Int32 = 66
    static let internalError: Int32 = 70
    static let unavailable: Int32 = 69
    static let ioError: Int32 = 74
    static let temporaryFailure: Int32 = 75
    static let badResponse: Int32 = 76
    static let rejected: Int32 = 77
    static let cancelled: Int32 = 130

    static func forError(_ error: AttacheError) -> Int32 {
        switch error.code {
        case .invalidArgument: return usage
        case .fileNotFound, .fileUnreadable: return cannotRead
        case .corruptInput, .unsupportedInput, .limitExceeded, .invalidKey, .authenticationFailed:
            return badInput
        case .fileUnwritable: return ioError
        case .connectionFailed, .tlsFailure: return unavailable
        case .connectionLost, .timedOut, .retriesExhausted, .fileChanged, .journalBusy: return temporaryFailure
        case .badResponse: return badResponse
        case .rejected: return rejected
        case .cancelled: return cancelled
        case .internalError, .nativeLibrary: return internalError
        default: return failure
        }
    }
}

/// Writes to stderr and stdout without buffering surprises between the two.
enum Console {
    static let stderrIsTerminal = isatty(STDERR_FILENO) == 1

    static func out(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func err(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Redraws the current stderr line (terminal only).
    static func status(_ text: String) {
        guard stderrIsTerminal else { return }
        FileHandle.standardError.write(Data(("\r\u{1B}[2K" + text).utf8))
    }

    static func clearStatus() {
        guard stderrIsTerminal else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
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
