import AttacheCLI
import Foundation
import AttacheTestSupport
import Testing

import Attache

/// One exit-status table for every command (docs/EXIT-STATUS.md): each error code maps to exactly one
/// status, the page and the code agree, and the built `attache` exits with the row's status.
@Suite("exit statuses")
struct ExitStatusTests {
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// The raw values of every `AttacheError.Code` declared in the sources.
    static func declaredCodes() throws -> Set<String> {
        let pattern = try NSRegularExpression(pattern: #"static let \w+ = (?:AttacheError\.)?(?:Code|Self)\("([a-z0-9-]+)"\)"#)
        var codes: Set<String> = []
        let sources = packageRoot.appendingPathComponent("Sources")
        let walker = FileManager.default.enumerator(atPath: sources.path)
        while let path = walker?.nextObject() as? String {
            guard path.hasSuffix(".swift") else { continue }
            let text = try String(contentsOf: sources.appendingPathComponent(path), encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                codes.insert(String(text[Range(match.range(at: 1), in: text)!]))
            }
        }
        return codes
    }

    /// `code → status` from the error-code table of docs/EXIT-STATUS.md.
    static func documentedRows() throws -> [String: Int32] {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("docs/EXIT-STATUS.md"), encoding: .utf8)
        var rows: [String: Int32] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2, let status = Int32(cells[1]) else { continue }
            #expect(rows[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] == nil, "\(line) twice")
            rows[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = status
        }
        return rows
    }

    @Test("every error code declared in the sources has exactly one row")
    func everyCodeHasOneRow() throws {
        let codes = ExitStatus.table.map(\.code.rawValue)
        #expect(Set(codes).count == codes.count, "a code with two rows")
        let declared = try Self.declaredCodes()
        #expect(declared.count >= 28)
        #expect(Set(codes) == declared)
    }

    @Test("the table row and docs/EXIT-STATUS.md agree", arguments: ExitStatus.table.map { ($0.code.rawValue, $0.status) })
    func row(_ code: String, _ status: Int32) throws {
        let error = AttacheError(AttacheError.Code(code), stage: .read, "test")
        #expect(ExitStatus.forError(error) == status)
        #expect([64, 65, 66, 69, 70, 74, 75, 76, 77, 78, 79, 80, 130].contains(status))
        #expect(try Self.documentedRows()[code] == status)
    }

    @Test("the documentation lists no code the table does not")
    func noExtraDocumentedRows() throws {
        #expect(Set(try Self.documentedRows().keys) == Set(ExitStatus.table.map(\.code.rawValue)))
    }

    @Test("an unknown code is a bug (70), not a silent 1")
    func unknownCode() {
        #expect(ExitStatus.forError(AttacheError(AttacheError.Code("never-declared"), stage: .read, "x")) == 70)
    }

    // MARK: End to end

    /// A command line that ends in one row of the table.
    struct Scenario: Sendable, CustomTestStringConvertible {
        var code: String
        var status: Int32
        var testDescription: String { "\(code) → \(status)" }
    }

    static let scenarios: [Scenario] = [
        Scenario(code: "invalid-argument", status: 64),
        Scenario(code: "file-not-found", status: 66),
        Scenario(code: "sealed-header-invalid", status: 65),
        Scenario(code: "sealed-data-truncated", status: 65),
        Scenario(code: "sealed-segment-misplaced", status: 65),
        Scenario(code: "authentication-failed", status: 65),
        Scenario(code: "invalid-key", status: 65),
        Scenario(code: "base64-invalid", status: 65),
        Scenario(code: "unsupported-input", status: 65),
        Scenario(code: "file-unwritable", status: 74),
        Scenario(code: "connection-failed", status: 69),
        Scenario(code: "retries-exhausted", status: 75),
        Scenario(code: "bad-response", status: 76),
        Scenario(code: "rejected", status: 77),
        Scenario(code: "config-invalid", status: 78),
    ]

