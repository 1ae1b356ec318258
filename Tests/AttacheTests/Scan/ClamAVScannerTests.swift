import AttacheTestSupport
import Foundation
import Synchronization
import Testing
@testable import Attache
@testable import AttacheCore

/// ``ClamAVScanner`` against a real clamd on a private socket and port, with a database the test makes.
@Suite("ClamAV scanner, live clamd")
struct ClamAVScannerTests {
    /// Every sample of the batch test's whole set (1,000 files, 10 infected) over every transfer
    /// (descriptor and stream over the UNIX socket, stream over TCP): the same verdicts, the signatures
    /// named, one session per transfer for the whole set.
    @Test func verdictsAreTheSameOverEveryTransfer() async throws {
        let clamd = try await ClamdProcess.shared()
        let folder = try ScratchFolder(prefix: "attache-scan")
        defer { folder.remove() }
        let samples = try ScanSample.make(in: folder, clean: 990)
        #expect(samples.count == 1000)
        let transfers: [(String, ClamAVScanner.Transfer)] = [
            (clamd.unixAddress, .descriptor), (clamd.unixAddress, .stream), (clamd.tcpAddress, .stream),
        ]
        for (address, transfer) in transfers {
            var configuration = ClamAVScanner.Configuration(address: try ClamdAddress(parsing: address))
            configuration.transfer = transfer
            let scanner = ClamAVScanner(configuration: configuration)
            for sample in samples {
                let verdict = try await scanner.scan(try FileSource(path: sample.path), file: sample.path)
                #expect(verdict.signature == sample.signature, "\(address) \(transfer): \(sample.path)")
                #expect(verdict.outcome == (sample.signature == nil ? .clean : .infected))
                #expect(verdict.version.engine.hasPrefix("ClamAV 1."))
            }
            // IDSESSION: one connection, one VERSION, for all the files.
            #expect(scanner.sessionsOpened == 1, "\(address) \(transfer)")
            scanner.closeIdleSessions()
        }
    }

    /// Pipelined descriptors (`attache scan`'s way): every request of a run sent before the answers,
    /// which clamd gives in any order; each verdict lands on its own file, a missing file in the middle
    /// gets its own error, and the run takes one session.
    @Test func pipelinedDescriptorsKeepEachVerdictOnItsFile() async throws {
        let clamd = try await ClamdProcess.shared()
        let folder = try ScratchFolder(prefix: "attache-scan-pipe")
        defer { folder.remove() }
        let samples = try ScanSample.make(in: folder, clean: 90).shuffled()
        var paths = samples.map(\.path)
        paths.insert(folder.path + "/no-such-file", at: 40)
        let scanner = ClamAVScanner(address: try ClamdAddress(parsing: clamd.unixAddress))
        #expect(scanner.passesDescriptors)
        let results = try scanner.scanFilesBlocking(paths)
        #expect(results.count == paths.count)
        for (path, result) in zip(paths, results) {
            if path.hasSuffix("no-such-file") {
                #expect(throws: AttacheError.self) { try result.get() }
                continue
            }
            let expected = samples.first { $0.path == path }?.signature
            #expect(try result.get().signature == expected, "\(path)")
        }
        #expect(scanner.sessionsOpened == 1)
    }

