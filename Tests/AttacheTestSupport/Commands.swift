import AttacheCLI
import AttacheCore
import Foundation
import Synchronization
import Testing

/// Runs a command and returns its standard output; fails the test when it exits non-zero.
@discardableResult
package func run(_ executable: String, _ arguments: [String], input: Data? = nil) throws -> Data {
    let (data, status, message) = try runToExit(executable, arguments, input: input)
    try #require(status == 0, "\(executable) failed: \(message)")
    return data
}

/// `run`'s work: starts the command (a path, or a name looked up in `PATH`), feeds `input`, reads both
/// pipes and waits for the exit; returns the standard output, the exit status and the standard error.
private func runToExit(_ executable: String, _ arguments: [String], input: Data?) throws -> (Data, Int32, String) {
    let result = try ChildProcess.runBlocking(executable, arguments, input: input ?? Data())
    return (result.output, result.status, result.error)
}

/// Runs a command on a thread of its own and returns its standard output; fails the test when it exits
/// non-zero. The form for async code: the synchronous one blocks its caller for the whole run, and a
/// test body that blocks a thread of the cooperative pool (two on a two-core machine) starves the
/// transfers of every test running beside it.
@discardableResult
package func run(_ executable: String, _ arguments: [String], input: Data? = nil) async throws -> Data {
    // The check runs here, in the test's task, so that a failure is recorded against the test.
    let (data, status, message) = try await onOwnThread { try runToExit(executable, arguments, input: input) }
    try #require(status == 0, "\(executable) failed: \(message)")
    return data
}

/// What a finished command printed, and its status.
package struct CommandResult: Sendable {
    package var status: Int32
    package var standardOutput: String
    package var standardError: String
    package var all: String { standardOutput + standardError }

    package init(status: Int32, standardOutput: String, standardError: String) {
        self.status = status
        self.standardOutput = standardOutput
        self.standardError = standardError
    }
}

/// Runs `attache` with `arguments` in this process (``RootCommand/run(arguments:environment:)``), with
/// extra environment variables (how secrets reach the CLI: never argv) over the process's, and returns its
/// status and what it printed. Many such runs go at once, each with its own output and environment.
package func attache(_ arguments: [String], environment: [String: String] = [:]) async -> CommandResult {
    let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let result = await RootCommand.run(arguments: arguments, environment: merged)
    return CommandResult(
        status: result.status, standardOutput: String(decoding: result.standardOutput, as: UTF8.self),
        standardError: String(decoding: result.standardError, as: UTF8.self))
}

/// Runs `executable` with `arguments` and extra environment variables (how secrets reach the CLI: never
/// argv), and waits for its end (``ChildProcess/run(_:_:environment:input:upTo:)``).
package func runCommand(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:]
) async throws -> CommandResult {
    try await ChildProcess.run(executable, arguments, environment: environment)
}

/// A Python interpreter that can import `modules`: the S3 test environment Scripts/bootstrap.sh makes
/// (`$XDG_CACHE_HOME/attache/s3-venv`, else `~/.cache/attache/s3-venv`), the first `python3` on PATH, or
/// the system's.
package func python(with modules: [String]) throws -> String {
    // Each probe starts an interpreter that imports the modules (boto3 and moto take a CPU-second
    // together), and the S3 suites ask for the same ones at every emulator start: asked once per run.
    let key = modules.joined(separator: ",")
    if let known = pythonsFound.withLock({ $0[key] }) { return known }
    let found = try findPython(with: modules)
    pythonsFound.withLock { $0[key] = found }
    return found
}

private let pythonsFound = Mutex<[String: String]>([:])

private func findPython(with modules: [String]) throws -> String {
    let environment = ProcessInfo.processInfo.environment
    let cache = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
        ?? (NSHomeDirectory() + "/.cache")
    var candidates = [cache + "/attache/s3-venv/bin/python3"]
    for folder in (environment["PATH"] ?? "").split(separator: ":") { candidates.append(String(folder) + "/python3") }
    candidates.append("/usr/bin/python3")
    var tried: Set<String> = []
    for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) && tried.insert(candidate).inserted {
        if try ChildProcess.runBlocking(candidate, ["-c", "import " + modules.joined(separator: ", ")]).status == 0 {
            return candidate
        }
    }
    throw TestFailure("no python3 can import \(modules.joined(separator: ", ")): run Scripts/bootstrap.sh")
}

/// Runs blocking `body` (a wait for a child, a read of its pipe) on a thread of its own and returns its
/// result: neither on the cooperative pool nor on the library's blocking pool, whose threads the code
/// under test needs.
package func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// Opens `sealed` (stream-gcm) with `key` (base64, as a receipt gives it) through `attache decrypt`, in
/// `folder`: the way a user gets an attachment back.
package func decryptWithAttache(_ sealed: [UInt8], key: String, in folder: ScratchFolder) async throws -> [UInt8] {
    let stored = try folder.write("stored-\(UUID().uuidString)", sealed)
    let keyFile = try folder.write("key-\(UUID().uuidString)", key)
    let out = folder.path + "/opened-\(UUID().uuidString)"
    let result = try await runCommand(try attacheBinary(), ["decrypt", stored, "-o", out, "--key-file", keyFile])
    try #require(result.status == 0, "\(result.all)")
    return Array(try Data(contentsOf: URL(fileURLWithPath: out)))
}
