import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheBatch
@testable import AttacheCore

/// The batch without a server: refused connections, a listener that never answers, dry runs. The runs
/// against the reference server are in IntegrationTests/BatchDurabilityTests.swift.
@Suite("BatchUploader")
struct BatchUploaderTests {
    @Test func everyFileEndsExactlyOnceAndFailuresAreJournaled() async throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        for i in 0..<7 { try folder.write("in/\(i).txt", String(repeating: "x", count: i + 1)) }
        let journal = folder.path + "/journal.sqlite"
        let url = "http://127.0.0.1:\(try refusedPort())/upload"

        let events = try await collect(makeBatch(url: url, journal: journal, concurrency: 3).run([folder.path + "/in"]))
        let discovered = events.compactMap { if case .discovered(let f) = $0 { f.path } else { nil } }
        #expect(discovered.count == 7)
        let terminal = events.filter(\.isTerminal).compactMap(\.path)
        #expect(terminal.sorted() == discovered.sorted())
        #expect(events.last?.summary != nil)
        let summary = try #require(events.last?.summary)
        #expect(summary.discovered == 7)
        #expect(summary.failed == 7)
        #expect(summary.succeeded == 0)
        #expect(!summary.cancelled)
        #expect(summary.failures.allSatisfy { $0.code == "connection-failed" || $0.code == "retries-exhausted" })

        let entries = try UploadJournal(path: journal).entries()
        #expect(entries.count == 7)
        #expect(entries.allSatisfy { $0.state == .failed && $0.idempotencyKey != nil && $0.sha256?.count == 64 })

        // Run again: the failures are reported as such, not resent...
        let again = try await collect(makeBatch(url: url, journal: journal).run([folder.path + "/in"]))
        let skipped = again.filter { if case .skipped(_, .previouslyFailed) = $0 { true } else { false } }
        #expect(skipped.count == 7)
        #expect(again.last?.summary?.previouslyFailed == 7)

        // ...unless asked, and then with the key stored the first time.
        let keys = Dictionary(uniqueKeysWithValues: entries.map { ($0.path, $0.idempotencyKey!) })
        let retried = try await collect(
            makeBatch(url: url, journal: journal) { $0.retryFailed = true }.run([folder.path + "/in"]))
        let started = retried.compactMap { event -> (String, String)? in
            if case .started(let f, let key, _) = event { (UploadJournal.absolute(f.path), key) } else { nil }
        }
        #expect(started.count == 7)
        for (path, key) in started { #expect(keys[path] == key) }
    }

