import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

/// `attache encrypt` / `decrypt` between files, where `stream-gcm` runs on every core: the bytes must be
/// exactly those of the sequential reader, and every damaged file must fail as it does there.
@Suite struct StreamGCMFileTests {
    static let segment = StreamGCM.segmentPlaintextCount
    static let run = StreamGCMFiles.runPlaintextCount

    static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    static func contents(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// A plaintext file sealed by `write(toFile:)`, with the key used.
    static func sealedFile(_ plaintext: [UInt8], in directory: TemporaryDirectory) throws -> AttachmentKey {
        let key = AttachmentKey.random(for: .streamGCM)
        try write(plaintext, to: directory.file("plain"))
        let payload = try Sealer(scheme: .streamGCM, key: key).seal(try FileSource(path: directory.file("plain")))
        try payload.write(toFile: directory.file("sealed"))
        return key
    }

    /// The error code of decrypting `sealed` from a file, checking that no output is left behind.
    static func openCode(_ sealed: [UInt8], _ key: AttachmentKey, in directory: TemporaryDirectory) throws
        -> AttacheError.Code?
    {
        try write(sealed, to: directory.file("damaged"))
        let code = sealErrorCode {
            try Unsealer(scheme: .streamGCM, key: key).unseal(fileAt: directory.file("damaged"), to: directory.file("out"))
        }
        #expect(!exists(directory.file("out")))
        return code
    }

    @Test(arguments: [
        0, 1, segment - 1, segment, segment + 1, 5 * segment + 3, run - 1, run, run + 1, 2 * run,
        3 * run + segment + 17, 40 * segment + 12_345,
    ])
    func sealsTheSameBytesAsTheReaderAndOpensThem(count: Int) throws {
        let directory = TemporaryDirectory()
        let plaintext = patternBytes(count, seed: UInt32(count % 1000) + 3)
        try Self.write(plaintext, to: directory.file("plain"))
        let key = AttachmentKey.random(for: .streamGCM)
        let salt = patternBytes(32, seed: 9)
        let prefix = patternBytes(7, seed: 10)
        let payload = try Sealer(scheme: .streamGCM, key: key)
            .seal(try FileSource(path: directory.file("plain")), salt: salt, noncePrefix: prefix)

        try payload.write(toFile: directory.file("sealed"))
        let sealed = try Self.contents(directory.file("sealed"))
        #expect(sealed.count == Int(payload.byteCount))
        #expect(sealed == (try readAll(payload.makeReader())))

        try Unsealer(scheme: .streamGCM, key: key).unseal(fileAt: directory.file("sealed"), to: directory.file("back"))
        #expect(try Self.contents(directory.file("back")) == plaintext)
    }

    @Test func sealsWithAFreshHeaderEachTime() throws {
        let directory = TemporaryDirectory()
        let key = try Self.sealedFile(patternBytes(2 * Self.run + 5), in: directory)
        let payload = try Sealer(scheme: .streamGCM, key: key).seal(try FileSource(path: directory.file("plain")))
        try payload.write(toFile: directory.file("again"))
        #expect(try Self.contents(directory.file("again")) != (try Self.contents(directory.file("sealed"))))
    }

    // 41 segments: several runs whatever the run length, the last segment 100 bytes.
    static let manySegments = 40 * segment + 100

    @Test(arguments: [
        // A ciphertext byte and a tag byte in the first run, a byte in a later run, the last byte.
        60 + 10, 60 + StreamGCM.segmentCount - 1, 60 + 13 * StreamGCM.segmentCount + 7, -1,
    ])
    func detectsAModifiedByte(offset: Int) throws {
        let directory = TemporaryDirectory()
        let key = try Self.sealedFile(patternBytes(Self.manySegments), in: directory)
        var sealed = try Self.contents(directory.file("sealed"))
        sealed[offset >= 0 ? offset : sealed.count - 1] ^= 0x20
        #expect(try Self.openCode(sealed, key, in: directory) == .authenticationFailed)
    }

    @Test(arguments: [1, 12, 13, 38])
    func detectsTruncationAtASegmentBoundary(keptSegments: Int) throws {
        let directory = TemporaryDirectory()
        let key = try Self.sealedFile(patternBytes(Self.manySegments), in: directory)
        let sealed = try Self.contents(directory.file("sealed"))
        let cut = Array(sealed[..<(60 + keptSegments * StreamGCM.segmentCount)])
        #expect(try Self.openCode(cut, key, in: directory) == .sealedDataTruncated)
    }

    @Test func detectsTruncationInsideTheLastSegment() throws {
        let directory = TemporaryDirectory()
        let key = try Self.sealedFile(patternBytes(Self.manySegments), in: directory)
        let sealed = try Self.contents(directory.file("sealed"))
        // The last segment holds 100 + 16 bytes: cut to 26 it still looks like a (forged) segment;
        // cut below a tag's length it cannot be one.
        #expect(try Self.openCode(Array(sealed.dropLast(90)), key, in: directory) == .authenticationFailed)
        #expect(try Self.openCode(Array(sealed.dropLast(110)), key, in: directory) == .sealedDataTruncated)
    }

    @Test func detectsSegmentsSwappedAcrossRuns() throws {
        let directory = TemporaryDirectory()
        let key = try Self.sealedFile(patternBytes(Self.manySegments), in: directory)
        var sealed = try Self.contents(directory.file("sealed"))
        let a = 60 + 2 * StreamGCM.segmentCount
        let b = 60 + 20 * StreamGCM.segmentCount
        let first = Array(sealed[a..<(a + StreamGCM.segmentCount)])
        sealed.replaceSubrange(a..<(a + StreamGCM.segmentCount), with: sealed[b..<(b + StreamGCM.segmentCount)])
        sealed.replaceSubrange(b..<(b + StreamGCM.segmentCount), with: first)
        #expect(try Self.openCode(sealed, key, in: directory) == .sealedSegmentMisplaced)
    }

    @Test func detectsAWrongKeyAndAWrongHeader() throws {
        let directory = TemporaryDirectory()
        _ = try Self.sealedFile(patternBytes(2 * Self.run), in: directory)
        let sealed = try Self.contents(directory.file("sealed"))
        #expect(try Self.openCode(sealed, .random(for: .streamGCM), in: directory) == .invalidKey)
        var header = sealed
        header[4] = 2
        #expect(try Self.openCode(header, .random(for: .streamGCM), in: directory) == .sealedHeaderInvalid)
    }

    @Test func reportsTheFirstDamagedSegmentWhenSeveralAre() throws {
        let directory = TemporaryDirectory()
        let key = try Self.sealedFile(patternBytes(Self.manySegments), in: directory)
        var sealed = try Self.contents(directory.file("sealed"))
        // Segment 30 is cut out (misplaced from there on); segment 3 is modified first in the file.
        sealed.removeSubrange((60 + 30 * StreamGCM.segmentCount)..<(60 + 31 * StreamGCM.segmentCount))
        sealed[60 + 3 * StreamGCM.segmentCount + 1] ^= 1
        try Self.write(sealed, to: directory.file("damaged"))
        do {
            try Unsealer(scheme: .streamGCM, key: key).unseal(fileAt: directory.file("damaged"), to: directory.file("out"))
            Issue.record("a damaged file opened")
        } catch let error as AttacheError {
            #expect(error.code == .authenticationFailed)
            #expect(error.message.contains("segment 3 "))
        }
    }

    /// The plaintext file is cut, extended or rewritten after its ``FileSource`` recorded it, as when
    /// another program changes it while it is being sealed.
    @Test(arguments: ["shrinks", "grows", "is rewritten"])
    func refusesAPlaintextFileThatChanges(change: String) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("plain")
        try Self.write(patternBytes(3 * Self.run + 11), to: path)
        let source = try FileSource(path: path)
        switch change {
        case "shrinks":
            #expect(truncate(path, off_t(Self.run + 5)) == 0)
        case "grows":
            let handle = try #require(FileHandle(forWritingAtPath: path))
            handle.seekToEndOfFile()
            handle.write(Data([1, 2, 3]))
            handle.closeFile()
        default:
            var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        }
        let payload = try Sealer(scheme: .streamGCM, key: .random(for: .streamGCM)).seal(source)
        #expect(sealErrorCode { try payload.write(toFile: directory.file("sealed")) } == .fileChanged)
        #expect(!Self.exists(directory.file("sealed")))
    }

    @Test func reportsAnUnwritableOutput() throws {
        let directory = TemporaryDirectory()
        try Self.write(patternBytes(100), to: directory.file("plain"))
        let payload = try Sealer(scheme: .streamGCM, key: .random(for: .streamGCM))
            .seal(try FileSource(path: directory.file("plain")))
        #expect(sealErrorCode { try payload.write(toFile: directory.file("missing/sealed")) } == .fileUnwritable)
    }
}
