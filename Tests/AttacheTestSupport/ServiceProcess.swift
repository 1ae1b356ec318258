import Attache
import AttacheCore
import Foundation
import Testing

/// A server the tests start from `Tools/` or a Python package (an S3 emulator, a Bot API look-alike),
/// with its own environment, stopped by pid with SIGKILL.
package final class ServiceProcess {
    package let process: Process
    /// The port from the server's ready line (`listening PORT`), or the one it was told to use.
    package let port: Int

    /// The folder of the test tools: `Tests/IntegrationTests/Tools` in the source tree.
    package static let tools = integrationTestsFolder + "/Tools"

    /// Starts `arguments` and waits until its output (stdout and stderr together) has a line containing
    /// `ready`. With `port` nil, the line must be `listening PORT`.
    package init(_ arguments: [String], environment: [String: String] = [:], ready: String = "listening ", port: Int? = nil) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let handle = pipe.fileHandleForReading
        // Blocking reads on a pool thread until the ready line; then the pipe keeps being drained so that
        // a server that logs every request never blocks on a full pipe.
        let line = try await onOwnThread { () -> String? in
            var text = ""
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return nil }
                text += String(decoding: chunk, as: UTF8.self)
                if let found = text.split(separator: "\n").first(where: { $0.contains(ready) }) { return String(found) }
            }
        }
        Thread.detachNewThread { while !handle.availableData.isEmpty {} }
        guard let line else {
            kill(process.processIdentifier, SIGKILL)
            throw TestFailure("\(arguments.joined(separator: " ")) ended before it was ready")
        }
        if let port {
            self.port = port
        } else {
            guard let announced = line.split(separator: " ").last.flatMap({ Int($0) }) else {
                kill(process.processIdentifier, SIGKILL)
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

    /// SIGKILL by pid, then reap.
    package func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// `Tests/IntegrationTests` in the source tree, found from this file's place in it.
package let integrationTestsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("IntegrationTests").path