    @Test func aDryRunSendsAndWritesNothing() async throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        try folder.write("a.txt", "a")
        try folder.write("b.txt", "bb")
        let journal = folder.path + "/never.sqlite"
        let events = try await collect(
            makeBatch(url: "http://127.0.0.1:9/upload", journal: journal) { $0.dryRun = true }.run([folder.path]))
        #expect(events.filter { if case .wouldSend = $0 { true } else { false } }.count == 2)
        #expect(!events.contains { if case .started = $0 { true } else { false } })
        #expect(events.last?.summary?.wouldSend == 2)
        #expect(!FileManager.default.fileExists(atPath: journal))
    }

    @Test func cancellingTheRunLeavesInFlightFilesPendingWithTheirKeys() async throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        for i in 0..<5 { try folder.write("\(i).txt", "content \(i)") }
        let journal = folder.path + "/journal.sqlite"
        let listener = try SilentListener()
        let url = "http://127.0.0.1:\(listener.port)/upload"
        let run = try makeBatch(url: url, journal: journal, concurrency: 2).run([folder.path])

        var started: [String: String] = [:]
        var events: [BatchEvent] = []
        for try await event in run {
            events.append(event)
            if case .started(let file, let key, _) = event {
                started[UploadJournal.absolute(file.path)] = key
                // Both slots are taken by uploads the listener never answers: stop the batch.
                if started.count == 2 { run.cancel() }
            }
        }
        let summary = try #require(events.last?.summary)
        #expect(summary.cancelled)
        #expect(summary.interrupted == 2)
        #expect(started.count == 2)
        // No file was started after the cancellation.
        let cancelledFiles = events.compactMap { if case .failed(let f, let e) = $0, e.code == .cancelled { f.path } else { nil } }
        #expect(cancelledFiles.count == 2)

        let entries = try UploadJournal(path: journal).entries()
        #expect(entries.count == 2)
        for entry in entries {
            #expect(entry.state == .pending)
            #expect(entry.idempotencyKey == started[entry.path])
        }

        // The next run resumes them under the same keys (and stops again).
        let resume = try makeBatch(url: url, journal: journal, concurrency: 2).run([folder.path])
        var resumed: [String: String] = [:]
        for try await event in resume {
            if case .started(let file, let key, let wasResumed) = event, wasResumed {
                resumed[UploadJournal.absolute(file.path)] = key
            }
            if case .started = event, resumed.count == 2 { resume.cancel() }
        }
        #expect(resumed == started)
    }

    @Test func oneFileCanBeCancelledWhileTheOthersGoOn() async throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        for i in 0..<3 { try folder.write("\(i).txt", "content \(i)") }
        let journal = folder.path + "/journal.sqlite"
        let listener = try SilentListener()
        let run = try makeBatch(url: "http://127.0.0.1:\(listener.port)/upload", journal: journal, concurrency: 3)
            .run([folder.path])

        var ended: [String: AttacheError.Code] = [:]
        var firstEnded: String?
        for try await event in run {
            switch event {
            case .started(let file, _, _):
                if file.path.hasSuffix("/1.txt") { run.cancel(file.id) }
            case .failed(let file, let error):
                let name = (file.path as NSString).lastPathComponent
                if ended.isEmpty { firstEnded = name }
                ended[name] = error.code
                // The other two are still waiting for the silent server; the first file to end must be
                // the cancelled one. Then stop the rest.
                if ended.count == 1 { run.cancel() }
            default:
                break
            }
        }
        #expect(firstEnded == "1.txt")
        #expect(ended["1.txt"] == .cancelled)
        let entry = try #require(try UploadJournal(path: journal).entry(for: folder.path + "/1.txt"))
        #expect(entry.state == .pending)
        #expect(entry.idempotencyKey != nil)
    }

    @Test func aConsumerThatStopsReadingStopsTheRunWithABoundedBuffer() async throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let fileCount = 40
        for i in 0..<fileCount { try folder.write(String(format: "%02d.txt", i), "content \(i)") }
        let journal = folder.path + "/journal.sqlite"
        let url = "http://127.0.0.1:\(try refusedPort())/upload"
        let limit = 12
        let run = try makeBatch(url: url, journal: journal, concurrency: 3) {
            $0.eventBufferLimit = limit
            $0.discoveryLookahead = 1
        }.run([folder.path])

        // Nobody reads: the run must come to a stop with the buffer full, not run through every file.
        // The deadline only ends a run that never stops; a loaded machine took over 30 s to fill it.
        let deadline = ContinuousClock.now + .seconds(180)
        while run.buffer.outstanding < limit || run.buffer.waitingProducers == 0 {
            try #require(ContinuousClock.now < deadline, "the run never waited for its consumer")
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(run.buffer.outstanding <= limit)
        let claimed = try UploadJournal(path: journal).entries().count
        #expect(claimed < fileCount)

        // Reading on lets it finish, every file exactly once.
        let events = try await collect(run)
        let summary = try #require(events.last?.summary)
        #expect(summary.discovered == fileCount)
        #expect(summary.failed == fileCount)
        let ended = events.filter(\.isTerminal).compactMap(\.path)
        #expect(Set(ended).count == fileCount)
        #expect(ended.count == fileCount)
        #expect(run.buffer.outstanding == 0)
    }

    @Test func aSecondRunOnTheSameJournalIsRefusedWhileTheFirstIsGoing() async throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        try folder.write("in/a.txt", "a")
        let journal = folder.path + "/journal.sqlite"
        let listener = try SilentListener()
        let url = "http://127.0.0.1:\(listener.port)/upload"
        let first = try makeBatch(url: url, journal: journal).run([folder.path + "/in"])
        var iterator = first.makeAsyncIterator()
        // Once a file has started, the first run holds the journal.
        while let event = try await iterator.next() {
            if case .started = event { break }
        }

        let second = try makeBatch(url: url, journal: journal).run([folder.path + "/in"])
        let error = await #expect(throws: AttacheError.self) { _ = try await collect(second) }
        #expect(error?.code == .journalBusy)
        #expect(error?.message.contains("pid \(getpid())") == true)

        first.cancel()
        while try await iterator.next() != nil {}
        // The lock went with the first run: a third one may use the journal.
        let third = try await collect(
            makeBatch(url: "http://127.0.0.1:\(try refusedPort())/upload", journal: journal).run([folder.path + "/in"]))
        #expect(third.last?.summary?.failed == 1)
    }

    @Test func anUnopenableJournalStopsTheRunWithAJournalError() async throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        try folder.write("a.txt", "a")
        let run = try makeBatch(url: "http://127.0.0.1:9/upload", journal: folder.path + "/missing/dir/j.sqlite").run([folder.path])
        let error = await #expect(throws: AttacheError.self) { _ = try await collect(run) }
        #expect(error?.code == .journal)
    }
}