    @Test("attache exits with the row's status", arguments: scenarios)
    func endToEnd(_ scenario: Scenario) async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let result = try await Self.run(scenario.code, in: folder)
        #expect(result.status == scenario.status, "\(result.standardError)")
        #expect(result.standardError.contains("[\(scenario.code)]"), "\(result.standardError)")
        #expect(ExitStatus.table.first { $0.code.rawValue == scenario.code }?.status == scenario.status)
    }

    @Test("stream-gcm input of 1 to 4 bytes is header invalid, as docs/FORMAT.md says", arguments: 1...4)
    func shortInputIsHeaderInvalid(_ count: Int) async throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("short", Array("ATSG".utf8).prefix(count))
        let key = try await folder.newKey()
        let child = try ChildProcess(
            executable: try attacheBinary(), arguments: ["decrypt", folder.path("short"), "-o", folder.path("out"), "--key-file", key])
        #expect(try await child.wait(upTo: 30) == 65)
        #expect(child.standardError.contains("[sealed-header-invalid]"), "\(child.standardError)")
    }

    @Test("a refused connection is connection-failed (69) after every retry, for upload and download")
    func refusedConnection() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("a.bin", [1, 2, 3])
        let port = try refusedPort()
        let upload = try ChildProcess(
            executable: try attacheBinary(),
            arguments: ["upload", folder.path("a.bin"), "--url", "http://127.0.0.1:\(port)/upload", "--attempts", "3",
                        "--no-progress", "--json"])
        #expect(try await upload.wait(upTo: 60) == 69, "\(upload.standardError)")
        #expect(upload.standardOutput.contains(#""code":"connection-failed""#))
        let download = try ChildProcess(
            executable: try attacheBinary(),
            arguments: ["download", "http://127.0.0.1:\(port)/files/x", "-o", folder.path("x"), "--attempts", "3", "--no-progress"])
        #expect(try await download.wait(upTo: 60) == 69, "\(download.standardError)")
        #expect(download.standardError.contains("[connection-failed]"), "\(download.standardError)")
    }

    /// How a command ended.
    struct Finished: Sendable {
        var status: Int32?
        var standardOutput: String
        var standardError: String

        /// Runs `attache` with `arguments` in this process, or `executable` as a process of its own, and
        /// waits for it.
        init(_ arguments: [String], executable: String? = nil) async throws {
            guard let executable else {
                let result = await attache(arguments)
                (status, standardOutput, standardError) = (result.status, result.standardOutput, result.standardError)
                return
            }
            let child = try ChildProcess(executable: executable, arguments: arguments)
            status = try await child.wait(upTo: 60)
            standardOutput = child.standardOutput
            standardError = child.standardError
        }
    }

    /// Runs the command line that ends in `code`.
    static func run(_ code: String, in folder: Folder) async throws -> Finished {
        func decrypt(_ sealed: [UInt8], key: String, base64: Bool = false) async throws -> Finished {
            try folder.write("sealed", sealed)
            return try await Finished(
                ["decrypt", folder.path("sealed"), "-o", folder.path("out"), "--key-file", key] + (base64 ? ["--base64"] : []))
        }
        @Sendable func uploadArguments(_ url: String) -> [String] {
            ["upload", folder.path("plain.bin"), "--url", url, "--attempts", "2", "--no-progress"]
        }
        func upload(faults: String) async throws -> Finished {
            try await LiveServer.with(faults: faults) { server in
                try await Finished(uploadArguments(server.uploadURL))
            }
        }
        try folder.write("plain.bin", (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) })
        switch code {
        case "invalid-argument":
            return try await Finished(uploadArguments("ftp://127.0.0.1/upload"))
        case "file-not-found":
            let key = try await folder.newKey()
            return try await Finished(["decrypt", folder.path("missing"), "-o", folder.path("out"), "--key-file", key])
        case "sealed-header-invalid":
            return try await decrypt(try folder.read("plain.bin"), key: try await folder.newKey())
        case "sealed-data-truncated":
            let (sealed, key) = try await folder.sealed()
            // Cut after segment 0: the stream ends at a segment boundary without its final segment.
            return try await decrypt(Array(sealed.prefix(60 + 65_552)), key: key)
        case "sealed-segment-misplaced":
            // Segments 0 and 1 (65,552 bytes each after the 60-byte header) swapped.
            let (sealed, key) = try await folder.sealed()
            let first = sealed[60..<65_612], second = sealed[65_612..<131_164]
            return try await decrypt(Array(sealed[..<60] + second + first + sealed[131_164...]), key: key)
        case "authentication-failed":
            var (sealed, key) = try await folder.sealed()
            sealed[1000] ^= 0x01
            return try await decrypt(sealed, key: key)
        case "invalid-key":
            let (sealed, _) = try await folder.sealed()
            return try await decrypt(sealed, key: try await folder.newKey(name: "other-key"))
        case "base64-invalid":
            return try await decrypt(Array("not base64!".utf8), key: try await folder.newKey(), base64: true)
        case "unsupported-input":
            return try await Finished(["recompress", folder.path("plain.bin"), "-o", folder.path("out.jpg")])
        case "file-unwritable":
            let (sealed, key) = try await folder.sealed()
            try folder.write("sealed", sealed)
            return try await Finished(
                ["decrypt", folder.path("sealed"), "-o", folder.path("no-such-folder/out"), "--key-file", key])
        case "connection-failed":
            return try await Finished(uploadArguments("http://127.0.0.1:\(try refusedPort())/upload"))
        case "retries-exhausted":
            return try await upload(faults: "503")
        case "bad-response":
            return try await upload(faults: "garbage")
        case "rejected":
            return try await upload(faults: "business")
        case "config-invalid":
            try folder.write("config.toml", Array("[endpoints.files]\nurl = 42\n".utf8))
            return try await Finished(
                ["upload", folder.path("plain.bin"), "--config", folder.path("config.toml"), "--endpoint", "files"])
        default:
            throw TestFailure("no scenario for \(code)")
        }
    }
}

/// A temporary folder for one test's files.
struct Folder: Sendable {
    let root: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("attache-exit-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { root + "/" + name }

    func write<Bytes: Sequence<UInt8>>(_ name: String, _ bytes: Bytes) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path(name)))
    }

    func read(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path(name)))) }

    /// A fresh key file made by `attache encrypt --new-key`; its path.
    func newKey(name: String = "key") async throws -> String {
        try write("key-seed", [0])
        let result = await attache(
            ["encrypt", path("key-seed"), "-o", path("key-seed.sealed"), "--key-file", path(name), "--new-key"])
        try #require(result.status == 0, "\(result.standardError)")
        return path(name)
    }

    /// `plain.bin` sealed with stream-gcm under a new key: the sealed bytes and the key file.
    func sealed() async throws -> ([UInt8], String) {
        let key = try await newKey(name: "sealing-key")
        let result = await attache(["encrypt", path("plain.bin"), "-o", path("plain.sealed"), "--key-file", key])
        try #require(result.status == 0, "\(result.standardError)")
        return (try read("plain.sealed"), key)
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }
}
