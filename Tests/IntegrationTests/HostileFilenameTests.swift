import Attache
import AttacheServer
import Foundation
import AttacheTestSupport
import Testing

/// Names that broke on the wire, sent through the real upload path (AttachmentPipeline, libcurl) to
/// four receivers that parse `multipart/form-data` each in its own way: Werkzeug, Python's `email`
/// package, PHP, and `attache-server` (Hummingbird and its own streaming reader). Each must see exactly one file
/// part, under the field name and filename Attache documents (the name itself, or its clearly
/// replaced form: see `MultipartBody.escape`), with exactly the bytes of the file.
@Suite("Hostile filenames on the wire", .serialized)
struct HostileFilenameTests {
    /// (the name given, the name every receiver must report).
    static let filenames: [(sent: String, expected: String)] = [
        ("a\\", "a%5C"),
        ("a\\\\b", "a%5C%5Cb"),
        ("end\"", "end%22"),
        ("x\";name=\"evil", "x%22;name=%22evil"),
        ("two\r\nlines.txt", "two%0D%0Alines.txt"),
        ("cr\ronly\nlf", "cr%0Donly%0Alf"),
        ("%22", "%2522"),
        ("100% sure %5C.txt", "100% sure %5C.txt"),
        ("résumé 履歴書.pdf", "résumé 履歴書.pdf"),
        ("\u{301}starts with a combining accent", "\u{301}starts with a combining accent"),
        ("  spaces around  ", "%20%20spaces around%20%20"),
        ("\u{A0}nbsp and ideographic space\u{3000}", "%C2%A0nbsp and ideographic space%E3%80%80"),
        ("C:\\Users\\me\\photo.jpg", "C:%5CUsers%5Cme%5Cphoto.jpg"),
        ("dir/name.txt", "dir%2Fname.txt"),
        ("tab\there;semi=colon", "tab%09here;semi=colon"),
        ("it's 'quoted'", "it's 'quoted'"),
        (String(repeating: "é", count: 126) + "abc", String(repeating: "é", count: 126) + "abc"),  // 255 bytes
        (String(repeating: "\\", count: 255), String(repeating: "%5C", count: 255)),
        ("emoji 👩‍👩‍👧 flag 🇫🇷.txt", "emoji 👩‍👩‍👧 flag 🇫🇷.txt"),
    ]

    /// (the form name given, the name every receiver must report), for the file part's own name.
    static let fieldNames: [(sent: String, expected: String)] = [
        ("file", "file"),
        ("up\"load\\/x", "up%22load%5C%2Fx"),
    ]

