import AttacheCore
import FoundationEssentials
import Glibc

/// Where a command's output goes and which environment it reads: the process's standard output, standard
/// error and environment, unless a caller runs the command inside ``capturing(environment:_:)``.
///
/// Every byte the commands print goes through ``write(_:to:)``, and every variable they read through
/// ``environment``, so that the command tests can run `attache` in this process, many at once, each with
/// its own output and environment (``RootCommand/run(arguments:)``). Output written outside the command's
/// task (a log line from a pool thread) still goes to the process's streams.
package enum CommandIO {
    /// The output and environment of one command run in-process.
    package final class Capture: Sendable {
        /// The environment the command sees (secrets included, as the real process would).
        package let environment: [String: String]
        private let output = LockedValue<[UInt8]>([])
        private let errors = LockedValue<[UInt8]>([])
        private let settings = LockedValue(LogSettings())

        /// The log level and format the command set (``GlobalOptions/bootstrapLogging()``).
        package var logSettings: LogSettings {
            get { settings.withLock { $0 } }
            set { settings.withLock { $0 = newValue } }
        }

        package init(environment: [String: String]) { self.environment = environment }

        /// What the command wrote to standard output.
        package var standardOutput: [UInt8] { output.withLock { $0 } }
        /// What the command wrote to standard error.
        package var standardError: [UInt8] { errors.withLock { $0 } }

        fileprivate func append(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) {
            (descriptor == STDERR_FILENO ? errors : output).withLock { $0.append(contentsOf: bytes) }
        }
    }

    /// The capture of the command running in this task, if any.
    @TaskLocal package static var capture: Capture?

    /// The environment of the running command: the captured one, else the process's.
    package static var environment: [String: String] {
        capture?.environment ?? ProcessInfo.processInfo.environment
    }

    /// Runs `body` with its output captured and `environment` as its environment.
    package static func capturing<Result>(
        environment: [String: String], _ body: () async throws -> Result
    ) async rethrows -> (Result, Capture) {
        let capture = Capture(environment: environment)
        let result = try await $capture.withValue(capture) { try await body() }
        return (result, capture)
    }

    /// Writes `bytes` to `descriptor` (standard output or error), or to the capture when there is one;
    /// short writes are retried.
    package static func write(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) {
        if let capture {
            capture.append(bytes, to: descriptor)
            return
        }
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}
