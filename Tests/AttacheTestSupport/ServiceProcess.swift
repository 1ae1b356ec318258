import Attache
import AttacheCore
import Foundation
import Synchronization
import Testing

/// A server the tests start from `Tools/` or a Python package (an S3 emulator, a Bot API look-alike),
/// with its own environment, stopped by pid with SIGKILL.
///
/// Its output (stdout and stderr together) is kept: the last 256 KiB in memory, for ``outputTail(lines:)``
/// in a failure message, and all of it in `FOLDER/NAME-ID.log` when `ATTACHE_TEST_SERVICE_LOGS` names a folder.
package final class ServiceProcess {
    package let process: ChildProcess
    /// The port from the server's ready line (`listening PORT`), or the one it was told to use.
    package let port: Int

    /// The folder of the test tools: `Tests/IntegrationTests/Tools` in the source tree.
    package static let tools = integrationTestsFolder + "/Tools"

    /// Starts `arguments` and waits until its output (stdout and stderr together) has a line containing
    /// `ready`. With `port` nil, the line must be `listening PORT`.
    package init(_ arguments: [String], environment: [String: String] = [:], ready: String = "listening ", port: Int? = nil) async throws {
        let folder = ProcessInfo.processInfo.environment["ATTACHE_TEST_SERVICE_LOGS"].flatMap { $0.isEmpty ? nil : $0 }
        let process = try ChildProcess(
            executable: arguments[0], arguments: Array(arguments.dropFirst()), environment: environment,
            streams: .merged(keep: 256 << 10, log: folder.map { $0 + "/" + Self.name(arguments) + "-\(UUID().uuidString.prefix(8)).log" }))
        // A bound on a hang only: the slowest of them (an S3 emulator on a loaded machine) takes seconds.
        guard let line = await process.waitForLine(containing: ready, upTo: 300) else {
            process.kill()
            process.waitForExit()
            throw TestFailure("\(arguments.joined(separator: " ")) ended, or was not ready in 300 s: \(process.outputTail(lines: 40))")
        }
        if let port {
            self.port = port
        } else {
            guard let announced = line.split(separator: " ").last.flatMap({ Int($0) }) else {
                process.kill()
                process.waitForExit()
                throw TestFailure("no port in \(line)")
            }
            self.port = announced
        }
        self.process = process
    }

    /// A Python test server from `Tests/IntegrationTests/Tools/` that prints `listening PORT` when ready.
    package static func python(_ script: String, _ arguments: [String] = []) async throws -> ServiceProcess {
        try await ServiceProcess(["/usr/bin/env", "python3", tools + "/" + script] + arguments)
    }

    /// What a log is named after: the module of `python -m MODULE`, else the script, else the executable.
    private static func name(_ arguments: [String]) -> String {
        if let flag = arguments.firstIndex(of: "-m"), flag + 1 < arguments.count { return arguments[flag + 1] }
        let script = arguments.dropFirst().first { $0.hasSuffix(".py") } ?? arguments[0]
        return URL(fileURLWithPath: script).lastPathComponent
    }

    /// SIGKILL by pid, then reap.
    package func stop() {
        process.kill()
        process.waitForExit()
    }

    /// The last `lines` lines the server wrote (of its last 256 KiB), for a failure message.
    package func outputTail(lines: Int = 60) -> String {
        process.outputTail(lines: lines)
    }
}

/// `Tests/IntegrationTests` in the source tree, found from this file's place in it.
package let integrationTestsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("IntegrationTests").path