    /// The sliding window (`attache scan`'s way): files taken one by one while at most 4 requests are
    /// unanswered, each answer freeing a place for the next file. Every file is delivered once, with its
    /// own verdict; a missing file gets its error without a request; one session serves them all.
    @Test func aSlidingWindowDeliversEveryFileOnceWithItsVerdict() async throws {
        let clamd = try await ClamdProcess.shared()
        let folder = try ScratchFolder(prefix: "attache-scan-window")
        defer { folder.remove() }
        let samples = try ScanSample.make(in: folder, clean: 90).shuffled()
        var paths = samples.map(\.path)
        paths.insert(folder.path + "/no-such-file", at: 40)
        let scanner = ClamAVScanner(address: try ClamdAddress(parsing: clamd.unixAddress))
        var remaining = paths.makeIterator()
        var delivered: [String: Result<ScanVerdict, AttacheError>] = [:]
        var deliveries = 0
        try scanner.scanFilesBlocking(
            window: 4, next: { remaining.next() },
            deliver: { path, result in
                deliveries += 1
                delivered[path] = result
            })
        #expect(deliveries == paths.count)
        #expect(delivered.count == paths.count)
        for path in paths {
            let result = try #require(delivered[path], "\(path)")
            if path.hasSuffix("no-such-file") {
                #expect(throws: AttacheError.self) { try result.get() }
                continue
            }
            #expect(try result.get().signature == samples.first { $0.path == path }?.signature, "\(path)")
        }
        #expect(scanner.sessionsOpened == 1)
    }

    /// The library's many-file scan (``ClamAVScanner/scanFiles(_:)``): every file once with its own verdict,
    /// a missing one with an error that names it; by descriptor in one session, and streamed over TCP.
    /// Ending the iteration early stops taking files.
    @Test func manyFilesThroughTheAsyncStream() async throws {
        let clamd = try await ClamdProcess.shared()
        let folder = try ScratchFolder(prefix: "attache-scan-files")
        defer { folder.remove() }
        let samples = try ScanSample.make(in: folder, clean: 90).shuffled()
        var paths = samples.map(\.path)
        let missing = folder.path + "/no-such-file"
        paths.insert(missing, at: 40)
        for (address, descriptors) in [(clamd.unixAddress, true), (clamd.tcpAddress, false)] {
            let scanner = ClamAVScanner(address: try ClamdAddress(parsing: address))
            #expect(scanner.passesDescriptors == descriptors)
            var delivered: [String: Result<ScanVerdict, AttacheError>] = [:]
            var deliveries = 0
            for await file in scanner.scanFiles(paths) {
                deliveries += 1
                delivered[file.path] = file.result
            }
            #expect(deliveries == paths.count, "\(address)")
            #expect(delivered.count == paths.count, "\(address)")
            for sample in samples {
                #expect(try delivered[sample.path]?.get().signature == sample.signature, "\(address): \(sample.path)")
            }
            guard case .failure(let error) = delivered[missing] else {
                Issue.record("the missing file was not refused over \(address)")
                continue
            }
            #expect(error.code == .fileNotFound && error.file == missing, "\(address): \(error)")
            #expect(scanner.sessionsOpened == 1, "\(address)")

            // Two results taken, then the iteration ends: the scan stops taking files.
            var taken = 0
            for await _ in scanner.scanFiles(paths) {
                taken += 1
                if taken == 2 { break }
            }
            #expect(taken == 2)
            scanner.closeIdleSessions()
        }
    }

    /// A scan told the content's SHA-256 gives clamd's earlier answer for that content without asking
    /// again; without the digest, or with another one, clamd is asked.
    @Test func aKnownDigestIsAnsweredWithoutClamd() async throws {
        let clamd = try await ClamdProcess.shared()
        let folder = try ScratchFolder(prefix: "attache-scan-digest")
        defer { folder.remove() }
        let infected = try folder.write("eicar.txt", ClamdProcess.eicar)
        let clean = try folder.write("clean.txt", Array("nothing to see".utf8))
        let scanner = ClamAVScanner(address: try ClamdAddress(parsing: clamd.unixAddress))
        let first = try scanner.scanBlocking(try FileSource(path: infected), file: infected, contentDigest: "d1")
        #expect(first.outcome == .infected)
        // The same digest for other bytes: clamd is not asked, so the answer is the remembered one. (A
        // caller passes the digest of the bytes it scans; this shows that the answer came from memory.)
        let remembered = try scanner.scanBlocking(try FileSource(path: clean), file: clean, contentDigest: "d1")
        #expect(remembered == first)
        #expect(try scanner.scanBlocking(try FileSource(path: clean), file: clean, contentDigest: "d2").outcome == .clean)
        #expect(try scanner.scanBlocking(try FileSource(path: clean), file: clean).outcome == .clean)
        #expect(try scanner.scanBlocking(try FileSource(path: infected), file: infected, contentDigest: "d2").outcome == .clean)
        #expect(scanner.sessionsOpened == 1)
    }

