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
    /// clamd is back the batch finishes, and the journal keeps each verdict. The batch seals as it does
    /// by default (a fresh key per file): what the server stored is opened with the receipts' keys.
    /// A rerun with clamd gone finds everything decided and scans nothing.
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
        let uploadLog = scratch.path + "/uploads.jsonl"
        try await LiveServer.with(uploadLog: uploadLog) { server in
            let arguments = [
                "batch", files.path + "/infected", files.path + "/clean", "--url", server.uploadURL, "--json",
                "--journal", journal, "--concurrency", "8", "--clamd", clamd.unixAddress,
            ]
            let batch = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
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
            let events = Self.events(batch.standardOutput)
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

            // The server's upload log: 990 keyed uploads, each stored once, and no other request (a refused
            // or unscanned one would be logged too).
            let logged = try LiveServer.uploadLogEntries(uploadLog)
            #expect(logged.count == 990, "\(logged.filter { $0["outcome"] as? String != "stored" })")
            let storedIds = Set(logged.compactMap { $0["outcome"] as? String == "stored" ? $0["fileId"] as? String : nil })
            #expect(storedIds.count == 990)
            #expect(try await server.stats().uploads == 990)

            // The journal keeps each verdict, and each receipt's key opens what the server stored under
            // its file id, giving back the clean source; no stored file is any other.
            let entries = try UploadJournal(path: journal, readOnly: true).entries()
            #expect(entries.filter { $0.errorCode == "infected" && $0.errorStage == "scan" }.count == 10)
            let done = entries.filter { $0.receipt?.scan?.verdict == .clean }
            #expect(done.count == 990)
            var opened = Set<String>()
            for entry in done {
                let receipt = try #require(entry.receipt)
                let fileId = try #require(receipt.fileId)
                #expect(receipt.seal.scheme == .streamGCM)
                let key = try #require(receipt.seal.key, "no key in the receipt of \(entry.path)")
                let stored = try Data(contentsOf: URL(fileURLWithPath: server.store + "/files/" + fileId))
                let plain = try Unsealer(scheme: receipt.seal.scheme, key: key, transferEncoding: receipt.seal.transferEncoding)
                    .unseal(DataSource(Array(stored))).readToEnd()
                #expect(infected[entry.path] == nil)
                #expect(plain == Array(try Data(contentsOf: URL(fileURLWithPath: entry.path))), "\(entry.path) does not open to its source")
                opened.insert(fileId)
            }
            #expect(opened == storedIds)

            // A rerun with clamd gone: the stored files are skipped and the infected ones stay failed, none
            // of them is scanned (a scan would wait for clamd), and nothing more is sent.
            clamd.stop()
            let rerun = try await runCommand(try attacheBinary(), arguments)
            #expect(rerun.status == 3, "\(rerun.standardError)")
            let skipped = Self.events(rerun.standardOutput).filter { $0["event"] as? String == "skipped" }
            #expect(skipped.filter { $0["reason"] as? String == "already-done" }.count == 990)
            #expect(skipped.filter { $0["reason"] as? String == "previously-failed" }.count == 10)
            #expect(try await server.stats().uploads == 990)
        }
    }

    static func events(_ output: String) -> [[String: Any]] {
        output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// With `--scan-failure send`, killing clamd in the middle of a batch does not stop it: the files
    /// scanned before go out `clean`, the later ones go out and their receipts say `unscanned` and why,
    /// and every file is stored once.
    @Test func sendUnscannedWhenAsked() async throws {
        let files = try ScratchFolder(prefix: "attache-scan-batch-files")
        defer { files.remove() }
        let scratch = try ScratchFolder(prefix: "attache-scan-batch")
        defer { scratch.remove() }
        let clamd = try await ClamdProcess(hashed: [])
        defer { clamd.stop() }
        for index in 0..<300 { _ = try files.write("file-\(index).txt", "file \(index)\n") }
        try await LiveServer.with { server in
            let batch = try ChildProcess(
                executable: try attacheBinary(),
                arguments: [
                    "batch", files.path, "--url", server.uploadURL, "--json", "--journal", scratch.path + "/journal.sqlite",
                    "--concurrency", "4", "--clamd", clamd.unixAddress, "--scan-failure", "send",
                ])
            let pid = try #require(clamd.processIdentifier)
            let killer = try StatsKiller.start(pid: pid, statsURL: "http://127.0.0.1:\(server.port)/stats", key: "uploads", atLeast: 40)
            #expect(try await killer.wait(upTo: 300) == 0)
            clamd.kill()
            let status = try await batch.wait(upTo: 600)
            #expect(status == 0, "\(batch.standardError)")
            let scans = Self.events(batch.standardOutput).filter { $0["event"] as? String == "succeeded" }.compactMap {
                ($0["receipt"] as? [String: Any])?["scan"] as? [String: Any]
            }
            #expect(scans.count == 300)
            let clean = scans.filter { $0["verdict"] as? String == "clean" }
            let unscanned = scans.filter { $0["verdict"] as? String == "unscanned" }
            #expect(clean.count >= 40 && clean.count + unscanned.count == 300, "\(clean.count) clean, \(unscanned.count) unscanned")
            #expect(!unscanned.isEmpty && unscanned.allSatisfy { ($0["reason"] as? String)?.isEmpty == false }, "\(unscanned.first ?? [:])")
            #expect(try await server.stats().uploads == 300)
        }
    }
}
