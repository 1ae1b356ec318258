import Logging
import Synchronization

/// Every log line written through its loggers, level, message and metadata: for the redaction tests.
package final class CapturedLog: Sendable {
    package init() {}

    private let lines = Mutex<[String]>([])
    package var all: [String] { lines.withLock { $0 } }
    package var text: String { all.joined(separator: "\n") }

    package func logger(level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "test.http") { _ in Handler(log: self) }
        logger.logLevel = level
        return logger
    }

    struct Handler: LogHandler {
        let log: CapturedLog
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            log.lines.withLock { $0.append("\(event.level) \(event.message) \(merged)") }
        }
    }
}
