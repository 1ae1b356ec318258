import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheBatch
@testable import AttacheCore

/// Unit tests of the durable-promise fixes: seal material that regenerates identical bytes, private
/// journals, byte-exact paths and torn reads.
@Suite("Trust")
struct TrustUnitTests {
    // MARK: Seal material

    @Test(arguments: [SealScheme.streamGCM, .signal])
    func theSameMaterialSealsToTheSameBytesAndPartsNeverShareHeaderValues(scheme: SealScheme) throws {
        let plaintext = DataSource(Array(repeating: 0x41, count: 200_000))
        let material = SealMaterial.random(for: scheme)
        // A second process: the material read back from its text form.
        let reread = try SealMaterial(encoded: material.encoded)
        #expect(reread == material)
        let sealer = Sealer(scheme: scheme, key: material.key)
        let first = try readAll(try sealer.seal(plaintext, material: material, part: 0), chunk: 65_536)
        let again = try readAll(
            try Sealer(scheme: scheme, key: reread.key).seal(plaintext, material: reread, part: 0), chunk: 10_000)
        #expect(first == again)
        // Another part (a thumbnail) gets other header values: no nonce is used twice under one key.
        let thumbnail = try readAll(try sealer.seal(plaintext, material: material, part: 1), chunk: 65_536)
        #expect(Array(thumbnail.prefix(48)) != Array(first.prefix(48)))
        // Fresh material gives other bytes.
        let other = SealMaterial.random(for: scheme)
        let different = try readAll(
            try Sealer(scheme: scheme, key: other.key).seal(plaintext, material: other, part: 0), chunk: 65_536)
        #expect(different != first)
        // And what was sealed opens with the key.
        let opened = try Unsealer(scheme: scheme, key: material.key, plaintextByteCount: 200_000)
            .unseal(DataSource(first))
        #expect(try readAll(opened) == Array(repeating: 0x41, count: 200_000))
    }

    @Test func damagedMaterialTextIsRefused() {
        for text in ["", "attache-seal-v1:", "attache-seal-v1:kAAAA", "attache-seal-v1:x:y", "nope"] {
            #expect(throws: AttacheError.self) { try SealMaterial(encoded: text) }
        }
        #expect(!SealMaterial.random(for: .streamGCM).description.contains("attache-seal"))
    }

