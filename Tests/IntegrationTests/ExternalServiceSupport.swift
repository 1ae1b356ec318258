import Attache
import Foundation
import Testing

/// A server the tests start from `Tools/` or a Python package (an S3 emulator, a Bot API look-alike),
/// with its own environment, stopped by pid with SIGKILL.
final class ServiceProcess {
    let process: Process
    /// The port from the server's ready line (`listening PORT`), or the one it was told to use.
    let port: Int

    /// The folder of the test tools, next to this file in the source tree.
    static let tools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Tools").path

    /// Starts `arguments` and waits until its output (stdout and stderr together) has a line containing
    /// `ready`. With `port` nil, the line must be `listening PORT`.
    init(_ arguments: [String], environment: [String: String] = [:], ready: String = "listening ", port: Int? = nil) async throws {
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
        let line = try await BlockingPool.shared.run { () -> String? in
            var text = ""
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return nil }
                text += String(decoding: chunk, as: UTF8.self)
                if let found = text.split(separator: "\n").first(where: { $0.contains(ready) }) { return String(found) }
            }
        }
        Task.detached { try? await BlockingPool.shared.run { while !handle.availableData.isEmpty {} } }
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
    static func python(_ script: String, _ arguments: [String] = []) async throws -> ServiceProcess {
        try await ServiceProcess(["/usr/bin/env", "python3", tools + "/" + script] + arguments)
    }

    /// SIGKILL by pid, then reap.
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// What a finished command printed, and its status.
struct CommandResult: Sendable {
    var status: Int32
    var standardOutput: String
    var standardError: String
    var all: String { standardOutput + standardError }
}

/// Runs `executable` with `arguments` and extra environment variables (how secrets reach the CLI: never
/// argv), waiting on a pool thread; output goes through temporary files so that neither stream can fill.
func runCommand(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:]
) async throws -> CommandResult {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-run-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let outPath = folder + "/out"
    let errPath = folder + "/err"
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    process.standardOutput = FileHandle(forWritingAtPath: outPath)
    process.standardError = FileHandle(forWritingAtPath: errPath)
    process.standardInput = FileHandle.nullDevice
    try process.run()
    try await BlockingPool.shared.run { process.waitUntilExit() }
    return CommandResult(
        status: process.terminationStatus,
        standardOutput: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
        standardError: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
}

/// A Python interpreter that can import `modules`: the S3 test environment Scripts/bootstrap.sh makes
/// (`$XDG_CACHE_HOME/attache/s3-venv`, else `~/.cache/attache/s3-venv`), the first `python3` on PATH, or
/// the system's.
func python(with modules: [String]) throws -> String {
    let environment = ProcessInfo.processInfo.environment
    let cache = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
        ?? (NSHomeDirectory() + "/.cache")
    var candidates = [cache + "/attache/s3-venv/bin/python3"]
    for folder in (environment["PATH"] ?? "").split(separator: ":") { candidates.append(String(folder) + "/python3") }
    candidates.append("/usr/bin/python3")
    var tried: Set<String> = []
    for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) && tried.insert(candidate).inserted {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: candidate)
        probe.arguments = ["-c", "import " + modules.joined(separator: ", ")]
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        try probe.run()
        probe.waitUntilExit()
        if probe.terminationStatus == 0 { return candidate }
    }
    throw TestFailure("no python3 can import \(modules.joined(separator: ", ")): run Scripts/bootstrap.sh")
}
