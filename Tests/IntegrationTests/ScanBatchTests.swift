import Attache
@testable import AttacheBatch
import AttacheTestSupport
import Foundation
import Testing

/// `attache batch --clamd` over 1,000 files with 10 infected ones, with clamd killed in the middle.
@Suite("batch with a live clamd")
struct ScanBatchTests {
    /// Exactly the 10 infected files are refused, each with its signature named; none of their bytes
    /// reach the server. Killing clamd halfway makes the files wait (nothing leaves unscanned); after
    /// clamd is back the batch finishes, and the journal keeps each verdict.
    @Test func thousandFilesWithClamdKilledHalfway() async throws {
        let scratch = try ScratchFolder(prefix: "attache-scan-batch")
        defer { scratch.remove() }
        let clamd = try await ClamdProcess(hashed: try ClamdProcess.standardHashes(in: scratch))
        defer { clamd.stop() }
        let files = try ScratchFolder(prefix: "attache-scan-batch-files")
        defer { files.remove() }
        let samples = try ScanSample.make(in: files, clean: 990)
        let infected = Dictionary(uniqueKeysWithValues: samples.compactMap { sample in sample.signature.map { (sample.path, $0) } })
        #expect(samples.count == 1000 && infected.count == 10)
        let journal = scratch.path + "/journal.sqlite"
        try await LiveServer.with { server in
            let batch = try ChildProcess(
                executable: try attacheBinary(),
                arguments: [
                    "batch", files.path + "/infected", files.path + "/clean", "--url", server.uploadURL, "--json",
                    "--scheme", "none", "--journal", journal, "--concurrency", "8", "--clamd", clamd.unixAddress,
                ])
            // The server's count, watched by a process of its own: a loaded test process reads the batch's
            // output (or polls) late, and the batch could be done before clamd is killed.
            let pid = try #require(clamd.processIdentifier)
            let killer = try StatsKiller.start(pid: pid, statsURL: "http://127.0.0.1:\(server.port)/stats", key: "uploads", atLeast: 300)
            #expect(try await killer.wait(upTo: 300) == 0)
            clamd.kill()  // reaps it
            // In flight when clamd died: at most the concurrency's worth of files past their scan.
            let atKill = try await server.stats().uploads
            try await Task.sleep(for: .seconds(2))
            let waiting = try await server.stats().uploads
            #expect(waiting <= atKill + 8, "files kept going out with clamd gone: \(atKill) → \(waiting)")
            #expect(waiting < 990)
            try await clamd.start()
            let status = try await batch.wait(upTo: 600)
            #expect(status == 3, "\(batch.standardError)")
            let events = batch.standardOutput.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let failed = events.filter { $0["event"] as? String == "failed" }
            #expect(failed.count == 10)
            for event in failed {
                let path = try #require(event["path"] as? String)
                #expect(event["code"] as? String == "infected", "\(event)")
                #expect(event["stage"] as? String == "scan")
                #expect(event["message"] as? String == "infected: \(infected[path] ?? "?")", "\(path)")
            }
            let succeeded = events.filter { $0["event"] as? String == "succeeded" }
            #expect(succeeded.count == 990)
            let verdicts = succeeded.compactMap { (($0["receipt"] as? [String: Any])?["scan"] as? [String: Any])?["verdict"] as? String }
            #expect(verdicts.count == 990 && verdicts.allSatisfy { $0 == "clean" })
            #expect(succeeded.allSatisfy { infected[$0["path"] as? String ?? ""] == nil })
            // What the server holds: 990 uploads, none with the infected files' bytes.
            #expect(try await server.stats().uploads == 990)
            let forbidden = Set(try infected.keys.map { try Data(contentsOf: URL(fileURLWithPath: $0)) })
            let stored = FileManager.default.enumerator(atPath: server.store)?.compactMap { $0 as? String } ?? []
            for name in stored {
                guard let data = FileManager.default.contents(atPath: server.store + "/" + name) else { continue }
                #expect(!forbidden.contains(data), "\(name) holds an infected file's bytes")
                #expect(data.range(of: Data(ClamdProcess.eicar)) == nil, "\(name) holds the EICAR string")
            }
            // The journal keeps each verdict: a receipt with scan clean, or the infected error.
            let entries = try UploadJournal(path: journal, readOnly: true).entries()
            #expect(entries.filter { $0.receipt?.scan?.verdict == .clean }.count == 990)
            #expect(entries.filter { $0.errorCode == "infected" && $0.errorStage == "scan" }.count == 10)
        }
    }

    /// With `--scan-failure send` and no clamd, the files go out and every receipt says `unscanned`.
    @Test func sendUnscannedWhenAsked() async throws {
        let files = try ScratchFolder(prefix: "attache-scan-batch-files")
        defer { files.remove() }
        let scratch = try ScratchFolder(prefix: "attache-scan-batch")
        defer { scratch.remove() }
        for index in 0..<20 { try files.write("file-\(index).txt", "file \(index)\n") }
        try await LiveServer.with { server in
            let run = try await runCommand(
                try attacheBinary(),
                [
                    "batch", files.path, "--url", server.uploadURL, "--json", "--scheme", "none", "--journal",
                    scratch.path + "/journal.sqlite", "--clamd", "unix:\(scratch.path)/no-clamd.sock", "--scan-failure", "send",
                ])
            #expect(run.status == 0, "\(run.standardError)")
            let unscanned = run.standardOutput.components(separatedBy: "\"verdict\":\"unscanned\"").count - 1
            #expect(unscanned == 20)
            #expect(try await server.stats().uploads == 20)
        }
    }
}
