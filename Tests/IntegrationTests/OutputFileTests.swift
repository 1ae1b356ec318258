import Attache
import Foundation
import AttacheTestSupport
import Testing

/// `-o` of the built commands (`decrypt`, `encrypt`, `recompress`, `download`): `-` is standard output,
/// an existing FIFO or a link to one is written in place and stays what it was.
@Suite("output files")
struct OutputFileTests {
    /// The file type at `path` without following a link.
    static func type(_ path: String) -> mode_t {
        var info = stat()
        guard lstat(path, &info) == 0 else { return 0 }
        return info.st_mode & S_IFMT
    }

    /// Runs a shell command line and returns its status and standard error.
    static func shell(_ script: String) async throws -> (status: Int32?, standardError: String) {
        let child = try ChildProcess(executable: "/bin/sh", arguments: ["-c", script])
        let status = try await child.wait(upTo: 60)
        return (status, child.standardError)
    }

    /// `cat FIFO > OUT` in its own process: it opens the FIFO when a writer does. `finish()` ends it even
    /// when nothing ever wrote (the old behaviour this suite guards against), by opening and closing
    /// the FIFO for writing itself.
    struct FIFOCopy {
        let fifo: String
        let child: ChildProcess

        init(_ fifo: String, to output: String) throws {
            self.fifo = fifo
            #expect(mkfifo(fifo, 0o600) == 0)
            child = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "exec cat \(fifo) > \(output)"])
        }

        func finish() async throws {
            let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer >= 0 { close(writer) }
            #expect(try await child.wait(upTo: 30) == 0)
        }
    }

    /// What `attache decrypt -o /dev/stdout` did as root: renamed a new file over the link. Here the link
    /// points at a FIFO in the test's folder, read by `cat`.
    @Test func decryptIntoALinkToAFIFOWritesThroughTheLink() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let plaintext = randomBytes(400_000)
        try folder.write("plain.bin", plaintext)
        let (_, key) = try await folder.sealed()
        let copy = try FIFOCopy(folder.path("fifo"), to: folder.path("received"))
        #expect(symlink(folder.path("fifo"), folder.path("stdout")) == 0)

        let result = try await ExitStatusTests.Finished(
            ["decrypt", folder.path("plain.sealed"), "-o", folder.path("stdout"), "--key-file", key])
        try await copy.finish()
        #expect(result.status == 0, "\(result.standardError)")
        #expect(Self.type(folder.path("stdout")) == S_IFLNK, "the link was replaced")
        #expect(Self.type(folder.path("fifo")) == S_IFIFO)
        #expect(try folder.read("received") == plaintext)
    }

    @Test func encryptAndDecryptWithDashUseStandardOutput() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let plaintext = randomBytes(300_000)
        try folder.write("plain.bin", plaintext)
        let key = try await folder.newKey()
        let attache = try attacheBinary()

        let sealed = try await Self.shell(
            "\(attache) encrypt \(folder.path("plain.bin")) -o - --key-file \(key) | cat > \(folder.path("piped.sealed"))")
        #expect(sealed.status == 0, "\(sealed.standardError)")
        // The summary goes to standard error, so that standard output holds only the sealed bytes.
        #expect(sealed.standardError.contains("plaintext 300000 bytes"), "\(sealed.standardError)")

        let opened = try await Self.shell(
            "\(attache) decrypt \(folder.path("piped.sealed")) -o - --key-file \(key) | cat > \(folder.path("piped.plain"))")
        #expect(opened.status == 0, "\(opened.standardError)")
        #expect(try folder.read("piped.plain") == plaintext)
        #expect(!FileManager.default.fileExists(atPath: "-"))
    }

    @Test func recompressWithDashWritesTheImageToStandardOutput() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let attache = try attacheBinary()
        let source = ExitStatusTests.packageRoot.appendingPathComponent("Samples/photo.jpg").path
        let result = try await Self.shell(
            "\(attache) recompress \(source) -o - --json | cat > \(folder.path("out.jpg"))")
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.contains("\"mimeType\""), "the JSON summary goes to standard error")
        #expect(Array(try folder.read("out.jpg").prefix(3)) == [0xFF, 0xD8, 0xFF])
    }

    @Test func downloadToStandardOutputAndToALinkToAFIFO() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let bytes = randomBytes(250_000)
        try folder.write("payload.bin", bytes)
        let attache = try attacheBinary()
        try await LiveServer.with { server in
            let receipt = try await server.pipeline().send(Attachment(path: folder.path("payload.bin")))
            let url = "http://127.0.0.1:\(server.port)/files/\(try #require(receipt.fileId))"

            let piped = try await Self.shell("\(attache) download \(url) -o - --no-progress | cat > \(folder.path("piped"))")
            #expect(piped.status == 0, "\(piped.standardError)")
            #expect(piped.standardError.contains("sha256"), "the summary goes to standard error")
            #expect(try folder.read("piped") == bytes)

            let copy = try FIFOCopy(folder.path("fifo"), to: folder.path("received"))
            #expect(symlink(folder.path("fifo"), folder.path("link")) == 0)
            let linked = try await ExitStatusTests.Finished(["download", url, "-o", folder.path("link"), "--no-progress"])
            try await copy.finish()
            #expect(linked.status == 0, "\(linked.standardError)")
            #expect(Self.type(folder.path("link")) == S_IFLNK)
            #expect(try folder.read("received") == bytes)
            #expect(!FileManager.default.fileExists(atPath: folder.path("link.part")))

            let resumed = try await ExitStatusTests.Finished(["download", url, "-o", "-", "--resume"])
            #expect(resumed.status == 64, "\(resumed.standardError)")
        }
    }
}
