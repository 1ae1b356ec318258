import Foundation
import AttacheTestSupport
import Testing

/// `--endpoint NAME` with the config file found through `--config`, `$ATTACHE_CONFIG` and
/// `$XDG_CONFIG_HOME`, run as `attache` (in this process; with `-v`, the built binary): flags override the file, secrets come from the
/// variables it names and never show, a wrong file exits 78 naming the file and the line.
@Suite("config file endpoints")
struct ConfigFileCommandTests {
    struct Run {
        var status: Int32?
        var standardOutput: String
        var standardError: String
    }

    static func attache(_ arguments: [String], environment: [String: String] = [:]) async throws -> Run {
        // Nothing from the machine's own config: no $ATTACHE_CONFIG, and the XDG folder is the test's.
        var environment = environment
        if environment["ATTACHE_CONFIG"] == nil { environment["ATTACHE_CONFIG"] = "" }
        if environment["XDG_CONFIG_HOME"] == nil { environment["XDG_CONFIG_HOME"] = "/nonexistent-attache-test-config" }
        // With -v as the built binary: log lines written on the transport's own threads reach only the
        // process's standard error, and a test of what the log shows must see every one.
        guard arguments.contains("-v") else {
            let result = await AttacheTestSupport.attache(arguments, environment: environment)
            return Run(status: result.status, standardOutput: result.standardOutput, standardError: result.standardError)
        }
        let child = try ChildProcess(executable: try attacheBinary(), arguments: arguments, environment: environment)
        let status = try await child.wait(upTo: 60)
        return Run(status: status, standardOutput: child.standardOutput, standardError: child.standardError)
    }

    static let tools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Tools").path

    @Test func secretsComeFromTheVariablesTheFileNamesAndNeverShow() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("photo.bin", randomBytes(20_000))
        let receiver = try await ReceiverProcess.start(
            name: "header-check", ["/usr/bin/python3", Self.tools + "/header_check_receiver.py", "Bearer tok-123", "k-456"])
        do {
            try await Self.checkSecrets(folder: folder, receiver: receiver)
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    static func checkSecrets(folder: Folder, receiver: ReceiverProcess) async throws {
        try folder.write("config.toml", Array("""
            # Upload endpoints of the test.
            [endpoints.files]
            url = "\(receiver.uploadURL)"
            bearer-env = "FILES_TOKEN"
            header-env = { "X-Api-Key" = "FILES_API_KEY" }
            headers = { "X-Tenant" = "acme" }
            file-field = "document"
            fields = { chat_id = "42" }
            attempts = 1

            [endpoints.files.seal]
            scheme = "none"
            """.utf8))
        let arguments = ["upload", folder.path("photo.bin"), "--config", folder.path("config.toml"), "--endpoint", "files",
                         "--json", "--no-progress", "-v"]
        let secrets = ["FILES_TOKEN": "tok-123", "FILES_API_KEY": "k-456"]

        let stored = try await attache(arguments, environment: secrets)
        #expect(stored.status == 0, "\(stored.standardError)")
        #expect(stored.standardOutput.contains(#""tenant":"acme""#), "\(stored.standardOutput)")
        #expect(stored.standardOutput.contains(#""parts":["chat_id","mimeType","kind","document"]"#), "\(stored.standardOutput)")
        for secret in secrets.values {
            #expect(!stored.standardOutput.contains(secret) && !stored.standardError.contains(secret))
        }

        // A flag overrides the file: another token variable, which holds a wrong token.
        let overridden = try await attache(
            arguments + ["--field", "chat_id=7"], environment: secrets.merging(["FILES_TOKEN": "wrong"]) { $1 })
        #expect(overridden.status == 80, "\(overridden.standardError)")
        #expect(overridden.standardError.contains("wrong credentials"), "\(overridden.standardError)")

        let unset = try await attache(arguments, environment: ["FILES_TOKEN": "", "FILES_API_KEY": "k-456"])
        #expect(unset.status == 78, "\(unset.standardError)")
        #expect(unset.standardError.contains("bearer-env: the environment variable FILES_TOKEN is not set"), "\(unset.standardError)")
        #expect(unset.standardError.contains(folder.path("config.toml")))
    }

    @Test func theFileIsFoundThroughTheVariablesAndFlagsOverrideIt() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("photo.bin", randomBytes(20_000))
        let refused = "http://127.0.0.1:\(try refusedPort())/upload"
        try await LiveServer.with { server in
            func config(url: String) -> [UInt8] {
                Array("[endpoints.local]\nurl = \"\(url)\"\nattempts = 1\nseal = { scheme = \"none\" }\n".utf8)
            }
            try folder.write("config.toml", config(url: refused))
            try FileManager.default.createDirectory(atPath: folder.path("xdg/attache"), withIntermediateDirectories: true)
            try folder.write("xdg/attache/config.toml", config(url: server.uploadURL))
            let upload = ["upload", folder.path("photo.bin"), "--endpoint", "local", "--no-progress"]

            // $ATTACHE_CONFIG names a file whose endpoint points nowhere: its url is the one used...
            let fromVariable = try await Self.attache(upload, environment: ["ATTACHE_CONFIG": folder.path("config.toml")])
            #expect(fromVariable.status == 69, "\(fromVariable.standardError)")
            // ...unless --url overrides it.
            let overridden = try await Self.attache(
                upload + ["--url", server.uploadURL], environment: ["ATTACHE_CONFIG": folder.path("config.toml")])
            #expect(overridden.status == 0, "\(overridden.standardError)")

            // Without --config or $ATTACHE_CONFIG: $XDG_CONFIG_HOME/attache/config.toml.
            let fromXDG = try await Self.attache(upload, environment: ["XDG_CONFIG_HOME": folder.path("xdg")])
            #expect(fromXDG.status == 0, "\(fromXDG.standardError)")
            // --config wins over both.
            let explicit = try await Self.attache(
                upload + ["--config", folder.path("config.toml")], environment: ["XDG_CONFIG_HOME": folder.path("xdg")])
            #expect(explicit.status == 69, "\(explicit.standardError)")
            #expect(try await server.stats().files == 2)
        }
    }

