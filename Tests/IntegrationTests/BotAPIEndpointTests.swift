import Attache
import Foundation
import AttacheTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `attache upload --answer-profile telegram` against `Tools/bot_api_server.py`, a server that answers like
/// the Bot API's sendDocument and takes its token as `Authorization: Bearer`.
@Suite("Bot API endpoint")
struct BotAPIEndpointTests {
    static let token = "6123456789:AAHk-test-token-\(UUID().uuidString.prefix(8))"

    func withBot(_ body: (ServiceProcess) async throws -> Void) async throws {
        let python = try python(with: ["werkzeug"])
        let bot = try await ServiceProcess(
            [python, ServiceProcess.tools + "/bot_api_server.py"], environment: ["BOT_TOKEN": Self.token])
        defer { bot.stop() }
        try await body(bot)
    }

    func attempts(_ bot: ServiceProcess) async throws -> [String: [Double]] {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(bot.port)/attempts")!)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: [Double]])
    }

    func upload(_ paths: [String], bot: ServiceProcess, token: String, extra: [String] = []) async throws -> CommandResult {
        try await runCommand(
            try attacheBinary(),
            ["upload"] + paths + [
                "--url", "http://127.0.0.1:\(bot.port)/bot/sendDocument", "--answer-profile", "telegram",
                "--file-field", "document", "--field", "chat_id=-1001234567890", "--bearer-env", "BOT_TOKEN",
                "--json", "-v", "--no-progress", "--scheme", "none", "--attempts", "3",
            ] + extra,
            environment: ["BOT_TOKEN": token])
    }

    @Test("the token from --bearer-env, the file id from result, the 429's retry_after honoured, no token in any output")
    func sendDocument() async throws {
        try await withBot { bot in
            let bytes = randomBytes(40_000)
            let file = try TemporaryFile(name: "minutes.bin", bytes: bytes)
            defer { file.remove() }
            let result = try await upload([file.path], bot: bot, token: Self.token)
            #expect(result.status == 0, "\(result.all)")
            let receipt = try jsonObject(result.standardOutput)
            let digest = try await sha256Hex(bytes)
            #expect(receipt["fileId"] as? String == "BQACAgQAAx0" + digest.prefix(24))
            #expect(receipt["attempts"] as? Int == 2)
            let server = try #require(receipt["server"] as? [String: Any])
            #expect(server["message_id"] is Int)
            #expect((server["document"] as? [String: Any])?["file_size"] as? Int == bytes.count)

            let times = try #require(try await attempts(bot)[digest])
            #expect(times.count == 2)
            // The server asked for retry_after 1: the retry came no sooner.
            #expect(times[1] - times[0] >= 1.0)

            #expect(result.standardError.contains("attempt 1 failed, retrying"), "verbose log expected: \(result.standardError)")
            #expect(!result.all.contains(Self.token))
            #expect(!result.all.contains(String(Self.token.split(separator: ":")[1])))
        }
    }

    @Test("a wrong token is the server's 401 description, exit 80 (unauthorized), and the token is not shown")
    func wrongToken() async throws {
        try await withBot { bot in
            let file = try TemporaryFile(name: "denied.bin", bytes: randomBytes(1000))
            defer { file.remove() }
            let wrong = "6123456789:AAH-wrong-\(UUID().uuidString.prefix(8))"
            let result = try await upload([file.path], bot: bot, token: wrong)
            #expect(result.status == 80, "\(result.all)")
            #expect(result.standardError.contains("HTTP 401: Unauthorized") && result.standardError.contains("[unauthorized]"), "\(result.all)")
            #expect(!result.all.contains(wrong))
            #expect(!result.all.contains(Self.token))
        }
    }

    @Test("batch: token from the environment, receipts and journal without it")
    func batchKeepsTheTokenOut() async throws {
        try await withBot { bot in
            let folder = try TemporaryFile(name: "a.bin", bytes: randomBytes(5000))
            defer { folder.remove() }
            try Data(randomBytes(6000)).write(to: URL(fileURLWithPath: folder.directory + "/b.bin"))
            let journalFolder = try TemporaryFile(name: "unused", bytes: [])
            defer { journalFolder.remove() }
            let journal = journalFolder.directory + "/journal.sqlite"
            let result = try await runCommand(
                try attacheBinary(),
                [
                    "batch", folder.directory, "--journal", journal,
                    "--url", "http://127.0.0.1:\(bot.port)/bot/sendDocument", "--answer-profile", "telegram",
                    "--file-field", "document", "--bearer-env", "BOT_TOKEN", "--json", "-v", "--no-progress",
                    "--scheme", "none", "--retry-budget", "30",
                ],
                environment: ["BOT_TOKEN": Self.token])
            #expect(result.status == 0, "\(result.all)")
            #expect(result.standardOutput.components(separatedBy: "\"event\":\"succeeded\"").count - 1 == 2, "\(result.all)")
            #expect(!result.all.contains(Self.token))
            for name in try FileManager.default.contentsOfDirectory(atPath: journalFolder.directory) where name.hasPrefix("journal") {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: journalFolder.directory + "/" + name))
                #expect(bytes.range(of: Data(Self.token.utf8)) == nil, "\(name) holds the token")
            }
        }
    }
}
