import Attache
import AttacheCore
import Foundation
import Synchronization
import Testing

/// A server the tests start from `Tools/` or a Python package (an S3 emulator, a Bot API look-alike),
/// with its own environment, stopped by pid with SIGKILL.
///
/// Its output (stdout and stderr together) is kept: the last 256 KiB in memory, for ``outputTail(lines:)``
/// in a failure message, and all of it in a file when `ATTACHE_TEST_SERVICE_LOGS` names a folder.
package final class ServiceProcess {
    package let process: Process
    /// The port from the server's ready line (`listening PORT`), or the one it was told to use.
    package let port: Int
    private let output: OutputTail

    /// The folder of the test tools: `Tests/IntegrationTests/Tools` in the source tree.
    package static let tools = integrationTestsFolder + "/Tools"

    /// Starts `arguments` and waits until its output (stdout and stderr together) has a line containing
    /// `ready`. With `port` nil, the line must be `listening PORT`.
    package init(_ arguments: [String], environment: [String: String] = [:], ready: String = "listening ", port: Int? = nil) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let pipe = try ChildPipe()
        try process.run(input: nil, output: pipe, error: pipe)
        let handle = pipe.fileHandleForReading
        let output = OutputTail(logNamed: Self.name(arguments) + "-\(process.processIdentifier)")
        self.output = output
        // Blocking reads on a pool thread until the ready line; then the pipe keeps being drained (and kept)
        // so that a server that logs every request never blocks on a full pipe.
        let line = try await onOwnThread { () -> String? in
            var text = ""
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return nil }
                output.append(chunk)
                text += String(decoding: chunk, as: UTF8.self)
                if let found = text.split(separator: "\n").first(where: { $0.contains(ready) }) { return String(found) }
            }
        }
        Thread.detachNewThread {
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                output.append(chunk)
            }
        }
        guard let line else {
            kill(process.processIdentifier, SIGKILL)
            throw TestFailure("\(arguments.joined(separator: " ")) ended before it was ready: \(output.tail(lines: 40))")
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

    /// What a log is named after: the module of `python -m MODULE`, else the script, else the executable.
    private static func name(_ arguments: [String]) -> String {
        if let flag = arguments.firstIndex(of: "-m"), flag + 1 < arguments.count { return arguments[flag + 1] }
        let script = arguments.dropFirst().first { $0.hasSuffix(".py") } ?? arguments[0]
        return URL(fileURLWithPath: script).lastPathComponent
    }

    /// SIGKILL by pid, then reap.
    package func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitForExit()
    }

    /// The last `lines` lines the server wrote (of its last 256 KiB), for a failure message.
    package func outputTail(lines: Int = 60) -> String {
        output.tail(lines: lines)
    }
}

/// The end of a server's output, and all of it in `ATTACHE_TEST_SERVICE_LOGS/NAME.log` when that is set.
private final class OutputTail: Sendable {
    private static let kept = 256 << 10
    private let bytes = Mutex(Data())
    private let file: Mutex<FileHandle?>

    init(logNamed name: String) {
        var handle: FileHandle?
        if let folder = ProcessInfo.processInfo.environment["ATTACHE_TEST_SERVICE_LOGS"], !folder.isEmpty {
            let path = folder + "/" + name + ".log"
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            if FileManager.default.createFile(atPath: path, contents: nil) { handle = FileHandle(forWritingAtPath: path) }
        }
        file = Mutex(handle)
    }

    func append(_ chunk: Data) {
        bytes.withLock { kept in
            kept.append(chunk)
            if kept.count > Self.kept { kept = Data(kept.suffix(Self.kept)) }
        }
        file.withLock { try? $0?.write(contentsOf: chunk) }
    }

    func tail(lines: Int) -> String {
        let text = bytes.withLock { String(decoding: $0, as: UTF8.self) }
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }
}

/// `Tests/IntegrationTests` in the source tree, found from this file's place in it.
package let integrationTestsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("IntegrationTests").path
