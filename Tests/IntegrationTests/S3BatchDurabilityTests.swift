import Foundation
import AttacheTestSupport
import Testing
import Attache
import AttacheBatch
import AttacheCore

/// `attache batch` to a bucket (moto's server and MiniStack), killed with SIGKILL mid-run and re-run: each file ends up
/// as exactly one object under the key its journalled idempotency key makes, and each object, read back
/// with boto3, opens with the key in its journalled receipt.
@Suite("S3 batch durability", .serialized)
struct S3BatchDurabilityTests {
    static let fileCount = 500
    /// Samples mixed in among the random files: documents, a voice note, a sticker and an image (the last
    /// two are transformed and get thumbnails of their own).
    static let samples = ["notes.txt", "document.pdf", "report.docx", "voice.ogg", "sticker.webp", "alpha.png"]
    static let transformed: Set<String> = ["webp", "png"]

    /// 500 files in two folders: every 25th a sample, the others 1–6 KB of random bytes under several
    /// extensions. Their paths and bytes.
    func makeFiles(in root: String) throws -> [String: [UInt8]] {
        let samples = ExitStatusTests.packageRoot.appendingPathComponent("Samples")
        var files: [String: [UInt8]] = [:]
        for folder in ["/files", "/files/sub"] {
            try FileManager.default.createDirectory(atPath: root + folder, withIntermediateDirectories: true)
        }
        for i in 0..<Self.fileCount {
            let folder = root + (i % 4 == 0 ? "/files/sub/" : "/files/")
            let path: String
            let bytes: [UInt8]
            if i % 25 == 0 {
                let sample = Self.samples[(i / 25) % Self.samples.count]
                path = folder + String(format: "%03d-", i) + sample
                bytes = Array(try Data(contentsOf: samples.appendingPathComponent(sample)))
            } else {
                path = folder + String(format: "%03d-file.", i) + ["bin", "txt", "csv", "dat"][i % 4]
                bytes = randomBytes(Int.random(in: 1_000...6_000))
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            files[path] = bytes
        }
        return files
    }

    @Test("500 mixed files, the batch killed twice mid-run: every file stored once under its key, and every object opens",
          arguments: S3Emulator.allCases)
    func killedTwiceEveryFileStoredOnce(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let clock = ContinuousClock()
            let started = clock.now
            let scratch = try ScratchFolder(prefix: "attache-s3-batch")
            defer { scratch.remove() }
            let files = try makeFiles(in: scratch.path)
            let journal = scratch.path + "/journal.sqlite"
            let environment = emulator.environment()
            func startBatch() throws -> ChildProcess {
                try ChildProcess(
                    executable: try attacheBinary(),
                    arguments: [
                        "batch", scratch.path + "/files", "--url", "s3://\(emulator.bucket)/bulk/", "--s3-endpoint", emulator.endpoint,
                        "--journal", journal, "--concurrency", "2",
                    ],
                    environment: environment)
            }

            var kills = 0
            for run in 0..<2 {
                let before = try await JournalKiller.doneCount(journal: journal)
                let process = try startBatch()
                // The kill lands once this run has finished 20 to 80 more files, a random moment later; a process
                // of its own watches the journal and kills, so a starved test process cannot miss the moment.
                let killer = try JournalKiller.start(
                    pid: process.processIdentifier, journal: journal, atLeast: before + Int.random(in: 20...80),
                    delay: Double.random(in: 0...0.3))
                let status = try await process.wait(upTo: 300)
                _ = try await killer.wait(upTo: 60)
                if process.endedBySignal {
                    kills += 1
                    let done = try await JournalKiller.doneCount(journal: journal)
                    #expect(done < Self.fileCount, "run \(run) was killed only after it had finished")
                } else {
                    print("S3 batch kill test: run \(run) ended before its kill with status \(String(describing: status)): \(process.standardError.suffix(400))")
                }
            }
            #expect(kills >= 1, "no run was killed mid-way; the test proved nothing")
            let final = try startBatch()
            let status = try await final.wait(upTo: 300)
            #expect(status == 0, "the final run failed: \(final.standardError.suffix(2000))")

            // The journal: every file done once, under an idempotency key of its own.
            let entries = try UploadJournal(path: journal).entries()
            #expect(entries.count == Self.fileCount)
            #expect(entries.allSatisfy { $0.state == .done })
            #expect(Set(entries.compactMap(\.idempotencyKey)).count == Self.fileCount)

            // The bucket: exactly the receipts' objects (each file's and its thumbnails'), nothing more.
            var expected: [String] = []
            for entry in entries {
                let receipt = try #require(entry.receipt, "no receipt for \(entry.path)")
                let key = try #require(receipt.object?.key, "no object key for \(entry.path)")
                #expect(key.hasPrefix("bulk/" + (entry.idempotencyKey ?? "-")))
                expected.append(key)
                expected += (receipt.thumbnails ?? []).compactMap(\.fileId)
            }
            #expect(Set(expected).count == expected.count, "two receipts name the same object")
            let objects = scratch.path + "/objects"
            try FileManager.default.createDirectory(atPath: objects, withIntermediateDirectories: true)
            let listed = try JSONDecoder().decode(
                [String].self, from: Data(try await emulator.boto(["get-all", emulator.bucket, "bulk/", objects]).utf8))
            #expect(listed.count == expected.count)
            #expect(Set(listed) == Set(expected))

            // Every file's object opens with its receipt's key; what was not transformed is the source again.
            var opened = 0
            for entry in entries {
                guard let receipt = entry.receipt, let key = receipt.object?.key, let sealKey = receipt.seal.key else {
                    Issue.record("no seal key for \(entry.path)")
                    continue
                }
                let stored = objects + "/" + key.replacingOccurrences(of: "/", with: "%2F")
                let plain = scratch.path + "/plain-\(opened)"
                try Unsealer(scheme: receipt.seal.scheme, key: sealKey, transferEncoding: receipt.seal.transferEncoding)
                    .unseal(fileAt: stored, to: plain)
                let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: plain)))
                try? FileManager.default.removeItem(atPath: plain)
                #expect(Int64(bytes.count) == receipt.seal.plaintextByteCount, "\(entry.path)")
                let source = try #require(files[entry.path], "the journal names a file not made: \(entry.path)")
                if !Self.transformed.contains(String(entry.path.split(separator: ".").last ?? "")) {
                    #expect(bytes == source, "\(entry.path) did not come back as it was")
                }
                opened += 1
            }
            #expect(opened == Self.fileCount)
            print("S3 batch kill test (\(kind)): \(kills) kills, \(clock.now - started)")
        }
    }
}