    @Test func theStoreKeepsOneMaterialPerKeyDurablyAndPrivately() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let previous = umask(0)
        defer { umask(previous) }
        let store = try SealMaterialStore(directory: folder.path + "/state/seal")
        let (first, existed) = try store.material(forKey: "order-42", scope: "http://h/upload", scheme: .streamGCM)
        #expect(!existed)
        let (again, existedAgain) = try SealMaterialStore(directory: folder.path + "/state/seal")
            .material(forKey: "order-42", scope: "http://h/upload", scheme: .streamGCM)
        #expect(existedAgain)
        #expect(again == first)
        let (other, _) = try store.material(forKey: "order-42", scope: "http://other/upload", scheme: .streamGCM)
        #expect(other != first)
        #expect(try mode(of: folder.path + "/state/seal") == 0o700)
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path + "/state/seal") {
            #expect(try mode(of: folder.path + "/state/seal/" + name) == 0o600)
            #expect(!name.contains("order-42"))
        }
    }

    // MARK: Journal files

    @Test(arguments: [mode_t(0o022), mode_t(0)])
    func theJournalAndItsCompanionsAreOwnerOnly(mask: mode_t) throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let previous = umask(mask)
        defer { umask(previous) }
        let path = folder.path + "/journal.sqlite"
        let journal = try UploadJournal(path: path)
        let lock = try JournalLock(journalPath: path)
        defer { lock.unlock() }
        let run = try journal.beginRun()
        _ = try journal.claim(
            path: folder.path + "/a.txt",
            identity: FileIdentity(byteCount: 1, modificationTime: 1, sha256: String(repeating: "b", count: 64)),
            retryFailed: false, runID: run)
        for file in [path, path + "-wal", path + "-shm", path + ".lock"] {
            #expect(FileManager.default.fileExists(atPath: file), "\(file) was expected")
            #expect(try mode(of: file) == 0o600, "\(file)")
        }
    }

    @Test func aJournalAnOlderVersionLeftReadableIsMadePrivate() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let path = folder.path + "/journal.sqlite"
        _ = try UploadJournal(path: path)
        #expect(chmod(path, 0o644) == 0)
        _ = try UploadJournal(path: path)
        #expect(try mode(of: path) == 0o600)
    }

    @Test func theJournalKeepsTheMaterialWithTheKeyAndResumesWithBoth() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let journal = try UploadJournal(path: folder.path + "/journal.sqlite")
        let identity = FileIdentity(byteCount: 1, modificationTime: 1, sha256: String(repeating: "c", count: 64))
        let first = try journal.claim(path: folder.path + "/a", identity: identity, retryFailed: false, runID: try journal.beginRun())
        let reopened = try UploadJournal(path: folder.path + "/journal.sqlite")
        let second = try reopened.claim(path: folder.path + "/a", identity: identity, retryFailed: false, runID: try reopened.beginRun())
        guard case .send(let key1, let material1?, false) = first, case .send(let key2, let material2?, true) = second else {
            Issue.record("unexpected decisions \(first) \(second)")
            return
        }
        #expect(key1 == key2)
        #expect(material1 == material2)
    }

    // MARK: Paths are bytes

    @Test func pathBytesSurviveTheStringFormExactly() {
        let samples: [[UInt8]] = [
            Array("plain.txt".utf8), Array("café.txt".utf8), [0x63, 0x61, 0x66, 0xE9, 0x2E, 0x74],
            [0xFF, 0xFE, 0x80], [0xC3], [0xED, 0xA0, 0x80], [0xC0, 0xAF],
            // A valid UTF-8 name holding a code point of the reserved block.
            Array("x\u{10FF85}y".utf8),
        ]
        for bytes in samples {
            let string = PlatformPath.string(fromBytes: bytes)
            #expect(PlatformPath.bytes(of: string) == bytes, "\(bytes)")
        }
        #expect(PlatformPath.displayName(PlatformPath.string(fromBytes: [0x63, 0xE9, 0x2E])) == "c\u{FFFD}.")
        #expect(PlatformPath.escapedName(PlatformPath.string(fromBytes: [0x63, 0xE9])) == "c\\xE9")
        #expect(PlatformPath.displayName("café") == "café")
    }

    @Test func aFileWhoseNameIsNotUTF8IsWalkedReadAndNamed() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let name = PlatformPath.string(fromBytes: [0x63, 0x61, 0x66, 0xE9, 0x2E, 0x74, 0x78, 0x74])
        let path = folder.path + "/" + name
        let fd = PlatformPath.withCString(path) { open($0, O_WRONLY | O_CREAT, 0o644) }
        #expect(fd >= 0)
        _ = write(fd, "latin-1", 7)
        close(fd)
        let items = FileWalker(roots: [folder.path], followSymlinks: false).next(limit: 10)
        #expect(items == [.file(path: path, byteCount: 7)])
        #expect(try readAll(try FileSource(path: path), chunk: 64) == Array("latin-1".utf8))
        #expect(try MIMEDetector().detect(fileAt: path).mimeType == "text/plain")
    }

    // MARK: Torn reads

    @Test func aSameSizeRewriteThatRestoresTheTimeIsCaughtBeforeTheLastByte() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let path = folder.path + "/video.bin"
        let old = [UInt8](repeating: 1, count: 300_000)
        try Data(old).write(to: URL(fileURLWithPath: path))
        var info = stat()
        stat(path, &info)
        let source = try FileSource(path: path, verifiesContent: true)
        let reader = try source.makeReader()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100_000, alignment: 16)
        defer { buffer.deallocate() }
        #expect(try reader.read(into: buffer) == 100_000)
        // rsync --inplace -t: new bytes, same size, the old modification time put back.
        try Data([UInt8](repeating: 2, count: 300_000)).write(to: URL(fileURLWithPath: path))
        var times = [info.st_atim, info.st_mtim]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        #expect(try reader.read(into: buffer) == 100_000)
        let error = #expect(throws: AttacheError.self) { _ = try reader.read(into: buffer) }
        #expect(error?.code == .fileChanged)
        // Without the check the torn copy reads through.
        let plain = try FileSource(path: path)
        #expect(try readAll(plain, chunk: 65_536).count == 300_000)
    }

    @Test func anUnchangedFileReadsThroughTheGuard() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let path = folder.path + "/a.bin"
        let bytes = (0..<100_003).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        for chunk in [1, 31, 4096, 65_536, 200_000] {
            #expect(try readAll(try FileSource(path: path, verifiesContent: true), chunk: chunk) == bytes)
        }
        let empty = try folder.write("empty.bin", "")
        #expect(try readAll(try FileSource(path: empty, verifiesContent: true), chunk: 16) == [])
    }

    // MARK: The writer watch (the second read skipped when the kernel vouches for the file)

    /// Writes `bytes` to `name` and waits until its last change lies further back than the watch's
    /// settle time, as it does for any file that was not written a moment ago.
    private func settledFile(_ folder: ScratchFolder, _ name: String, _ bytes: [UInt8]) throws -> String {
        let path = folder.path + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        usleep(UInt32(WriterWatch.settleTime / 1000) + 30_000)
        return path
    }

    /// Reads `reader` to its end in chunks of `chunk` bytes, calling `between` after the first chunk.
    private func drain(_ reader: any ByteReader, chunk: Int = 65_536, between: () throws -> Void = {}) throws -> [UInt8] {
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: chunk)
        var first = true
        while true {
            let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
            if n == 0 { return out }
            out += buffer[..<n]
            if first {
                first = false
                try between()
            }
        }
    }

    @Test func aFileNobodyWroteIsVouchedForWithoutASecondRead() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let bytes = (0..<300_001).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let path = try settledFile(folder, "settled.bin", bytes)
        let reader = try FileSource(path: path, verifiesContent: true).makeReader()
        #expect(try drain(reader) == bytes)
        #expect(FileSource.contentCheck(of: reader) == .unwrittenSinceOpened)

        // A file written a moment ago: its status-change time proves nothing yet, so it is read again.
        // "A moment" is the watch's settle time, and a loaded machine can take longer than that between
        // the write and the open: only an attempt whose open provably came within it counts.
        var counted = 0
        for attempt in 0..<50 where counted == 0 {
            let fresh = folder.path + "/fresh-\(attempt).bin"
            try Data(bytes).write(to: URL(fileURLWithPath: fresh))
            let freshReader = try FileSource(path: fresh, verifiesContent: true).makeReader()
            var opened = timespec()
            clock_gettime(CLOCK_REALTIME, &opened)
            var info = stat()
            #expect(stat(fresh, &info) == 0)
            let age = (Int64(opened.tv_sec) - Int64(info.st_ctim.tv_sec)) * 1_000_000_000
                + (Int64(opened.tv_nsec) - Int64(info.st_ctim.tv_nsec))
            #expect(try drain(freshReader) == bytes)
            guard age < WriterWatch.settleTime else { continue }
            #expect(FileSource.contentCheck(of: freshReader) == .readAgain)
            counted += 1
        }
        #expect(counted == 1, "no attempt opened the file within the settle time")
    }

    @Test func aFileHeldOpenForWritingIsReadAgain() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let bytes = [UInt8](repeating: 5, count: 200_000)
        let path = try settledFile(folder, "held.bin", bytes)
        let writer = open(path, O_WRONLY)
        #expect(writer >= 0)
        defer { close(writer) }
        let reader = try FileSource(path: path, verifiesContent: true).makeReader()
        #expect(try drain(reader) == bytes)
        #expect(FileSource.contentCheck(of: reader) == .readAgain)
    }

    @Test func anInPlaceRewriteDuringTheReadIsCaughtWithTheTimesPutBack() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let path = try settledFile(folder, "rewritten.bin", [UInt8](repeating: 1, count: 300_000))
        var info = stat()
        stat(path, &info)
        let reader = try FileSource(path: path, verifiesContent: true).makeReader()
        let error = #expect(throws: AttacheError.self) {
            _ = try drain(reader) {
                // Opened, written and closed between two reads, the modification time put back: nobody
                // has it open for writing at the end, but its status-change time moved.
                let fd = open(path, O_WRONLY)
                #expect(fd >= 0)
                let two = [UInt8](repeating: 2, count: 65_536)
                #expect(pwrite(fd, two, two.count, 0) == two.count)
                close(fd)
                var times = [info.st_atim, info.st_mtim]
                #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
            }
        }
        #expect(error?.code == .fileChanged)
        #expect(FileSource.contentCheck(of: reader) == .readAgain)
    }

    @Test(arguments: [false, true])
    func aWriteThroughASharedMappingIsCaught(unmapBeforeTheEnd: Bool) throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        let count = 300_000
        let path = try settledFile(folder, "mapped.bin", [UInt8](repeating: 3, count: count))
        var info = stat()
        stat(path, &info)
        let reader = try FileSource(path: path, verifiesContent: true).makeReader()
        var mapping: UnsafeMutableRawPointer?
        defer { if let mapping { munmap(mapping, count) } }
        let error = #expect(throws: AttacheError.self) {
            _ = try drain(reader) {
                // A mapping made after the read began, its descriptor closed at once: the bytes
                // already handed out are changed through memory, not with write(2).
                let fd = open(path, O_RDWR)
                #expect(fd >= 0)
                let mapped = mmap(nil, count, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                close(fd)
                guard let mapped, mapped != MAP_FAILED else { Issue.record("mmap failed"); return }
                mapped.storeBytes(of: 9, toByteOffset: 10, as: UInt8.self)
                msync(mapped, count, MS_SYNC)
                var times = [info.st_atim, info.st_mtim]
                #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
                if unmapBeforeTheEnd { munmap(mapped, count) } else { mapping = mapped }
            }
        }
        #expect(error?.code == .fileChanged)
        #expect(FileSource.contentCheck(of: reader) == .readAgain)
    }

    @Test func theFingerprintDoesNotDependOnHowTheBytesAreSplit() {
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        func fingerprint(_ splits: [Int]) -> UInt64 {
            var hash = ContentFingerprint()
            var start = 0
            for end in splits + [bytes.count] {
                bytes[start..<end].withUnsafeBytes { hash.update($0) }
                start = end
            }
            return hash.value
        }
        let whole = fingerprint([])
        #expect(fingerprint([1, 2, 33, 500]) == whole)
        #expect(fingerprint([31, 32, 64, 999]) == whole)
        var changed = bytes
        changed[500] ^= 1
        var hash = ContentFingerprint()
        changed.withUnsafeBytes { hash.update($0) }
        #expect(hash.value != whole)
    }

    @Test func theFingerprintSeesEveryChangeOrderAndLength() {
        // 4 KiB and a tail: whole 128-byte blocks for the AES lanes and a padded last block.
        let bytes = (0..<4_200).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 7) }
        func fingerprint(_ data: [UInt8]) -> UInt64 {
            var hash = ContentFingerprint()
            data.withUnsafeBytes { hash.update($0) }
            return hash.value
        }
        let whole = fingerprint(bytes)
        var seen: Set<UInt64> = [whole]
        // One bit flipped at every position (first, middle and last of each lane's words, the tail).
        for position in stride(from: 0, to: bytes.count, by: 7) {
            var changed = bytes
            changed[position] ^= 0x10
            seen.insert(fingerprint(changed))
        }
        #expect(seen.count == 1 + (bytes.count + 6) / 7, "two different contents gave the same fingerprint")
        // The same 16-byte words in another order: two blocks swapped, two words of one block swapped.
        var blocksSwapped = bytes
        blocksSwapped.replaceSubrange(0..<128, with: bytes[128..<256])
        blocksSwapped.replaceSubrange(128..<256, with: bytes[0..<128])
        #expect(fingerprint(blocksSwapped) != whole)
        var wordsSwapped = bytes
        wordsSwapped.replaceSubrange(0..<16, with: bytes[16..<32])
        wordsSwapped.replaceSubrange(16..<32, with: bytes[0..<16])
        #expect(fingerprint(wordsSwapped) != whole)
        // Trailing zeros are not the same content: the length counts.
        #expect(fingerprint(bytes + [0]) != whole)
        #expect(fingerprint([]) != fingerprint([0]))
    }

    // MARK: Retries

    @Test func aBatchRidesOutAMinuteOfOutage() {
        let policy = RetryPolicy.batch
        // Every delay is at most maximumDelay, so attempts keep coming at least every 10 s until the
        // budget ends, well after a 60 s outage.
        #expect(policy.maximumAttempts == Int.max)
        #expect(policy.budget >= .seconds(60) + policy.maximumDelay * 2)
        var generator = SystemRandomNumberGenerator()
        var elapsed: Duration = .zero
        var attempt = 1
        while elapsed < .seconds(60) {
            let delay = policy.delay(afterAttempt: attempt, retryAfter: nil, using: &generator)
            #expect(delay <= policy.maximumDelay)
            elapsed += delay
            attempt += 1
        }
        #expect(elapsed <= policy.budget)
        // The old default gave up after about 6 s.
        #expect(RetryPolicy.standard.maximumAttempts == 6)
    }

    // MARK: Helpers

    private func mode(of path: String) throws -> mode_t {
        var info = stat()
        guard stat(path, &info) == 0 else { throw TestError("cannot stat \(path)") }
        return info.st_mode & 0o777
    }
}

private struct TestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
