import Attache
import AttacheBatch
import AttacheServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import AttacheTestSupport
import Testing

/// Everything at once, the way a bad night goes: 400 mixed files sent by `attache batch` with its
/// defaults (a fresh seal key per file), the batch SIGKILLed three times, the server SIGKILLed and
/// restarted five times, and a proxy in between that loses a fifth of the server's answers after the
/// server stored the upload. Then what a user checks: the last run exits 0, the server holds every file
/// exactly once, and every file downloaded and decrypted with the key in its receipt is the source (or,
/// for a recompressed image, the recompressed image the pipeline makes of the source).
@Suite("Chaos", .serialized)
struct ChaosTests {
    @Test func killsRestartsAndLostAnswersLoseNothingAndEveryKeyOpensItsFile() async throws {
        var generator = SeededGenerator.forTest("chaos test")
        let scratch = try TrustScratch()
        defer { scratch.remove() }
        let count = 400
        try makeMixedFiles(count: count, in: scratch.root + "/files", using: &generator)

        let store = scratch.root + "/store"
        var server = try await ServerProcess.start(store: store)
        let port = server.port
        let proxy = try await DropAnswersProxy(upstream: port, drop: 0.2, seed: generator.next())
        defer { proxy.stop() }
        // --dedup off: the moments below assume that each copy of a sample costs its own transform (seconds for
        // the videos), which keeps each run going long enough to be killed; with the default, the copies take
        // the first one's transform and a run can end before its kill. What is durable does not change with
        // it (every file is still sealed with its own key and sent on its own: SharedTransformTests).
        let arguments = [
            "batch", scratch.root + "/files", "--url", "http://127.0.0.1:\(proxy.port)/upload", "--journal",
            scratch.journal, "--concurrency", "4", "--dedup", "off",
        ]

        // Three runs, each SIGKILLed; during them the server is SIGKILLed and restarted five times.
        var batchKills = 0
        var serverRestarts = 0
        for serverKills in [1, 2, 2] {
            let batch = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
            for _ in 0..<serverKills {
                try await Task.sleep(for: .milliseconds(Int.random(in: 300...900, using: &generator)))
                server.kill()
                _ = try await server.waitForExit()
                try await Task.sleep(for: .milliseconds(Int.random(in: 100...600, using: &generator)))
                server = try await ServerProcess.start(store: store, port: port)
                serverRestarts += 1
            }
            if try await batch.wait(upTo: Double.random(in: 0.3...1.5, using: &generator)) == nil {
                kill(batch.processIdentifier, SIGKILL)
                _ = try await batch.wait(upTo: 30)
                batchKills += 1
            }
        }
        #expect(batchKills == 3, "a batch run ended before it could be killed; the test proved less")
        #expect(serverRestarts == 5)

        let final = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
        let status = try await final.wait(upTo: 600)
        #expect(status == 0, "the final run failed: \(final.standardError.suffix(2000))")

        // Exactly once: one upload and one idempotency key per file, counted from the store on disk.
        let stats = try await serverStats(port: port)
        #expect(stats.uploads == count, "uploads stored: \(stats.uploads)")
        #expect(stats.idempotencyKeys == count)

        // The right key: download every file and open it with its receipt's key.
        let entries = try UploadJournal(path: scratch.journal).entries()
        #expect(entries.count == count)
        #expect(entries.allSatisfy { $0.state == .done })
        // The pipeline's own Transform configuration (libheif for the HEIC sample, ffmpeg for media).
        let transformer = Transformer(configuration: PipelineConfiguration(url: "http://127.0.0.1/").transform)
        var opened = 0
        // The 400 files hold some 15 samples many times over: each distinct source is transformed once.
        var transformedSources: [Data: [UInt8]] = [:]
        for entry in entries {
            let receipt = try #require(entry.receipt, "\(entry.path): no receipt")
            let fileId = try #require(receipt.fileId)
            let keyText = try #require(receipt.seal.key, "\(entry.path): no key in the receipt")
            let stored = try await download(port: port, fileId: fileId)
            let key = keyText
            let plaintext: [UInt8]
            do {
                plaintext = try Unsealer(scheme: .streamGCM, key: key).unseal(DataSource(stored)).readToEnd()
            } catch {
                Issue.record("\(entry.path): the receipt's key does not open the stored file: \(error)")
                continue
            }
            let expected: [UInt8]
            if receipt.transform.recompressed {
                let source = try Data(contentsOf: URL(fileURLWithPath: entry.path))
                if let known = transformedSources[source] {
                    expected = known
                } else {
                    let work = scratch.root + "/work-\(fileId)"
                    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
                    let output = try await transformer.transform(
                        fileAt: entry.path, mimeType: receipt.detection.mimeType, kind: receipt.detection.kind,
                        isAnimated: receipt.detection.metadata.isAnimated == true, workDirectory: work)
                    expected = Array(try Data(contentsOf: URL(fileURLWithPath: output.path)))
                    transformedSources[source] = expected
                }
            } else {
                expected = Array(try Data(contentsOf: URL(fileURLWithPath: entry.path)))
            }
            #expect(plaintext == expected, "\(entry.path): decrypted bytes differ from the source")
            if plaintext == expected { opened += 1 }
        }
        #expect(opened == count)
        server.kill()
    }

    // MARK: Support

    /// Samples of every kind (photos and PNGs are recompressed, with thumbnails; videos, voice notes and the
    /// animated GIF converted) and random files.
    private func makeMixedFiles(count: Int, in folder: String, using generator: inout SeededGenerator) throws {
        try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: true)
        let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Samples").path
        let names = try FileManager.default.contentsOfDirectory(atPath: samples)
            .filter { !$0.hasPrefix(".") && $0 != "README.md" }
            .filter { name in
                var isDirectory: ObjCBool = false
                return FileManager.default.fileExists(atPath: samples + "/" + name, isDirectory: &isDirectory)
                    && !isDirectory.boolValue
            }
            .sorted()
        for i in 0..<count {
            let folderName = i % 5 == 0 ? folder + "/sub" : folder
            if i % 2 == 0, !names.isEmpty {
                let name = names[(i / 2) % names.count]
                try FileManager.default.copyItem(atPath: samples + "/" + name, toPath: folderName + "/\(i)-" + name)
            } else {
                let size = Int.random(in: 200...120_000, using: &generator)
                var bytes = [UInt8](repeating: 0, count: size)
                for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: generator.next()) }
                try Data(bytes).write(to: URL(fileURLWithPath: folderName + "/\(i).bin"))
            }
        }
    }

    private func download(port: Int, fileId: String) async throws -> [UInt8] {
        let url = URL(string: "http://127.0.0.1:\(port)/files/\(fileId)")!
        let (data, response) = try await URLSession.shared.data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        return Array(data)
    }

    struct Stats: Decodable {
        var files: Int
        var uploads: Int
        var idempotencyKeys: Int
    }

    private func serverStats(port: Int) async throws -> Stats {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/stats")!)
        return try JSONDecoder().decode(Stats.self, from: data)
    }
}

