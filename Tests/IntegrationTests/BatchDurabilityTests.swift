import Foundation
import Synchronization
import Testing
import Attache
import AttacheBatch
import AttacheServer

/// `attache batch` as a subprocess against the live reference server: killed with SIGKILL at random
/// moments and re-run, interrupted with SIGINT, under injected faults, with bad files in the middle. What
/// is checked is what an operator relies on: the server holds every file exactly once (its stored files
/// and its idempotency keys both equal the number of files) and the journal says `done` for all.
@Suite("Batch durability", .serialized)
struct BatchDurabilityTests {
    // MARK: Tests

    @Test func killedAtRandomMomentsAndReRunEveryFileIsStoredExactlyOnce() async throws {
        let scratch = try Scratch(files: 40)
        defer { scratch.remove() }
        let seed = UInt64.random(in: 1...UInt64.max)
        print("batch kill test seed: \(seed)")
        // Retry-After delays stretch the run over a few seconds, so that the kills land mid-run.
        let configuration = scratch.serverConfiguration(faults: try FaultPlan(parsing: "429@15%:retry-after=1"))
        try await withReferenceServer(configuration: configuration) { port in
            var generator = SeededGenerator(seed: seed)
            var kills = 0
            for _ in 0..<6 {
                let process = try scratch.startBatch(port: port, extra: ["--concurrency", "3", "--attempts", "20"])
                let delay = Double.random(in: 0.05...1.5, using: &generator)
                if try await process.wait(upTo: delay) == nil {
                    kill(process.processIdentifier, SIGKILL)
                    _ = try await process.wait(upTo: 30)
                    kills += 1
                }
            }
            let final = try scratch.startBatch(port: port, extra: ["--concurrency", "3", "--attempts", "20"])
            let status = try await final.wait(upTo: 60)
            #expect(status == 0, "the final run failed: \(final.standardError)")
            #expect(kills >= 1, "no run was killed mid-way; the test proved nothing")

            let stats = try await serverStats(port: port)
            #expect(stats.files == 40)
            #expect(stats.idempotencyKeys == 40)
        }
        try scratch.expectJournalAllDone(40)
    }

    @Test func underInjectedFaultsNothingIsLostOrDuplicated() async throws {
        let scratch = try Scratch(files: 40)
        defer { scratch.remove() }
        let plan = try FaultPlan(parsing: "503@20%,429@10%:retry-after=1,drop@10%")
        try await withReferenceServer(configuration: scratch.serverConfiguration(faults: plan)) { port in
            // 40 % of attempts fail: 20 attempts make a file's failure (0.4^20) practically impossible.
            let process = try scratch.startBatch(port: port, extra: ["--concurrency", "4", "--attempts", "20", "--json"])
            let status = try await process.wait(upTo: 60)
            #expect(status == 0, "\(process.standardError)")
            let events = try process.standardOutput.split(separator: "\n").map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            let succeeded = events.filter { $0["event"] as? String == "succeeded" }.compactMap { $0["path"] as? String }
            #expect(succeeded.count == 40)
            #expect(Set(succeeded).count == 40)
            #expect(events.contains { $0["event"] as? String == "retried" }, "the faults should have caused retries")
            let stats = try await serverStats(port: port)
            #expect(stats.files == 40)
            #expect(stats.idempotencyKeys == 40)
            #expect(stats.requests > 40, "no fault was injected")
        }
        try scratch.expectJournalAllDone(40)
    }

    @Test func aBadFileInTheMiddleIsReportedAndTheRestGoThrough() async throws {
        let scratch = try Scratch(files: 10)
        defer { scratch.remove() }
        try FileManager.default.createSymbolicLink(
            atPath: scratch.files + "/05-vanished.jpg", withDestinationPath: scratch.files + "/no-such-file.jpg")
        #expect(mkfifo(scratch.files + "/06-pipe", 0o600) == 0)
        try await withReferenceServer(configuration: scratch.serverConfiguration()) { port in
            let process = try scratch.startBatch(port: port, extra: ["--json"])
            let status = try await process.wait(upTo: 60)
            #expect(status == 3, "some files failed: exit 3; got \(String(describing: status)) \(process.standardError)")

            let lines = process.standardOutput.split(separator: "\n")
            let events = try lines.map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            let failed = events.filter { $0["event"] as? String == "failed" }
            #expect(failed.count == 1)
            #expect((failed.first?["path"] as? String)?.hasSuffix("05-vanished.jpg") == true)
            #expect(failed.first?["code"] as? String == "file-not-found")
            #expect(events.filter { $0["event"] as? String == "succeeded" }.count == 10)
            #expect(events.contains { $0["event"] as? String == "skipped" && ($0["path"] as? String)?.hasSuffix("06-pipe") == true })
            #expect(events.last?["event"] as? String == "finished")

            let stats = try await serverStats(port: port)
            #expect(stats.files == 10)

            // A second run sends nothing again and still says that a file is missing.
            let again = try scratch.startBatch(port: port)
            #expect(try await again.wait(upTo: 60) == 3)
            #expect(again.standardOutput.contains("10 already done"))
            #expect(try await serverStats(port: port).requests == stats.requests)
        }
        let journal = try UploadJournal(path: scratch.journal)
        #expect(try journal.counts() == [.done: 10, .failed: 1, .skipped: 1])
    }

