import Foundation
import AttacheTestSupport
import Testing

/// How the built `attache` reads its command line and what it writes to a terminal
/// (docs/EXIT-STATUS.md): words starting with `-`, `--`, help flags, and escaped control characters.
@Suite("command line")
struct CommandLineTests {
    static var photo: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Samples/photo.jpg").path
    }

    /// Runs `attache` with `arguments` in `directory`.
    static func attache(_ arguments: [String], in directory: String) async throws -> ExitStatusTests.Finished {
        try await ExitStatusTests.Finished(["-C", directory, try attacheBinary()] + arguments, executable: "/usr/bin/env")
    }

    /// Bytes a terminal acts on: C0 controls (but the line feeds between lines), DEL, and C1 in UTF-8.
    static func holdsControlBytes(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.contains { ($0 < 0x20 && $0 != 0x0A) || $0 == 0x7F }
            || zip(bytes, bytes.dropFirst()).contains { $0 == 0xC2 && $1 < 0xA0 }
    }

    static let commands: [[String]] = [
        ["upload", "--url", "http://127.0.0.1:9/upload"], ["batch", "--url", "http://127.0.0.1:9/upload"],
        ["download", "http://127.0.0.1:9/x", "-o", "out"], ["detect"], ["detect", "--json"],
        ["decrypt", "-o", "out", "--key-env", "K"], ["encrypt", "-o", "out", "--key-env", "K"], ["recompress", "-o", "out"],
    ]

    @Test("a file name starting with '-' and holding an 'h' is an unknown option (64), not a help request", arguments: commands)
    func dashNameIsNotHelp(_ command: [String]) async throws {
        let folder = try Folder()
        defer { folder.remove() }
        for word in ["-photo.jpg", "-h.jpg", "-vh"] {
            let result = try await Self.attache(command + [word], in: folder.root)
            #expect(result.status == 64, "\(command) \(word): \(result.standardOutput)")
            #expect(!result.standardOutput.contains("USAGE"), "\(command) \(word) printed the help")
            #expect(result.standardError.contains("Unknown option '\(word)'"), "\(result.standardError)")
        }
    }

    @Test("help is printed for -h, --help, -help and `help`", arguments: [
        ["upload", "-h"], ["upload", "--help"], ["upload", "-help"], ["help", "upload"], ["detect", "-h"],
        ["decrypt", "--help"], ["--help"],
    ])
    func helpFlags(_ arguments: [String]) async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let result = try await Self.attache(arguments, in: folder.root)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("USAGE: attache"))
    }

    @Test("after `--` and as ./-name, a name starting with '-' is a file: detect, encrypt and upload")
    func dashNamesAfterDoubleDash() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        try FileManager.default.copyItem(atPath: Self.photo, toPath: folder.path("-photo.jpg"))

        for arguments in [["detect", "--", "-photo.jpg"], ["detect", "./-photo.jpg"], ["detect", "--json", "--", "-photo.jpg"]] {
            let detect = try await Self.attache(arguments, in: folder.root)
            #expect(detect.status == 0, "\(arguments): \(detect.standardError)")
            #expect(detect.standardOutput.contains("image/jpeg"), "\(arguments)")
        }
        let encrypt = try await Self.attache(
            ["encrypt", "-o", "sealed", "--key-file", "key", "--new-key", "--", "-photo.jpg"], in: folder.root)
        #expect(encrypt.status == 0, "\(encrypt.standardError)")

        try await LiveServer.with { server in
            for arguments in [["--", "-photo.jpg"], ["./-photo.jpg"]] {
                let upload = try await Self.attache(
                    ["upload", "--url", server.uploadURL, "--no-progress", "--scheme", "none"] + arguments, in: folder.root)
                #expect(upload.status == 0, "\(arguments): \(upload.standardError)")
                #expect(upload.standardOutput.contains("-photo.jpg: stored"), "\(upload.standardOutput)")
            }
            #expect(try await server.stats().uploads == 2)
        }
    }

    @Test("control characters in file names are escaped in detect's lines and errors; --json keeps them exactly")
    func escapedFileNames() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let name = "e\u{1B}[31mvil\u{9B}2J\u{7}\t\u{202E}.jpg"
        try FileManager.default.copyItem(atPath: Self.photo, toPath: folder.path(name))

        let text = try await Self.attache(["detect", name, "missing\u{1B}]0;x\u{7}"], in: folder.root)
        #expect(text.status == 66)
        #expect(text.standardOutput.contains(#"e\x1b[31mvil\u{9b}2J\x07\t\u{202e}.jpg: image/jpeg (image)"#), "\(text.standardOutput)")
        #expect(text.standardError.contains(#"missing\x1b]0;x\x07"#), "\(text.standardError)")
        #expect(!Self.holdsControlBytes(text.standardOutput))
        #expect(!Self.holdsControlBytes(text.standardError))

        let json = try await Self.attache(["detect", "--json", name], in: folder.root)
        #expect(json.status == 0)
        #expect(!Self.holdsControlBytes(json.standardOutput))
        let object = try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
        #expect(object?["path"] as? String == name)
    }

    @Test("a server message with escape sequences is escaped in the error line, exact in --json")
    func escapedServerMessage() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("a.bin", [1, 2, 3])
        let message = "quota\u{1B}]0;owned\u{7}\u{9B}2Jx"
        try await LiveServer.with(faults: "business:message=quota%1B%5D0%3Bowned%07%C2%9B2Jx") { server in
            // --verbose: the log lines quote the answer too.
            let plain = try await Self.attache(
                ["upload", "a.bin", "--url", server.uploadURL, "--no-progress", "--verbose"], in: folder.root)
            #expect(plain.status == 77)
            #expect(plain.standardError.contains(#"quota\x1b]0;owned\x07\u{9b}2Jx"#), "\(plain.standardError)")
            #expect(plain.standardError.contains("rejected: "), "the log line is there: \(plain.standardError)")
            #expect(!Self.holdsControlBytes(plain.standardError))

            let json = try await Self.attache(["upload", "a.bin", "--url", server.uploadURL, "--json"], in: folder.root)
            #expect(json.status == 77)
            #expect(!Self.holdsControlBytes(json.standardOutput))
            let line = try #require(json.standardOutput.split(separator: "\n").first)
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect((object?["message"] as? String)?.contains(message) == true, "\(line)")
        }
    }

    @Test("the text receipts leave the seal key out unless --show-keys; --json carries it")
    func textReceiptsLeaveTheKeyOut() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("a.bin", [1, 2, 3, 4])
        try await LiveServer.with { server in
            let plain = try await Self.attache(["upload", "a.bin", "--url", server.uploadURL, "--no-progress"], in: folder.root)
            #expect(plain.status == 0)
            #expect(plain.standardOutput.contains("a.bin: stored"), "\(plain.standardOutput)")
            #expect(!plain.standardOutput.contains("key="), "\(plain.standardOutput)")
            #expect(plain.standardError.contains("keys that open these files are not shown"), "\(plain.standardError)")

            let shown = try await Self.attache(
                ["upload", "a.bin", "--url", server.uploadURL, "--no-progress", "--show-keys"], in: folder.root)
            #expect(shown.status == 0)
            let key = try #require(shown.standardOutput.split(separator: " ").first { $0.hasPrefix("key=") })
            #expect(key.count > 40, "a base64 256-bit key: \(key)")
            #expect(!shown.standardError.contains("not shown"))

            let json = try await Self.attache(["upload", "a.bin", "--url", server.uploadURL, "--json"], in: folder.root)
            let line = try #require(json.standardOutput.split(separator: "\n").first)
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            let seal = object?["seal"] as? [String: Any]
            #expect((seal?["key"] as? String)?.isEmpty == false, "\(line)")
        }
    }

    @Test("batch's plain lines escape file names")
    func escapedBatchLines() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        try FileManager.default.createDirectory(atPath: folder.path("files"), withIntermediateDirectories: true)
        try folder.write("files/bad\u{1B}[2Jname\n.bin", [1, 2, 3])
        try await LiveServer.with { server in
            let batch = try await Self.attache(
                ["batch", "files", "--url", server.uploadURL, "--journal", "journal.sqlite", "--no-progress"], in: folder.root)
            // Sent, or refused for its name (multipart filename rules): either way the line names it escaped.
            #expect(batch.status == 0 || batch.status == 3, "\(batch.standardError)")
            let lines = batch.standardOutput.split(separator: "\n").filter { $0.hasPrefix("sent ") || $0.hasPrefix("failed ") }
            #expect(lines.count == 1 && lines[0].contains(#"files/bad\x1b[2Jname\n.bin"#), "\(batch.standardOutput)")
            #expect(!Self.holdsControlBytes(batch.standardOutput))
        }
    }
}
