import Attache
import AttacheBatch
import AttacheServer
import AttacheTestSupport
import Foundation
import Testing

/// The Scan stage end to end: a real clamd (``ClamdProcess``), the reference server, the pipeline and
/// the built `attache`.
@Suite("scan stage with a live clamd")
struct ScanIntegrationTests {
    static let photo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Samples/photo.jpg").path

    static func scanner(_ address: String) throws -> ClamAVScanner {
        ClamAVScanner(address: try ClamdAddress(parsing: address))
    }

    /// Clean files go out with `scan {clean}` in the receipt; infected ones fail with `infected`, naming
    /// the signature, and the server never sees them.
    @Test func infectedFilesAreRefusedBeforeAnythingIsSent() async throws {
        let clamd = try await ClamdProcess.shared()
        let folder = try ScratchFolder(prefix: "attache-scan-it")
        defer { folder.remove() }
        let samples = try ScanSample.make(in: folder, clean: 4)
        try await LiveServer.with { server in
            let pipeline = try server.pipeline { $0.scan.scanner = try? Self.scanner(clamd.unixAddress) }
            for sample in samples {
                if let signature = sample.signature {
                    let error = await #expect(throws: AttacheError.self, "\(sample.path)") {
                        try await pipeline.send(Attachment(path: sample.path))
                    }
                    #expect(error?.code == .infected)
                    #expect(error?.stage == .scan)
                    #expect(error?.message == "infected: \(signature)")
                    #expect(error?.file == sample.path)
                } else {
                    let receipt = try await pipeline.send(Attachment(path: sample.path))
                    let scan = try #require(receipt.scan)
                    #expect(scan.verdict == .clean)
                    #expect(scan.engine?.hasPrefix("ClamAV 1.") == true)
                    #expect(scan.signature == nil)
                }
            }
            let stats = try await server.stats()
            #expect(stats.uploads == samples.filter { $0.signature == nil }.count)
        }
    }

    /// A photo with the EICAR string after its end: recompression drops it, so scanning what is sent
    /// finds nothing, while `scansOriginal` refuses the file.
    @Test func theOriginalIsScannedWhenAsked() async throws {
        let clamd = try await ClamdProcess.shared()
        let folder = try ScratchFolder(prefix: "attache-scan-it")
        defer { folder.remove() }
        let photo = try Data(contentsOf: URL(fileURLWithPath: Self.photo))
        let tainted = try folder.write("tainted.jpg", Array(photo) + ClamdProcess.eicar)
        try await LiveServer.with { server in
            let sent = try server.pipeline { $0.scan.scanner = try? Self.scanner(clamd.unixAddress) }
            let receipt = try await sent.send(Attachment(path: tainted))
            #expect(receipt.transform.recompressed)
            #expect(receipt.scan?.verdict == .clean)
            #expect(receipt.scan?.original == nil)
            let original = try server.pipeline {
                $0.scan.scanner = try? Self.scanner(clamd.unixAddress)
                $0.scan.scansOriginal = true
            }
            let error = await #expect(throws: AttacheError.self) { try await original.send(Attachment(path: tainted)) }
            #expect(error?.code == .infected)
            #expect(error?.message == "infected: Attache.Test.EICAR.UNOFFICIAL (in the original)")
            let clean = try await original.send(Attachment(path: Self.photo))
            #expect(clean.scan?.original == true)
            #expect(try await server.stats().uploads == 2)
        }
    }

    /// A batch scans a file that Transform passes through in the job that reads its identity, and
    /// gives a content it has seen before the same verdict: every copy of an infected file is refused
    /// and every clean copy stored. A photo that recompression changes is scanned as it will be sent,
    /// not ahead: the EICAR string after its end is dropped, and it goes out.
    @Test func aBatchScansAheadWhatTransformLeavesAlone() async throws {
        let clamd = try await ClamdProcess.shared()
        let folder = try ScratchFolder(prefix: "attache-scan-ahead")
        defer { folder.remove() }
        for copy in 1...3 {
            _ = try folder.write("files/eicar-\(copy).txt", ClamdProcess.eicar)
            _ = try folder.write("files/words-\(copy).txt", "the same words\n")
        }
        let photo = try Data(contentsOf: URL(fileURLWithPath: Self.photo))
        _ = try folder.write("files/tainted.jpg", Array(photo) + ClamdProcess.eicar)
        try await LiveServer.with { server in
            let pipeline = try server.pipeline { $0.scan.scanner = try? Self.scanner(clamd.unixAddress) }
            let batch = BatchUploader(configuration: BatchConfiguration(pipeline: pipeline, journalPath: folder.path + "/journal"))
            var refused: [String: AttacheError] = [:]
            var stored: [String: UploadReceipt] = [:]
            for try await event in batch.run([folder.path + "/files"]) {
                switch event {
                case .failed(let file, let error): refused[(file.path as NSString).lastPathComponent] = error
                case .succeeded(let file, let receipt): stored[(file.path as NSString).lastPathComponent] = receipt
                default: break
                }
            }
            #expect(refused.keys.sorted() == ["eicar-1.txt", "eicar-2.txt", "eicar-3.txt"])
            for error in refused.values {
                #expect(error.code == .infected && error.stage == .scan)
                #expect(error.message == "infected: Attache.Test.EICAR.UNOFFICIAL")
            }
            #expect(stored.keys.sorted() == ["tainted.jpg", "words-1.txt", "words-2.txt", "words-3.txt"])
            #expect(stored.values.allSatisfy { $0.scan?.verdict == .clean && $0.scan?.engine?.hasPrefix("ClamAV 1.") == true })
            #expect(stored["tainted.jpg"]?.transform.recompressed == true)
            #expect(try await server.stats().uploads == 4)
        }
    }

    /// No clamd: `refuse` fails the file (retryable, nothing sent); `send` sends it and the receipt says
    /// `unscanned` and why.
    @Test func failurePolicy() async throws {
        let folder = try ScratchFolder(prefix: "attache-scan-it")
        defer { folder.remove() }
        let file = try folder.write("notes.txt", "nothing to see\n")
        let nowhere = "unix:\(folder.path)/no-clamd.sock"
        try await LiveServer.with { server in
            let refusing = try server.pipeline { $0.scan.scanner = try? Self.scanner(nowhere) }
            let error = await #expect(throws: AttacheError.self) { try await refusing.send(Attachment(path: file)) }
            #expect(error?.code == .connectionFailed)
            #expect(error?.stage == .scan)
            #expect(error?.isRetryable == true)
            #expect(try await server.stats().uploads == 0)
            let sending = try server.pipeline {
                $0.scan.scanner = try? Self.scanner(nowhere)
                $0.scan.failurePolicy = .send
            }
            let receipt = try await sending.send(Attachment(path: file))
            #expect(receipt.scan?.verdict == .unscanned)
            #expect(receipt.scan?.reason?.contains("not reachable") == true)
            #expect(try await server.stats().uploads == 1)
        }
    }

    /// With a verdict cache, the same bytes under another name are not scanned again.
    @Test func duplicatesComeFromTheCache() async throws {
        let clamd = try await ClamdProcess.shared()
        let folder = try ScratchFolder(prefix: "attache-scan-it")
        defer { folder.remove() }
        let first = try folder.write("a.txt", "the same words\n")
        let second = try folder.write("b.txt", "the same words\n")
        let cache = ScanCache()
        try await LiveServer.with { server in
            let pipeline = try server.pipeline {
                $0.scan.scanner = try? Self.scanner(clamd.unixAddress)
                $0.scan.cache = cache
            }
            #expect(try await pipeline.send(Attachment(path: first)).scan?.cached == false)
            #expect(try await pipeline.send(Attachment(path: second)).scan?.cached == true)
            #expect(cache.count == 1)
        }
    }

    /// `attache scan`: clamdscan's lines and the summary, `--json`, exit 79 when something is infected
    /// and 0 when all is clean.
    @Test func scanCommand() async throws {
        let clamd = try await ClamdProcess.shared()
        let folder = try ScratchFolder(prefix: "attache-scan-it")
        defer { folder.remove() }
        let samples = try ScanSample.make(in: folder, clean: 6)
        let text = try await runCommand(try attacheBinary(), ["scan", "--clamd", clamd.unixAddress, folder.path + "/infected", folder.path + "/clean"])
        #expect(text.status == 79, "\(text.all)")
        for sample in samples {
            let line = sample.signature.map { "\(sample.path): \($0) FOUND" } ?? "\(sample.path): OK"
            #expect(text.standardOutput.contains(line + "\n"), "\(line)")
        }
        #expect(text.standardOutput.contains("Infected files: 10\n"))
        let json = try await runCommand(
            try attacheBinary(), ["scan", "--json", "--clamd", clamd.tcpAddress] + samples.map(\.path))
        #expect(json.status == 79)
        let lines = json.standardOutput.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(lines.count == samples.count)
        for sample in samples {
            let line = lines.first { $0?["path"] as? String == sample.path }
            #expect(line??["verdict"] as? String == (sample.signature == nil ? "clean" : "infected"))
            #expect(line??["signature"] as? String == sample.signature)
        }
        let clean = try await runCommand(try attacheBinary(), ["scan", "--clamd", clamd.unixAddress, folder.path + "/clean"])
        #expect(clean.status == 0, "\(clean.all)")
        let missing = try await runCommand(try attacheBinary(), ["scan", "--clamd", clamd.unixAddress, folder.path + "/none"])
        #expect(missing.status == 66, "\(missing.all)")
        #expect(missing.standardOutput.contains("ERROR\n"))

        // A folder walked as batch walks it: a FIFO is said to be skipped (not waited on, not silent), and
        // a name that is not UTF-8 ("caf\xE9.txt", Latin-1) is scanned under its exact bytes.
        let odd = folder.path + "/odd"
        try FileManager.default.createDirectory(atPath: odd, withIntermediateDirectories: true)
        #expect(mkfifo(odd + "/pipe", 0o600) == 0)
        let latin1 = Array((odd + "/caf").utf8) + [0xE9] + Array(".txt".utf8) + [0]
        let created = latin1.withUnsafeBytes { open($0.baseAddress!.assumingMemoryBound(to: CChar.self), O_WRONLY | O_CREAT | O_TRUNC, 0o600) }
        try #require(created >= 0)
        let body = ClamdProcess.eicar
        #expect(write(created, body, body.count) == body.count)
        close(created)
        let walked = try await runCommand(try attacheBinary(), ["scan", "--clamd", clamd.unixAddress, odd])
        #expect(walked.status == 79, "\(walked.all)")
        #expect(walked.standardOutput.contains(odd + "/pipe: not a regular file SKIPPED\n"), "\(walked.all)")
        #expect(walked.standardOutput.contains("Infected files: 1\n"), "\(walked.all)")
        #expect(walked.standardOutput.contains("Skipped: 1\n"), "\(walked.all)")

        // A filter narrows the walk, and what it leaves out is counted, not scanned; hidden files are always
        // scanned (what an attacker hides is what a scan is for).
        let filtered = folder.path + "/filtered"
        try folder.write("filtered/virus.com", ClamdProcess.eicar)
        try folder.write("filtered/notes.txt", "nothing to see\n")
        try folder.write("filtered/.hidden", ClamdProcess.eicar)
        let narrowed = try await runCommand(try attacheBinary(), ["scan", "--clamd", clamd.unixAddress, "--exclude", "*.com", filtered])
        #expect(narrowed.status == 79, "\(narrowed.all)")
        #expect(narrowed.standardOutput.contains(filtered + "/.hidden: "), "\(narrowed.all)")
        #expect(!narrowed.standardOutput.contains("virus.com: "), "\(narrowed.all)")
        #expect(narrowed.standardOutput.contains("Infected files: 1\n"), "\(narrowed.all)")
        #expect(narrowed.standardOutput.contains("Left out by the filter: 1\n"), "\(narrowed.all)")
        let onlyText = try await runCommand(
            try attacheBinary(), ["scan", "--clamd", clamd.unixAddress, "--include", "*.txt", filtered])
        #expect(onlyText.status == 0, "\(onlyText.all)")
        #expect(onlyText.standardOutput.contains(filtered + "/notes.txt: OK\n"), "\(onlyText.all)")
        #expect(onlyText.standardOutput.contains("Left out by the filter: 2\n"), "\(onlyText.all)")
    }

    /// `attache upload --clamd`: an infected file exits 79 with the signature on stderr, a clean one is
    /// stored; `--scan-failure send` with no clamd prints `unscanned` in the receipt.
    @Test func uploadCommand() async throws {
        let clamd = try await ClamdProcess.shared()
        let folder = try ScratchFolder(prefix: "attache-scan-it")
        defer { folder.remove() }
        let eicar = try folder.write("eicar.txt", ClamdProcess.eicar)
        let notes = try folder.write("notes.txt", "nothing to see\n")
        try await LiveServer.with { server in
            let base = ["upload", "--url", server.uploadURL, "--no-progress", "--json"]
            let refused = try await runCommand(try attacheBinary(), base + ["--clamd", clamd.unixAddress, eicar])
            #expect(refused.status == 79, "\(refused.all)")
            #expect(refused.standardError.contains("infected: Attache.Test.EICAR.UNOFFICIAL"), "\(refused.standardError)")
            let stored = try await runCommand(try attacheBinary(), base + ["--clamd", clamd.tcpAddress, notes])
            #expect(stored.status == 0, "\(stored.all)")
            #expect(stored.standardOutput.contains("\"verdict\":\"clean\""), "\(stored.standardOutput)")
            let unscanned = try await runCommand(
                try attacheBinary(), base + ["--clamd", "unix:\(folder.path)/none.sock", "--scan-failure", "send", notes])
            #expect(unscanned.status == 0, "\(unscanned.all)")
            #expect(unscanned.standardOutput.contains("\"verdict\":\"unscanned\""), "\(unscanned.standardOutput)")
            #expect(try await server.stats().uploads == 2)
        }
    }
}

