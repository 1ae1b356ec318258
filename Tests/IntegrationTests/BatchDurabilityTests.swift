import Foundation
import Synchronization
import AttacheTestSupport
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
        let seed = SeededGenerator.forTest("batch kill test").seed
        // Retry-After delays stretch a whole run over about 15 s (40 % of attempts wait 1 s, two at a time),
        // so that the kills land mid-run even when a loaded machine polls the server slowly.
        let configuration = scratch.serverConfiguration(faults: try FaultPlan(parsing: "429@40%:retry-after=1"))
        try await withReferenceServerProcess(configuration: configuration) { port in
            var generator = SeededGenerator(seed: seed)
            var kills = 0
            for _ in 0..<6 {
                let before = try await serverStats(port: port).files
                let process = try scratch.startBatch(port: port, extra: ["--concurrency", "2", "--attempts", "40"])
                // The kill lands mid-run: once this run has stored 1 to 3 files, a random moment later. A
                // process of its own watches and kills, so that a test process starved of threads by the
                // other tests running in parallel cannot let the run finish first.
                let stored = Int.random(in: 1...3, using: &generator)
                let delay = Double.random(in: 0...0.4, using: &generator)
                let killer = try StatsKiller.start(
                    pid: process.processIdentifier, statsURL: "http://127.0.0.1:\(port)/stats", key: "files",
                    atLeast: before + stored, delay: delay)
                let status = try await process.wait(upTo: 120)
                _ = try await killer.wait(upTo: 30)
                if process.endedBySignal {
                    kills += 1
                } else {
                    print("batch kill test: a run ended before its kill with status \(String(describing: status)): \(process.standardError.suffix(400))")
                }
            }
            let final = try scratch.startBatch(port: port, extra: ["--concurrency", "2", "--attempts", "40"])
            let status = try await final.wait(upTo: 120)
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
        try await withReferenceServerProcess(configuration: scratch.serverConfiguration(faults: plan)) { port in
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
        try await withReferenceServerProcess(configuration: scratch.serverConfiguration()) { port in
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

    /// Ctrl-C (SIGINT, status 130) and SIGTERM (what `docker stop` and systemd send, status 143) stop the
    /// run the same way.
    @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func aStopLeavesTheJournalConsistentAndTheSameCommandResumes(signal: Int32, status expected: Int32) async throws {
        let scratch = try Scratch(files: 12)
        defer { scratch.remove() }
        // Every upload stalls: the batch is certainly in flight when it is interrupted.
        let stalling = scratch.serverConfiguration(faults: try FaultPlan(parsing: "stall:seconds=3"))
        try await withReferenceServerProcess(configuration: stalling) { port in
            let process = try scratch.startBatch(port: port, extra: ["--json", "--concurrency", "2"])
            // Once two files are in flight, from the thread that reads the output.
            try process.signal(signal, whenOutputHolds: "\"event\":\"started\"", count: 2)
            let status = try await process.wait(upTo: 60)
            #expect(status == expected, "\(process.standardError)")
            #expect(process.standardError.contains("To resume"))
            #expect(process.standardError.contains("--journal"))
        }
        let journal = try UploadJournal(path: scratch.journal)
        let counts = try journal.counts()
        #expect(counts[.inFlight] == nil, "a stop must not leave files in flight: \(counts)")
        #expect(counts[.pending] == 2)

        try await withReferenceServerProcess(configuration: scratch.serverConfiguration()) { port in
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

    typealias Stats = LiveServer.Stats

    func serverStats(port: Int) async throws -> Stats {
        let curl = try ChildProcess(executable: "/usr/bin/curl", arguments: ["-sS", "http://127.0.0.1:\(port)/stats"])
        #expect(try await curl.wait(upTo: 60) == 0)
        return try JSONDecoder().decode(Stats.self, from: Data(curl.standardOutput.utf8))
    }
}