    /// Bytes in memory are streamed, even where files would go by descriptor (clamd is on a UNIX socket
    /// here); concurrent scans each take a session of their own. Every source's first read waits until
    /// all eight have begun reading: that happens only when the eight streams are read at once, each in
    /// a session of its own. Scans that shared a session, or went by descriptor and never read their
    /// source, would never meet there (each wait gives up after 30 s and fails its scan).
    @Test func bytesInMemoryAndConcurrentScans() async throws {
        let clamd = try await ClamdProcess.shared()
        let scanner = ClamAVScanner(address: try ClamdAddress(parsing: clamd.unixAddress))
        #expect(scanner.passesDescriptors)
        let meeting = Meeting(count: 8)
        let verdicts = try await withThrowingTaskGroup(of: ScanVerdict.self) { group in
            for index in 0..<8 {
                group.addTask {
                    let bytes = index % 3 == 0 ? ClamdProcess.eicar : Array("clean \(index)".utf8)
                    return try await scanner.scan(MeetingSource(bytes: bytes, meeting: meeting), file: "memory-\(index)")
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(verdicts.filter { $0.outcome == .infected }.count == 3)
        #expect(verdicts.allSatisfy { $0.outcome == .clean || $0.signature == "Attache.Test.EICAR.UNOFFICIAL" })
        #expect(scanner.sessionsOpened == 8)
        #expect(meeting.arrived == 8)
    }

    /// A stream over clamd's StreamMaxLength is answered with clamd's own words, as `.limitExceeded`.
    @Test func overStreamMaxLength() async throws {
        let clamd = try await ClamdProcess(streamMaxLength: "1M")
        defer { clamd.stop() }
        let folder = try ScratchFolder(prefix: "attache-scan")
        defer { folder.remove() }
        let big = try folder.write("big.bin", [UInt8](repeating: 0x41, count: 3 << 20))
        var configuration = ClamAVScanner.Configuration(address: try ClamdAddress(parsing: clamd.unixAddress))
        configuration.transfer = .stream
        let scanner = ClamAVScanner(configuration: configuration)
        let error = await #expect(throws: AttacheError.self) {
            try await scanner.scan(try FileSource(path: big), file: big)
        }
        #expect(error?.code == .limitExceeded)
        #expect(error?.stage == .scan)
        #expect(error?.message.contains("StreamMaxLength") == true)
        // Under the limit the same scanner goes on (a new session).
        let small = try folder.write("small.bin", ClamdProcess.eicar)
        #expect(try await scanner.scan(try FileSource(path: small), file: small).outcome == .infected)
    }

    /// A clamd that stops reading in the middle of a stream (SIGSTOP) fails the scan after the stall
    /// timeout with a clear error, instead of hanging it.
    @Test func stalledClamdTimesOut() async throws {
        let clamd = try await ClamdProcess()
        defer { clamd.stop() }
        let folder = try ScratchFolder(prefix: "attache-scan")
        defer { folder.remove() }
        let big = try folder.write("big.bin", [UInt8](repeating: 0x42, count: 48 << 20))
        var configuration = ClamAVScanner.Configuration(address: try ClamdAddress(parsing: clamd.tcpAddress))
        configuration.stallTimeout = .seconds(1)
        configuration.replyTimeout = .seconds(1)
        let scanner = ClamAVScanner(configuration: configuration)
        // A session first, so the pause hits the stream and not the connect.
        _ = try await scanner.engineVersion()
        clamd.pause()
        defer { clamd.resume() }
        let error = await #expect(throws: AttacheError.self) {
            try await scanner.scan(try FileSource(path: big), file: big)
        }
        #expect(error?.code == .timedOut)
        #expect(error?.stage == .scan)
        #expect(error?.message.contains("stopped answering") == true)
    }

    /// Nobody at the address: `.connectionFailed`, retryable, naming the address.
    @Test func unreachable() async throws {
        let folder = try ScratchFolder(prefix: "attache-scan")
        defer { folder.remove() }
        for address in ["unix:\(folder.path)/none.sock", "tcp:127.0.0.1:\(try refusedPort())"] {
            let scanner = ClamAVScanner(address: try ClamdAddress(parsing: address))
            let error = await #expect(throws: AttacheError.self) {
                try await scanner.scan(DataSource(Array("x".utf8)), file: "x")
            }
            #expect(error?.code == .connectionFailed)
            #expect(error?.isRetryable == true)
            #expect(error?.message.contains(address) == true)
        }
    }

