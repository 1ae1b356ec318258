import AttacheCore
import Foundation
import Synchronization

/// A subprocess whose output is collected, awaited without polling.
package final class ChildProcess {
    private let process: Process
    private let output: Collector
    private let error: Collector

    /// Starts `executable`; `environment` adds to (or replaces) variables of this process's environment.
    package init(executable: String, arguments: [String], environment: [String: String] = [:]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = try ChildPipe()
        let err = try ChildPipe()
        output = Collector(out.fileHandleForReading)
        error = Collector(err.fileHandleForReading)
        try process.run(input: nil, output: out, error: err)
    }

    package var processIdentifier: Int32 { process.processIdentifier }
    package var standardOutput: String { output.text }
    package var standardError: String { error.text }

    /// Waits for the exit status, or returns nil when the process still runs after `seconds`.
    package func wait(upTo seconds: Double) async throws -> Int32? {
        let exited = await output.waitForEnd(upTo: seconds)
        guard exited else { return nil }
        _ = await error.waitForEnd(upTo: seconds)
        // Both pipes are closed, so the process has ended or is about to. Foundation learns of the end
        // from SIGCHLD, and has been seen to miss it: a child left a zombie that `isRunning` called
        // running for good, and the wait hung a test run. So Foundation gets a few seconds, and then the
        // kernel is asked (``Foundation/Process/zombieEnd(_:)``).
        for _ in 0..<200 where process.isRunning {
            try await Task.sleep(for: .milliseconds(25))
        }
        guard process.isRunning else { return process.terminationStatus }
        guard let ended = Process.zombieEnd(process.processIdentifier) else {
            throw TestFailure("the child \(process.processIdentifier) closed its output but has not ended")
        }
        reaped.withLock { $0 = ended }
        return ended.status
    }

    /// How the process ended when Foundation missed it and the kernel was asked (``wait(upTo:)``).
    private let reaped = Mutex<(status: Int32, bySignal: Bool)?>(nil)

    /// Whether the process ended by a signal (a kill), not by exiting; meaningful once ``wait(upTo:)``
    /// returned a status.
    package var endedBySignal: Bool {
        if let reaped = reaped.withLock({ $0 }) { return reaped.bySignal }
        return !process.isRunning && process.terminationReason == .uncaughtSignal
    }

    /// Waits until stdout holds `count` occurrences of `text`.
    package func waitForOutput(containing text: String, count: Int, upTo seconds: Double) async throws {
        let found = await output.waitFor(upTo: seconds) { $0.components(separatedBy: text).count - 1 >= count }
        guard found else { throw TestFailure("timed out waiting for \(count)× \(text) in: \(standardOutput)") }
    }

    /// Reads a pipe on a pool thread until it closes, and wakes waiters when text arrives.
    private final class Collector: Sendable {
        private typealias Waiter = (predicate: @Sendable (String, Bool) -> Bool, continuation: CheckedContinuation<Bool, Never>)
        private struct State {
            var data = Data()
            var ended = false
            var nextID = 0
            var waiters: [Int: Waiter] = [:]
        }

        private let state = Mutex(State())

        init(_ handle: FileHandle) {
            // A thread of its own for as long as the pipe is open, never one of the library's pool:
            // children that live as long as a test would otherwise hold the pool's threads, and the
            // library's own blocking work in the same process would wait behind them.
            Thread.detachNewThread { [self] in
                while true {
                    let chunk = handle.availableData
                    self.append(chunk, ended: chunk.isEmpty)
                    if chunk.isEmpty { return }
                }
            }
        }

        var text: String { state.withLock { String(decoding: $0.data, as: UTF8.self) } }

        private func append(_ chunk: Data, ended: Bool) {
            let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
                state.data.append(chunk)
                state.ended = state.ended || ended
                let text = String(decoding: state.data, as: UTF8.self)
                let done = state.waiters.filter { $0.value.predicate(text, state.ended) }
                for id in done.keys { state.waiters[id] = nil }
                return done.values.map(\.continuation)
            }
            for continuation in ready { continuation.resume(returning: true) }
        }

        func waitForEnd(upTo seconds: Double) async -> Bool {
            await waitFor(upTo: seconds) { _ in false }
        }

        /// Waits until `predicate` holds for the text so far or the pipe ends (true), or the time is up
        /// (false).
        func waitFor(upTo seconds: Double, _ predicate: @escaping @Sendable (String) -> Bool) async -> Bool {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let full: @Sendable (String, Bool) -> Bool = { text, ended in ended || predicate(text) }
                let id = state.withLock { state -> Int? in
                    if full(String(decoding: state.data, as: UTF8.self), state.ended) { return nil }
                    state.nextID += 1
                    state.waiters[state.nextID] = (full, continuation)
                    return state.nextID
                }
                guard let id else {
                    continuation.resume(returning: true)
                    return
                }
                // The deadline: a timer, not a poll; it resumes the waiter with false if still waiting.
                Task { [self] in
                    try? await Task.sleep(for: .seconds(seconds))
                    let expired = self.state.withLock { $0.waiters.removeValue(forKey: id) }
                    expired?.continuation.resume(returning: false)
                }
            }
        }
    }
}

