import Foundation
import Synchronization
import Testing
@testable import Attache
@testable import AttacheCore

/// `-o` destinations (``OutputDestination``): a FIFO, a device or a link to one is written in place and
/// stays what it was; a regular file is replaced only by a complete file.
@Suite struct OutputDestinationTests {
    static func bytes(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) } }

    /// The file type at `path` without following a link (`S_IFIFO`, `S_IFLNK`, ...).
    static func type(_ path: String) -> mode_t {
        var info = stat()
        guard lstat(path, &info) == 0 else { return 0 }
        return info.st_mode & S_IFMT
    }

    static func inode(_ path: String) -> ino_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_ino : 0
    }

    /// Reads everything written to the FIFO at `path` on a thread of its own; `finish()` returns it.
    final class FIFOReader: Sendable {
        private let path: String
        private let received = Mutex<[UInt8]?>(nil)
        private let done = DispatchSemaphore(value: 0)

        init(_ path: String) {
            self.path = path
            Thread.detachNewThread { [self] in
                // Blocks until a writer opens the FIFO.
                let descriptor = open(path, O_RDONLY | O_CLOEXEC)
                var bytes: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while descriptor >= 0 {
                    let n = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
                    if n < 0, errno == EINTR { continue }
                    guard n > 0 else { break }
                    bytes += buffer[..<n]
                }
                if descriptor >= 0 { close(descriptor) }
                received.withLock { $0 = bytes }
                done.signal()
            }
        }

        /// What arrived, once the writer closed the FIFO. If nothing ever opened it for writing (the
        /// bug this guards against), opening and closing it here ends the reader with nothing read.
        func finish() -> [UInt8] {
            let writer = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer >= 0 { close(writer) }
            done.wait()
            return received.withLock { $0 ?? [] }
        }
    }

    @Test func aFIFOIsWrittenInPlaceAndStaysAFIFO() throws {
        let directory = TemporaryDirectory()
        let fifo = directory.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = FIFOReader(fifo)
        let payload = Self.bytes(700_000)  // more than a pipe holds, and than one write-behind buffer
        let destination = OutputDestination(path: fifo, stage: .seal)
        #expect(destination.kind == .inPlace)
        #expect(!destination.allowsPositionedWrites)
        try destination.write(DataSource(payload).makeReader())
        #expect(reader.finish() == payload)
        #expect(Self.type(fifo) == S_IFIFO)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["fifo"])
    }

    @Test func aLinkToDevNullStaysALink() throws {
        let directory = TemporaryDirectory()
        let link = directory.file("null")
        #expect(symlink("/dev/null", link) == 0)
        let destination = OutputDestination(path: link, stage: .transform)
        #expect(destination.kind == .inPlace)
        try destination.write(Self.bytes(1000))
        #expect(Self.type(link) == S_IFLNK)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == "/dev/null")
    }

    /// `attache decrypt -o /dev/stdout` replaced the `/dev/stdout` link with a plain file: the same with
    /// a link to a FIFO, through the `stream-gcm` path that seals and opens on every core.
    @Test func aLinkToAFIFOStaysALinkAndReceivesThePlaintext() throws {
        let directory = TemporaryDirectory()
        let plaintext = Self.bytes(1_000_000)
        try Data(plaintext).write(to: URL(fileURLWithPath: directory.file("plain")))
        let key = AttachmentKey.random(for: .streamGCM)
        let payload = try Sealer(scheme: .streamGCM, key: key).seal(try FileSource(path: directory.file("plain")))
        try payload.write(toFile: directory.file("sealed"))

        let fifo = directory.file("fifo")
        let link = directory.file("stdout")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(symlink(fifo, link) == 0)
        let reader = FIFOReader(fifo)
        try Unsealer(scheme: .streamGCM, key: key).unseal(fileAt: directory.file("sealed"), to: link)
        #expect(reader.finish() == plaintext)
        #expect(Self.type(link) == S_IFLNK)
        #expect(Self.type(fifo) == S_IFIFO)

        // Sealing into the link gives the same bytes as sealing into a regular file.
        let sealedReader = FIFOReader(fifo)
        try payload.write(toFile: link)
        let streamed = sealedReader.finish()
        #expect(streamed == [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory.file("sealed")))))
        #expect(Self.type(link) == S_IFLNK)
    }

    @Test func aRegularFileIsReplacedByRenameAndOnlyWhenComplete() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("out")
        try Data("old".utf8).write(to: URL(fileURLWithPath: path))
        let before = Self.inode(path)
        let destination = OutputDestination(path: path, stage: .seal)
        #expect(destination.kind == .replaced)
        #expect(destination.allowsPositionedWrites)

        struct Failed: Error {}
        #expect(throws: Failed.self) {
            try destination.write { descriptor in
                _ = write(descriptor, "partial", 7)
                throw Failed()
            }
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "old")
        #expect(Self.inode(path) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["out"])

        try destination.write(Array("new".utf8))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new")
        #expect(Self.inode(path) != before, "written beside it and renamed, not truncated in place")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["out"])
    }

    @Test func aTamperedDecryptionLeavesTheOldFileUntouched() throws {
        let directory = TemporaryDirectory()
        let plaintext = Self.bytes(300_000)
        try Data(plaintext).write(to: URL(fileURLWithPath: directory.file("plain")))
        let key = AttachmentKey.random(for: .streamGCM)
        let payload = try Sealer(scheme: .streamGCM, key: key).seal(try FileSource(path: directory.file("plain")))
        try payload.write(toFile: directory.file("sealed"))
        var sealed = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory.file("sealed"))))
        sealed[200_000] ^= 1
        try Data(sealed).write(to: URL(fileURLWithPath: directory.file("sealed")))
        try Data("old".utf8).write(to: URL(fileURLWithPath: directory.file("out")))

        let code = sealErrorCode {
            try Unsealer(scheme: .streamGCM, key: key).unseal(fileAt: directory.file("sealed"), to: directory.file("out"))
        }
        #expect(code == .authenticationFailed)
        #expect(try String(contentsOfFile: directory.file("out"), encoding: .utf8) == "old")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory.path)) == ["plain", "sealed", "out"])
    }

    @Test func aDashIsStandardOutputAndAMissingNameIsReplaced() {
        #expect(OutputDestination(path: "-", stage: .seal).kind == .standardOutput)
        #expect(OutputDestination(path: "-", stage: .seal).displayName == "standard output")
        #expect(OutputDestination(path: "/nonexistent-folder/out", stage: .seal).kind == .replaced)
        #expect(OutputDestination(path: "./-", stage: .seal).kind == .replaced)
    }
}