    @Test func aWrongFileOrEndpointExits78NamingTheFileAndLine() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("photo.bin", randomBytes(1000))
        try folder.write("config.toml", Array("[endpoints.bot]\nurl = \"http://127.0.0.1:9/x\"\nbearer = \"123:SECRET\"\n".utf8))
        let inline = try await Self.attache(
            ["upload", folder.path("photo.bin"), "--config", folder.path("config.toml"), "--endpoint", "bot"])
        #expect(inline.status == 78, "\(inline.standardError)")
        #expect(inline.standardError.contains(folder.path("config.toml")))
        #expect(inline.standardError.contains("line 3: endpoints.bot.bearer"), "\(inline.standardError)")
        #expect(inline.standardError.contains("[config-invalid]"))
        #expect(!inline.standardError.contains("SECRET"))

        try folder.write("config.toml", Array("[endpoints.bot]\nurl = \"http://127.0.0.1:9/x\"\n".utf8))
        let missing = try await Self.attache(
            ["download", "http://127.0.0.1:9/f", "-o", folder.path("out"), "--config", folder.path("config.toml"), "--endpoint", "bots"])
        #expect(missing.status == 78, "\(missing.standardError)")
        #expect(missing.standardError.contains("no endpoint 'bots' (the file has bot)"), "\(missing.standardError)")

        let nowhere = try await Self.attache(["batch", folder.path("photo.bin"), "--endpoint", "bot", "--dry-run"])
        #expect(nowhere.status == 78, "\(nowhere.standardError)")
        #expect(nowhere.standardError.contains("/nonexistent-attache-test-config/attache/config.toml"), "\(nowhere.standardError)")
    }
}