    @Test func ctrlCLeavesTheJournalConsistentAndTheSameCommandResumes() async throws {
        let scratch = try Scratch(files: 12)
        defer { scratch.remove() }
        // Every upload stalls: the batch is certainly in flight when it is interrupted.
        let stalling = scratch.serverConfiguration(faults: try FaultPlan(parsing: "stall:seconds=3"))
        try await withReferenceServer(configuration: stalling) { port in
            let process = try scratch.startBatch(port: port, extra: ["--json", "--concurrency", "2"])
            try await process.waitForOutput(containing: "\"event\":\"started\"", count: 2, upTo: 30)
            kill(process.processIdentifier, SIGINT)
            let status = try await process.wait(upTo: 30)
            #expect(status == 130)
            #expect(process.standardError.contains("To resume"))
            #expect(process.standardError.contains("--journal"))
        }
        let journal = try UploadJournal(path: scratch.journal)
        let counts = try journal.counts()
        #expect(counts[.inFlight] == nil, "Ctrl-C must not leave files in flight: \(counts)")
        #expect(counts[.pending] == 2)

        try await withReferenceServer(configuration: scratch.serverConfiguration()) { port in
            let process = try scratch.startBatch(port: port)
            #expect(try await process.wait(upTo: 60) == 0, "\(process.standardError)")
            let stats = try await serverStats(port: port)
            #expect(stats.files == 12)
            #expect(stats.idempotencyKeys == 12)
        }
        try scratch.expectJournalAllDone(12)
    }

    // MARK: Support

    /// A folder of files, a journal path and a server store, all under one temporary folder.
    struct Scratch {
        let root: String
        var files: String { root + "/files" }
        var journal: String { root + "/journal.sqlite" }
        var store: String { root + "/store" }

        init(files count: Int) throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("attache-batch-it-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: root + "/files/sub", withIntermediateDirectories: true)
            var generator = SystemRandomNumberGenerator()
            for i in 0..<count {
                let size = Int.random(in: 1_000...48_000, using: &generator)
                let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
                let folder = i % 3 == 0 ? "/files/sub/" : "/files/"
                try Data(bytes).write(to: URL(fileURLWithPath: root + folder + String(format: "%02d-file.bin", i)))
            }
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }

        func serverConfiguration(faults: FaultPlan = .none) -> ReferenceServerConfiguration {
            ReferenceServerConfiguration(storeDirectory: store, port: 0, faults: faults, logLevel: .critical)
        }

        func startBatch(port: Int, extra: [String] = []) throws -> ChildProcess {
            try ChildProcess(
                executable: try attacheBinary(),
                arguments: ["batch", files, "--url", "http://127.0.0.1:\(port)/upload", "--journal", journal] + extra)
        }

        func expectJournalAllDone(_ count: Int) throws {
            let entries = try UploadJournal(path: journal).entries()
            #expect(entries.count == count)
            #expect(entries.allSatisfy { $0.state == .done && $0.receipt?.fileId != nil })
            #expect(Set(entries.compactMap(\.idempotencyKey)).count == count)
        }
    }

    struct Stats: Decodable {
        var files: Int
        var uploads: Int
        var idempotencyKeys: Int
        var requests: Int
        var replays: Int
    }

    func serverStats(port: Int) async throws -> Stats {
        let curl = try ChildProcess(executable: "/usr/bin/curl", arguments: ["-sS", "http://127.0.0.1:\(port)/stats"])
        #expect(try await curl.wait(upTo: 10) == 0)
        return try JSONDecoder().decode(Stats.self, from: Data(curl.standardOutput.utf8))
    }
}

/// The `attache` executable built next to this test bundle.
func attacheBinary() throws -> String {
    var folders = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path]
    if let executable = Bundle.main.executableURL { folders.append(executable.deletingLastPathComponent().path) }
    folders.append(Bundle.main.bundleURL.deletingLastPathComponent().path)
    for folder in folders {
        let candidate = folder + "/attache"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    throw TestFailure("the attache executable was not found next to the tests (looked in \(folders)); run `swift build` first")
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A subprocess whose output is collected, awaited without polling.
final class ChildProcess {
    private let process: Process
    private let output: Collector
    private let error: Collector

    /// Starts `executable`; `environment` adds to (or replaces) variables of this process's environment.
    init(executable: String, arguments: [String], environment: [String: String] = [:]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        output = Collector(out.fileHandleForReading)
        error = Collector(err.fileHandleForReading)
        try process.run()
    }

    var processIdentifier: Int32 { process.processIdentifier }
    var standardOutput: String { output.text }
    var standardError: String { error.text }

    /// Waits for the exit status, or returns nil when the process still runs after `seconds`.
    func wait(upTo seconds: Double) async throws -> Int32? {
        let exited = await output.waitForEnd(upTo: seconds)
        guard exited else { return nil }
        _ = await error.waitForEnd(upTo: seconds)
        // Both pipes are closed, so the process has exited: this returns at once.
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Waits until stdout holds `count` occurrences of `text`.
    func waitForOutput(containing text: String, count: Int, upTo seconds: Double) async throws {
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
            Task {
                try? await BlockingPool.shared.run { [self] in
                    while true {
                        let chunk = handle.availableData
                        self.append(chunk, ended: chunk.isEmpty)
                        if chunk.isEmpty { return }
                    }
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

/// A small deterministic generator (SplitMix64) so that a failing run's kill moments can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    let seed: UInt64
    private var state: UInt64
    init(seed: UInt64) {
        self.seed = seed
        state = seed
    }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
