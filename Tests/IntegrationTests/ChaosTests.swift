import Attache
import AttacheServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
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
        let seed = UInt64.random(in: 1...UInt64.max)
        print("chaos test seed: \(seed)")
        var generator = SeededGenerator(seed: seed)
        let scratch = try TrustScratch()
        defer { scratch.remove() }
        let count = 400
        try makeMixedFiles(count: count, in: scratch.root + "/files", using: &generator)

        let server = try ServerProcess(store: scratch.root + "/store")
        defer { server.stop() }
        let proxy = try DropAnswersProxy(upstream: server.port, drop: 0.2, seed: generator.next())
        defer { proxy.stop() }
        let arguments = [
            "batch", scratch.root + "/files", "--url", "http://127.0.0.1:\(proxy.port)/upload", "--journal",
            scratch.journal, "--concurrency", "4",
        ]

        // The server dies five times while the batch runs and is killed three times.
        let serverKills = Task {
            var generator = SeededGenerator(seed: seed ^ 0x5EED)
            for _ in 0..<5 {
                try await Task.sleep(for: .milliseconds(Int.random(in: 300...1500, using: &generator)))
                try server.kill9AndRestart(downFor: .milliseconds(Int.random(in: 100...800, using: &generator)))
            }
        }
        var batchKills = 0
        for _ in 0..<3 {
            let batch = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
            let delay = Double.random(in: 0.8...2.5, using: &generator)
            if try await batch.wait(upTo: delay) == nil {
                kill(batch.processIdentifier, SIGKILL)
                _ = try await batch.wait(upTo: 30)
                batchKills += 1
            }
        }
        try await serverKills.value
        #expect(batchKills == 3, "a batch run ended before it could be killed; the test proved less")
        #expect(server.restarts == 5)

        let final = try ChildProcess(executable: try attacheBinary(), arguments: arguments)
        let status = try await final.wait(upTo: 600)
        #expect(status == 0, "the final run failed: \(final.standardError.suffix(2000))")

        // Exactly once: one upload and one idempotency key per file, counted from the store on disk.
        let stats = try await serverStats(port: server.port)
        #expect(stats.uploads == count, "uploads stored: \(stats.uploads)")
        #expect(stats.idempotencyKeys == count)

        // The right key: download every file and open it with its receipt's key.
        let entries = try UploadJournal(path: scratch.journal).entries()
        #expect(entries.count == count)
        #expect(entries.allSatisfy { $0.state == .done })
        let transformer = Transformer()
        var opened = 0
        for entry in entries {
            let receipt = try #require(entry.receipt, "\(entry.path): no receipt")
            let fileId = try #require(receipt.fileId)
            let keyText = try #require(receipt.seal.key, "\(entry.path): no key in the receipt")
            let stored = try await download(port: server.port, fileId: fileId)
            let key = AttachmentKey(bytes: SecureBytes(try Base64.decode(keyText)))
            let plaintext: [UInt8]
            do {
                plaintext = try readAllBytes(try Unsealer(scheme: .streamGCM, key: key).unseal(DataSource(stored)))
            } catch {
                Issue.record("\(entry.path): the receipt's key does not open the stored file: \(error)")
                continue
            }
            let expected: [UInt8]
            if receipt.transform.recompressed {
                let work = scratch.root + "/work-\(fileId)"
                try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
                let output = try await transformer.transform(
                    fileAt: entry.path, mimeType: receipt.detection.mimeType, kind: receipt.detection.kind,
                    workDirectory: work)
                expected = Array(try Data(contentsOf: URL(fileURLWithPath: output.path)))
            } else {
                expected = Array(try Data(contentsOf: URL(fileURLWithPath: entry.path)))
            }
            #expect(plaintext == expected, "\(entry.path): decrypted bytes differ from the source")
            if plaintext == expected { opened += 1 }
        }
        #expect(opened == count)
    }

    // MARK: Support

    /// Samples of every kind (photos and PNGs are recompressed, with thumbnails) and random files.
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

func readAllBytes(_ reader: any ByteReader) throws -> [UInt8] {
    var out: [UInt8] = []
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
    defer { buffer.deallocate() }
    while true {
        let n = try reader.read(into: buffer)
        if n == 0 { return out }
        out += buffer[..<n]
    }
}

/// The `attache-server` executable on a fixed free port, killed with SIGKILL and started again on the
/// same port and store.
final class ServerProcess: Sendable {
    let port: Int
    let store: String
    private let lock = Mutex<(process: Process?, restarts: Int)>((nil, 0))

    init(store: String, port: Int? = nil) throws {
        self.store = store
        self.port = try port ?? freePort()
        try start()
    }

    var restarts: Int { lock.withLock { $0.restarts } }

    private func start() throws {
        let folder = URL(fileURLWithPath: try attacheBinary()).deletingLastPathComponent().path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: folder + "/attache-server")
        process.arguments = [
            "--host", "127.0.0.1", "--port", String(port), "--store", store, "--log-level", "critical",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        lock.withLock { $0.process = process }
        try waitUntilListening()
    }

    private func waitUntilListening() throws {
        // Connecting is the event: a refused connect means not yet.
        for _ in 0..<400 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            close(fd)
            if connected == 0 { return }
            usleep(25_000)
        }
        throw TestFailure("attache-server did not start listening on \(port)")
    }

    func kill9AndRestart(downFor: Duration) throws {
        let process = lock.withLock { $0.process }
        if let process {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        usleep(UInt32(downFor.components.attoseconds / 1_000_000_000_000) + UInt32(downFor.components.seconds) * 1_000_000)
        try start()
        lock.withLock { $0.restarts += 1 }
    }

    func stop() {
        if let process = lock.withLock({ $0.process }) {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
    }
}