    @Test func everyReceiverSeesOneFilePartWithTheDocumentedName() async throws {
        var receivers: [ReceiverProcess] = []
        defer { for receiver in receivers { kill(receiver.process.processIdentifier, SIGKILL) } }
        for python in try ReceiverProcess.pythonsWithWerkzeug() {
            receivers.append(try await .start(
                name: "werkzeug (\(python))", [python, ReceiverProcess.scripts + "/werkzeug_receiver.py"]))
        }
        receivers.append(try await .start(
            name: "email", ["/usr/bin/python3", ReceiverProcess.scripts + "/email_receiver.py"]))
        receivers.append(try await .start(
            name: "php",
            [
                "php", "-n", "-d", "file_uploads=1", "-d", "upload_max_filesize=16M", "-d", "post_max_size=16M",
                "-S", "127.0.0.1:0", "-t", ReceiverProcess.scripts, ReceiverProcess.scripts + "/php_receiver.php",
            ]))

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-names-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        let receiverTargets = receivers.map { (name: $0.name, url: $0.uploadURL) }
        try await LiveServer.with { server in
            var targets = receiverTargets
            targets.append((name: "attache-server", url: server.uploadURL))
            var index = 0
            var seen: Set<String> = []
            defer { print("hostile names sent to: \(seen.sorted().joined(separator: ", "))") }
            for field in Self.fieldNames {
                for name in Self.filenames {
                    index += 1
                    let content = randomBytes(700 + index)
                    let path = folder + "/payload-\(index).bin"
                    try Data(content).write(to: URL(fileURLWithPath: path))
                    let digest = try await sha256Hex(content)
                    for target in targets {
                        var configuration = PipelineConfiguration(url: target.url)
                        configuration.fileFieldName = field.sent
                        configuration.seal = .none
                        configuration.connection.retry = RetryPolicy(maximumAttempts: 1)
                        let receipt = try await AttachmentPipeline(configuration: configuration)
                            .send(Attachment(path: path, filename: name.sent))
                        let report = try Self.report(from: receipt.server, attacheServer: target.name == "attache-server")
                        seen.insert(report.receiver)
                        let context = "\(target.name) [\(report.receiver)], field \(field.sent.debugDescription), filename \(name.sent.debugDescription)"
                        // Werkzeug ≥ 2.3 shows `%22` as the quote it stands for, as documented.
                        let decodesQuotes = Self.isWerkzeug23OrLater(report.receiver)
                        func expected(_ name: String) -> String {
                            decodesQuotes ? name.replacingOccurrences(of: "%22", with: "\"") : name
                        }
                        #expect(report.files.count == 1, "\(context): \(report.files.count) file parts")
                        #expect(!report.fields.contains(hexUTF8(expected(field.expected))), "\(context): the file came as a text field")
                        guard let file = report.files.first else { continue }
                        #expect(
                            file.field == hexUTF8(expected(field.expected)),
                            "\(context): field name \(textFromHex(file.field)), expected \(expected(field.expected).debugDescription)")
                        #expect(
                            file.filename == hexUTF8(expected(name.expected)),
                            "\(context): filename \(textFromHex(file.filename)), expected \(expected(name.expected).debugDescription)")
                        #expect(file.size == content.count, "\(context): size")
                        #expect(file.sha256 == digest, "\(context): content")
                    }
                }
            }
        }
        for receiver in receivers { await receiver.stop() }
        receivers = []
    }

    @Test func anEmptyFilenameIsRefusedBeforeAnythingIsSent() async throws {
        let file = try TemporaryFile(bytes: randomBytes(100))
        defer { file.remove() }
        try await LiveServer.with { server async throws in
            let error = await #expect(throws: AttacheError.self) {
                _ = try await server.pipeline().send(Attachment(path: file.path, filename: ""))
            }
            #expect(error?.code == .invalidArgument)
            #expect(error?.stage == .upload)
            #expect(try await server.stats().requests == 0)
        }
    }

    /// Whether a receiver is Werkzeug 2.3 or later (`werkzeug 3.1.8`).
    static func isWerkzeug23OrLater(_ receiver: String) -> Bool {
        guard receiver.hasPrefix("werkzeug ") else { return false }
        let version = receiver.dropFirst("werkzeug ".count).split(separator: ".").compactMap { Int($0) }
        return (version.first ?? 0, version.dropFirst().first ?? 0) >= (2, 3)
    }

    /// The receivers' report, or `attache-server`'s receipt put in the same shape.
    static func report(from data: JSONValue, attacheServer: Bool) throws -> ReceiverReport {
        guard attacheServer else {
            return try JSONDecoder().decode(ReceiverReport.self, from: JSONEncoder().encode(data))
        }
        struct Receipt: Decodable {
            struct Part: Decodable {
                var name: String
                var filename: String
                var size: Int
                var sha256: String
            }
            var parts: [Part]
            var fields: [String: JSONValue]
        }
        let receipt = try JSONDecoder().decode(Receipt.self, from: JSONEncoder().encode(data))
        return ReceiverReport(
            receiver: "attache-server",
            files: receipt.parts.map {
                .init(field: hexUTF8($0.name), filename: hexUTF8($0.filename), size: $0.size, sha256: $0.sha256)
            },
            fields: receipt.fields.keys.map(hexUTF8))
    }
}
