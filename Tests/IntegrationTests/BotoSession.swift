import AttacheTestSupport
import Foundation
import Synchronization

/// `s3_objects.py ENDPOINT serve` for as long as an emulator runs: boto3 is imported once, and each
/// command is one JSON line in and one out. (Started once per command, the interpreter spent about half
/// a CPU-second importing boto3 each time, and the S3 suites run a few hundred commands.)
final class BotoSession: Sendable {
    private struct Pipes: @unchecked Sendable {
        let input: FileHandle
        let output: FileHandle
        var pending = Data()
    }

    private let child: ChildProcess
    private let pipes: Mutex<Pipes>
    /// The interpreter's own standard error (a failed import, a crash; each command's is in its answer),
    /// for the failure message when it ends. Removed with the session.
    private let errorLog: String

    init(python: String, tool: String, endpoint: String, environment: [String: String]) throws {
        errorLog = FileManager.default.temporaryDirectory.appendingPathComponent("attache-boto3-\(UUID().uuidString).err").path
        child = try ChildProcess(
            executable: python, arguments: [tool, endpoint, "serve"], environment: environment,
            streams: .interactive(errorLog: errorLog))
        let conversation = child.conversation!
        pipes = Mutex(Pipes(input: conversation.input, output: conversation.output))
    }

    /// Runs one command (`s3_objects.py`'s arguments after the endpoint), on a thread of its own.
    func run(_ arguments: [String]) async throws -> CommandResult {
        let line = try JSONSerialization.data(withJSONObject: arguments) + Data("\n".utf8)
        return try await onOwnThread { [self] in
            try pipes.withLock { pipes -> CommandResult in
                try pipes.input.write(contentsOf: line)
                while !pipes.pending.contains(UInt8(ascii: "\n")) {
                    let chunk = pipes.output.availableData
                    guard !chunk.isEmpty else { throw TestFailure("s3_objects.py serve ended: \(errorTail())") }
                    pipes.pending.append(chunk)
                }
                let end = pipes.pending.firstIndex(of: UInt8(ascii: "\n"))!
                let answer = pipes.pending[pipes.pending.startIndex..<end]
                pipes.pending = Data(pipes.pending[(end + 1)...])
                guard let object = try JSONSerialization.jsonObject(with: Data(answer)) as? [String: Any],
                    let status = object["status"] as? Int
                else { throw TestFailure("s3_objects.py serve answered \(String(decoding: answer, as: UTF8.self))") }
                return CommandResult(
                    status: Int32(status), standardOutput: object["out"] as? String ?? "",
                    standardError: object["err"] as? String ?? "")
            }
        }
    }

    /// The last 2 KiB of the interpreter's standard error.
    private func errorTail() -> String {
        let text = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
        return text.isEmpty ? "(nothing on its standard error)" : String(text.suffix(2048))
    }

    /// SIGKILL by pid, without waiting: for the process's exit, where the interpreter is not reaped.
    func killAtExit() {
        child.kill()
        try? FileManager.default.removeItem(atPath: errorLog)
    }

    /// SIGKILL by pid, then reap.
    func stop() {
        child.kill()
        child.waitForExit()
        try? FileManager.default.removeItem(atPath: errorLog)
    }
}