/// The reference server's own `--clamd`: a file refused on both sides.
@Suite("reference server with a live clamd")
struct ReferenceServerScanTests {
    /// A client that does not scan sends EICAR and the server refuses it (422, `infected: …`, nothing
    /// stored); a client that scans refuses it before sending, so the server sees no request at all.
    @Test func refusedOnBothSides() async throws {
        let clamd = try await ClamdProcess.shared()
        let folder = try ScratchFolder(prefix: "attache-scan-it")
        defer { folder.remove() }
        let eicar = try folder.write("eicar.txt", ClamdProcess.eicar)
        let notes = try folder.write("notes.txt", "nothing to see\n")
        var configuration = ReferenceServerConfiguration(storeDirectory: folder.path + "/store")
        configuration.port = 0
        configuration.logLevel = .critical
        configuration.clamd = try ClamdAddress(parsing: clamd.tcpAddress)
        try await withReferenceServerProcess(configuration: configuration) { port in
            let server = LiveServer(port: port, store: folder.path + "/store")
            let plain = try server.pipeline(attempts: 1)
            let error = await #expect(throws: AttacheError.self) { try await plain.send(Attachment(path: eicar)) }
            #expect(error?.code == .rejected)
            #expect(error?.rejection?.message == "infected: Attache.Test.EICAR.UNOFFICIAL", "\(String(describing: error))")
            #expect(try await plain.send(Attachment(path: notes)).fileId != nil)
            let before = try await server.stats()
            #expect(before.uploads == 1)
            let scanning = try server.pipeline { $0.scan.scanner = try? ScanIntegrationTests.scanner(clamd.unixAddress) }
            let refused = await #expect(throws: AttacheError.self) { try await scanning.send(Attachment(path: eicar)) }
            #expect(refused?.code == .infected)
            let after = try await server.stats()
            #expect(after.requests == before.requests, "the scanning client sent a request")
        }
    }
}