    /// A kept session that clamd closed meanwhile (a restart) is replaced without failing the scan.
    @Test func sessionClosedByARestartIsReplaced() async throws {
        let clamd = try await ClamdProcess()
        defer { clamd.stop() }
        let scanner = ClamAVScanner(address: try ClamdAddress(parsing: clamd.unixAddress))
        #expect(try await scanner.scan(DataSource(ClamdProcess.eicar), file: "a").outcome == .infected)
        clamd.kill()
        try await clamd.start()
        #expect(try await scanner.scan(DataSource(ClamdProcess.eicar), file: "b").outcome == .infected)
        #expect(scanner.sessionsOpened == 2)
    }

    /// The verdict cache: a duplicate is found by its digest and not scanned again; a cache file is
    /// read back by the next cache made from it.
    @Test func scanCacheFile() async throws {
        let folder = try ScratchFolder(prefix: "attache-scan")
        defer { folder.remove() }
        let path = folder.path + "/verdicts"
        let cache = try ScanCache(path: path)
        let version = ScanEngineVersion(engine: "ClamAV 1.4.6", signatures: "27470")
        let digest = ContentDigest.sha256Hex(of: ClamdProcess.eicar)
        cache.store(ScanVerdict(outcome: .infected, signature: "Sig", version: version), digest: digest)
        let reread = try ScanCache(path: path)
        #expect(reread.verdict(digest: digest, version: version)?.signature == "Sig")
        #expect(reread.verdict(digest: digest, version: ScanEngineVersion(engine: "ClamAV 1.4.6", signatures: "27471")) == nil)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }
}

/// A point where `count` readers wait for each other (blocking, on the scanner's threads), for at most 30 s.
private final class Meeting: Sendable {
    private let state = Mutex(0)
    private let count: Int
    init(count: Int) { self.count = count }

    var arrived: Int { state.withLock { $0 } }

    /// Counts this reader in and waits until all have come; throws when they have not after 30 s.
    func arrive() throws {
        state.withLock { $0 += 1 }
        let deadline = ContinuousClock.now + .seconds(30)
        while state.withLock({ $0 }) < count {
            guard ContinuousClock.now < deadline else {
                throw TestFailure("only \(arrived) of \(count) streams were read at once")
            }
            usleep(1_000)
        }
    }
}

/// Bytes in memory whose first read waits at a ``Meeting``.
private struct MeetingSource: ByteSource {
    let bytes: [UInt8]
    let meeting: Meeting
    var byteCount: Int64 { Int64(bytes.count) }

    func makeReader() throws -> any ByteReader { Reader(inner: try DataSource(bytes).makeReader(), meeting: meeting) }

    private final class Reader: ByteReader {
        let inner: any ByteReader
        let meeting: Meeting
        var met = false
        init(inner: any ByteReader, meeting: Meeting) {
            self.inner = inner
            self.meeting = meeting
        }
        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            if !met {
                met = true
                try meeting.arrive()
            }
            return try inner.read(into: buffer)
        }
    }
}
