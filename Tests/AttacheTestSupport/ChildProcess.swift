import AttacheCore
import CProcess
import Foundation
import Glibc
import Synchronization

/// The tests' one way to run another program: `attache` itself, the reference server, an emulator, clamd,
/// a tool. Started with the product's own spawner (CProcess: a process group of its own, every descriptor
/// but its three standard streams closed, the signal mask and dispositions reset), never with Foundation's
/// `Process`.
///
/// Its end is read by a thread of its own blocked in `waitpid(2)` on its pid, which wakes every waiter:
/// no polling, and nothing to miss. (Foundation's `Process` learns of an end from SIGCHLD and was seen to
/// miss it, leaving a zombie that it called running for good; the tests then read `/proc` to find such
/// ends.) Its output is read by threads of their own as it comes, so that no child blocks on a full pipe.
/// Every wait has a bound.
package final class ChildProcess: Sendable {
    /// Where the child's standard streams go.
    package enum Streams: Sendable {
        /// Standard output and standard error collected apart, whole; standard input is `input`
        /// (written, then closed) or the null device.
        case separate(input: Data? = nil)
        /// Both into one collection that keeps the last `keep` bytes (all of it also in the file `log`
        /// when given); standard input the null device. For servers, which log for as long as they run.
        case merged(keep: Int, log: String? = nil)
        /// Standard input and output are the caller's (``conversation``); standard error goes to the
        /// file `errorLog`. For a child spoken to a line at a time.
        case interactive(errorLog: String)
    }

    /// The child's pid.
    package let processIdentifier: Int32
    private let output: Collector?
    private let error: Collector?
    private let ending: Ending
    /// With ``Streams/interactive(errorLog:)``: the end this process writes the child's input to, and
    /// the end it reads the child's output from.
    package let conversation: (input: FileHandle, output: FileHandle)?

    /// Starts `executable` (a path, or a name looked up in `PATH`) with its standard output and error
    /// collected apart; `environment` adds to (or replaces) variables of this process's environment.
    package convenience init(executable: String, arguments: [String], environment: [String: String] = [:]) throws {
        try self.init(executable: executable, arguments: arguments, environment: environment, streams: .separate())
    }

    /// Starts `executable` (a path, or a name looked up in `PATH`) with `streams`.
    package init(
        executable: String, arguments: [String], environment: [String: String] = [:], streams: Streams
    ) throws {
        guard let path = ProcessRunner.find(executable) else { throw TestFailure("\(executable): not found on PATH") }
        let devNull = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard devNull >= 0 else { throw TestFailure("cannot open /dev/null") }
        defer { close(devNull) }
        // The child's ends, closed here once it runs; this process's ends are close-on-exec, so that no
        // other child started at the same moment inherits them.
        var childEnds: [Int32] = []
        defer { for descriptor in childEnds { close(descriptor) } }
        func pipe() throws -> (read: Int32, write: Int32) {
            var descriptors: [Int32] = [-1, -1]
            guard attache_pipe_cloexec(&descriptors) == 0 else { throw TestFailure("pipe2: \(String(cString: strerror(errno)))") }
            return (descriptors[0], descriptors[1])
        }
        var standard: (input: Int32, output: Int32, error: Int32) = (devNull, devNull, devNull)
        var readEnds: (output: Int32?, error: Int32?) = (nil, nil)
        var inputEnd: Int32?
        var errorLogDescriptor: Int32?
        defer { if let errorLogDescriptor { close(errorLogDescriptor) } }
        switch streams {
        case .separate(let input):
            let out = try pipe()
            let err = try pipe()
            childEnds += [out.write, err.write]
            standard.output = out.write
            standard.error = err.write
            readEnds = (out.read, err.read)
            if input != nil {
                let feed = try pipe()
                childEnds.append(feed.read)
                standard.input = feed.read
                inputEnd = feed.write
            }
        case .merged:
            let both = try pipe()
            childEnds.append(both.write)
            standard.output = both.write
            standard.error = both.write
            readEnds.output = both.read
        case .interactive(let errorLog):
            let feed = try pipe()
            let out = try pipe()
            childEnds += [feed.read, out.write]
            standard.input = feed.read
            standard.output = out.write
            let log = open(errorLog, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard log >= 0 else { throw TestFailure("cannot create \(errorLog)") }
            errorLogDescriptor = log
            standard.error = log
            inputEnd = feed.write
            readEnds.output = out.read
        }

        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let started = withCStrings([path] + arguments) { argv in
            withCStrings(variables) { envp in
                var limits = attache_process_limits(cpu_seconds: 0, address_space_bytes: 0, file_size_bytes: 0)
                return attache_spawn_limited(path, argv, envp, &limits, standard.input, standard.output, standard.error, &pid)
            }
        }
        guard started == 0 else {
            for descriptor in [readEnds.output, readEnds.error, inputEnd].compactMap({ $0 }) { close(descriptor) }
            throw TestFailure("cannot start \(path): \(String(cString: strerror(started)))")
        }
        processIdentifier = pid
        ending = Ending(pid: pid)

        switch streams {
        case .separate(let input):
            output = Collector(readEnds.output!, keep: .max, log: nil)
            error = Collector(readEnds.error!, keep: .max, log: nil)
            conversation = nil
            if let input, let inputEnd {
                // Written by a thread of its own, so that a child that answers before it has read all of
                // its input never blocks the writer, nor the writer the child.
                let handle = FileHandle(fileDescriptor: inputEnd, closeOnDealloc: true)
                Thread.detachNewThread {
                    try? handle.write(contentsOf: input)
                    try? handle.close()
                }
            }
        case .merged(let keep, let log):
            output = Collector(readEnds.output!, keep: keep, log: log)
            error = nil
            conversation = nil
        case .interactive:
            output = nil
            error = nil
            conversation = (
                FileHandle(fileDescriptor: inputEnd!, closeOnDealloc: true),
                FileHandle(fileDescriptor: readEnds.output!, closeOnDealloc: true)
            )
        }
    }

    /// What it wrote to its standard output so far (with ``Streams/merged(keep:log:)``, both streams,
    /// the last bytes kept).
    package var standardOutput: String { output?.text ?? "" }
    /// What it wrote to its standard error so far (empty unless ``Streams/separate(input:)``).
    package var standardError: String { error?.text ?? "" }

    /// The last `lines` lines of its output, for a failure message.
    package func outputTail(lines: Int = 60) -> String {
        standardOutput.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// Whether it has ended (and been reaped).
    package var hasEnded: Bool { ending.result != nil }

    /// Whether it ended by a signal (a kill), not by exiting; false while it runs.
    package var endedBySignal: Bool { ending.result?.bySignal ?? false }

    /// Waits for its end and returns its exit status (the signal's number when a signal ended it), or nil
    /// when it still runs after `seconds`. Once it has ended, its output and error are read to their ends
    /// too, both at once, for at most 10 s more: a child of its own may hold the pipes.
    package func wait(upTo seconds: Double) async throws -> Int32? {
        guard let result = await ending.wait(upTo: seconds) else { return nil }
        async let outputEnded = output?.waitForEnd(upTo: 10)
        async let errorEnded = error?.waitForEnd(upTo: 10)
        _ = await (outputEnded, errorEnded)
        return result.status
    }

    /// ``wait(upTo:)`` that blocks the calling thread, with no bound: for a child that was just killed,
    /// or a short tool run from synchronous code (on a thread of its own, never the cooperative pool's).
    @discardableResult
    package func waitForExit() -> Int32 {
        let result = ending.waitBlocking()
        output?.waitForEndBlocking()
        error?.waitForEndBlocking()
        return result.status
    }

    /// Sends `signal` unless it has already been reaped (so that a pid used again by another process
    /// is not signalled).
    package func kill(_ signal: Int32 = SIGKILL) {
        ending.signal(signal)
    }

    /// Sends `signal` the moment its standard output holds `count` occurrences of `text` (at once if it
    /// already does), from the thread that reads the output: a test whose tasks are starved in a loaded
    /// parallel run still signals at that moment, not seconds later when the run may be over. Nothing is
    /// sent once the child has ended. ``waitForOutput(containing:count:upTo:)`` with the same text and
    /// count tells the test that the moment has passed.
    package func signal(_ signal: Int32, whenOutputHolds text: String, count: Int) throws {
        guard let output else { throw TestFailure("the output of \(processIdentifier) is not collected") }
        let ending = ending
        output.once(holding: { $0.components(separatedBy: text).count - 1 >= count }) { ending.signal(signal) }
    }

    /// Waits until its standard output holds `count` occurrences of `text`, or has ended (the caller reads
    /// which); throws when neither happened within `seconds`.
    package func waitForOutput(containing text: String, count: Int, upTo seconds: Double) async throws {
        guard let output else { throw TestFailure("the output of \(processIdentifier) is not collected") }
        let found = await output.waitFor(upTo: seconds) { $0.components(separatedBy: text).count - 1 >= count }
        guard found else { throw TestFailure("timed out waiting for \(count)× \(text) in: \(standardOutput.suffix(4000))") }
    }

    /// Waits until a line of its standard output contains `text` and returns that line; nil when the
    /// output ended without one or `seconds` passed.
    package func waitForLine(containing text: String, upTo seconds: Double) async -> String? {
        guard let output else { return nil }
        @Sendable func line(_ all: String) -> String? {
            all.split(separator: "\n").first { $0.contains(text) }.map(String.init)
        }
        _ = await output.waitFor(upTo: seconds) { line($0) != nil }
        return line(output.text)
    }

    /// Runs `executable` to its end and returns what it printed and its status, waiting on a thread of its
    /// own for at most `seconds`; a child still running then is killed, and the wait throws.
    package static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], input: Data? = nil,
        upTo seconds: Double = 3600
    ) async throws -> CommandResult {
        let child = try ChildProcess(
            executable: executable, arguments: arguments, environment: environment, streams: .separate(input: input))
        guard let status = try await child.wait(upTo: seconds) else {
            child.kill()
            child.waitForExit()
            throw TestFailure("\(executable) still ran after \(Int(seconds)) s: \(child.standardError.suffix(2000))")
        }
        return CommandResult(status: status, standardOutput: child.standardOutput, standardError: child.standardError)
    }

    /// ``run(_:_:environment:input:upTo:)`` for synchronous code: blocks the calling thread until the
    /// tool has ended (call it from a thread of its own, not the cooperative pool's).
    package static func runBlocking(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], input: Data? = nil
    ) throws -> (status: Int32, output: Data, error: String) {
        let child = try ChildProcess(
            executable: executable, arguments: arguments, environment: environment, streams: .separate(input: input))
        let status = child.waitForExit()
        return (status, child.output?.data ?? Data(), child.standardError)
    }

    /// How a child ended, read by a thread blocked in `waitpid` on it.
    private final class Ending: Sendable {
        struct Result: Sendable {
            var status: Int32
            var bySignal: Bool
        }

        private struct State {
            var result: Result?
            var nextID = 0
            var waiters: [Int: CheckedContinuation<Result?, Never>] = [:]
            var blocked: [DispatchSemaphore] = []
        }

        private let pid: pid_t
        private let state = Mutex(State())

        init(pid: pid_t) {
            self.pid = pid
            Thread.detachNewThread { [self] in
                var status: Int32 = 0
                var reaped: pid_t
                repeat { reaped = waitpid(pid, &status, 0) } while reaped < 0 && errno == EINTR
                // The wait(2) encoding: the low 7 bits are the signal that ended it, else bits 8-15 the status.
                let signal = status & 0x7F
                let result =
                    reaped < 0
                    ? Result(status: -1, bySignal: false) : signal != 0 ? Result(status: signal, bySignal: true)
                    : Result(status: (status >> 8) & 0xFF, bySignal: false)
                let (waiters, blocked) = self.state.withLock { state in
                    state.result = result
                    defer { (state.waiters, state.blocked) = ([:], []) }
                    return (Array(state.waiters.values), state.blocked)
                }
                for waiter in waiters { waiter.resume(returning: result) }
                for semaphore in blocked { semaphore.signal() }
            }
        }

        var result: Result? { state.withLock { $0.result } }

        func signal(_ number: Int32) {
            state.withLock { state in
                if state.result == nil { Glibc.kill(pid, number) }
            }
        }

        func wait(upTo seconds: Double) async -> Result? {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result?, Never>) in
                let id = state.withLock { state -> Int? in
                    if state.result != nil { return nil }
                    state.nextID += 1
                    state.waiters[state.nextID] = continuation
                    return state.nextID
                }
                guard let id else {
                    continuation.resume(returning: result)
                    return
                }
                // The bound: a timer, not a poll; it resumes the waiter with nil if still waiting.
                Task { [self] in
                    try? await Task.sleep(for: .seconds(seconds))
                    state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
                }
            }
        }

        func waitBlocking() -> Result {
            let semaphore = DispatchSemaphore(value: 0)
            if let known = state.withLock({ state -> Result? in
                if state.result == nil { state.blocked.append(semaphore) }
                return state.result
            }) {
                return known
            }
            semaphore.wait()
            return result!
        }
    }

    /// Reads a pipe on a thread of its own until it closes, and wakes waiters when text arrives.
    private final class Collector: Sendable {
        private typealias Waiter = (predicate: @Sendable (String, Bool) -> Bool, continuation: CheckedContinuation<Bool, Never>)
        private struct State {
            var data = Data()
            var ended = false
            var nextID = 0
            var waiters: [Int: Waiter] = [:]
            var blocked: [DispatchSemaphore] = []
            var triggers: [(predicate: @Sendable (String) -> Bool, action: @Sendable () -> Void)] = []
        }

        private let state = Mutex(State())
        private let keep: Int

        init(_ descriptor: Int32, keep: Int, log: String?) {
            self.keep = keep
            let logFile = log.flatMap { path -> FileHandle? in
                try? FileManager.default.createDirectory(
                    atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                return FileManager.default.createFile(atPath: path, contents: nil) ? FileHandle(forWritingAtPath: path) : nil
            }
            // A thread of its own for as long as the pipe is open, never one of the library's pool:
            // children that live as long as a test would otherwise hold the pool's threads, and the
            // library's own blocking work in the same process would wait behind them.
            Thread.detachNewThread { [self] in
                var buffer = [UInt8](repeating: 0, count: 64 << 10)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    if count < 0, errno == EINTR { continue }
                    let chunk = count > 0 ? Data(buffer[0..<count]) : Data()
                    if !chunk.isEmpty { try? logFile?.write(contentsOf: chunk) }
                    self.append(chunk, ended: count <= 0)
                    if count <= 0 { break }
                }
                close(descriptor)
                try? logFile?.close()
            }
        }

        var data: Data { state.withLock { $0.data } }
        var text: String { String(decoding: data, as: UTF8.self) }

        private func append(_ chunk: Data, ended: Bool) {
            let (ready, blocked, actions) = state.withLock {
                state -> ([CheckedContinuation<Bool, Never>], [DispatchSemaphore], [@Sendable () -> Void]) in
                state.data.append(chunk)
                if state.data.count > keep { state.data = Data(state.data.suffix(keep)) }
                state.ended = state.ended || ended
                let text = String(decoding: state.data, as: UTF8.self)
                let done = state.waiters.filter { $0.value.predicate(text, state.ended) }
                for id in done.keys { state.waiters[id] = nil }
                var actions: [@Sendable () -> Void] = []
                state.triggers.removeAll { trigger in
                    guard trigger.predicate(text) else { return false }
                    actions.append(trigger.action)
                    return true
                }
                let blocked = state.ended ? state.blocked : []
                if state.ended { state.blocked = [] }
                return (done.values.map(\.continuation), blocked, actions)
            }
            // On this thread, before any waiter's task runs.
            for action in actions { action() }
            for continuation in ready { continuation.resume(returning: true) }
            for semaphore in blocked { semaphore.signal() }
        }

        /// Runs `action` on this reading thread the first time `predicate` holds for the text so far (at once
        /// when it holds now); never once the pipe has ended without it.
        func once(holding predicate: @escaping @Sendable (String) -> Bool, _ action: @escaping @Sendable () -> Void) {
            let now = state.withLock { state -> Bool in
                if predicate(String(decoding: state.data, as: UTF8.self)) { return true }
                if !state.ended { state.triggers.append((predicate, action)) }
                return false
            }
            if now { action() }
        }

        func waitForEnd(upTo seconds: Double) async -> Bool {
            await waitFor(upTo: seconds) { _ in false }
        }

        func waitForEndBlocking() {
            let semaphore = DispatchSemaphore(value: 0)
            let ended = state.withLock { state -> Bool in
                if !state.ended { state.blocked.append(semaphore) }
                return state.ended
            }
            if !ended { semaphore.wait() }
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

/// Calls `body` with a NULL-terminated C array of `strings`, valid only inside it.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for pointer in pointers { free(pointer) } }
    return body(pointers)
}
