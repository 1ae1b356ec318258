import Attache
import Foundation
import Testing
@testable import AttacheCLI

/// The config file of endpoints (``EndpointConfigFile``): every key, where the file is looked up, and
/// an error naming the file, the line and the key for every way the file can be wrong.
@Suite struct EndpointConfigFileTests {
    static let full = """
        # Every key once.
        [endpoints.files]
        url = "https://files.example/upload"
        answer-profile = "telegram"
        id-pointer = "/result/document/file_id"
        file-field = "document"
        fields = { chat_id = "42", "tags[]" = ["a", "b"] }
        headers = { "X-Tenant" = "acme" }
        header-env = { "X-Api-Key" = "FILES_API_KEY" }
        bearer-env = "FILES_TOKEN"
        user-env = "FILES_USER"
        user-agent = "ops-uploader/2"
        ca-file = "/etc/attache/ca.pem"
        pinned-public-key = "sha256//AAAA"
        thumbnails = "separate"
        connect-timeout = 5
        stall-timeout = 12.5
        attempts = 3
        retry-budget = 90

        [endpoints.files.seal]
        scheme = "signal"
        key-file = "/etc/attache/files.key"
        base64 = true

        [endpoints.s3]
        url = "http://127.0.0.1:9000/bucket"
        answer-profile = "s3-post"
        """

    static func parse(_ text: String) throws -> EndpointConfigFile {
        try EndpointConfigFile.parse(text, path: "/etc/attache/config.toml")
    }

    /// The message of the error parsing `text` throws (it must be `config-invalid` naming the file).
    static func message(_ text: String) -> String {
        do {
            _ = try parse(text)
            return "no error"
        } catch let error as AttacheError {
            #expect(error.code == .configInvalid)
            #expect(error.file == "/etc/attache/config.toml")
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test func everyKeyIsRead() throws {
        let file = try Self.parse(Self.full)
        #expect(file.endpoints.keys.sorted() == ["files", "s3"])
        let files = try file.endpoint(named: "files")
        var expected = Endpoint()
        expected.name = "files"
        expected.file = "/etc/attache/config.toml"
        expected.url = "https://files.example/upload"
        expected.answerProfile = .telegram
        expected.idPointer = try JSONPointer("/result/document/file_id")
        expected.fileField = "document"
        expected.fields = [.init(name: "chat_id", value: "42"), .init(name: "tags[]", value: "a"), .init(name: "tags[]", value: "b")]
        expected.headers = [.init(name: "X-Tenant", value: "acme")]
        expected.headerEnv = [.init(name: "X-Api-Key", value: "FILES_API_KEY")]
        expected.bearerEnv = "FILES_TOKEN"
        expected.userEnv = "FILES_USER"
        expected.userAgent = "ops-uploader/2"
        expected.caFile = "/etc/attache/ca.pem"
        expected.pinnedPublicKey = "sha256//AAAA"
        expected.thumbnails = .separate
        expected.connectTimeout = 5
        expected.stallTimeout = 12.5
        expected.attempts = 3
        expected.retryBudget = 90
        expected.seal = .init(scheme: .signal, keyEnv: nil, keyFile: "/etc/attache/files.key", base64: true)
        #expect(files == expected)
        #expect(try file.endpoint(named: "s3").answerProfile == .s3Post)
    }

    @Test func secretsComeFromTheVariablesTheEndpointNames() throws {
        let endpoint = try Self.parse(Self.full).endpoint(named: "files")
        var configuration = ConnectionConfiguration()
        configuration.headers = [HeaderField(name: "x-tenant", value: "from-a-flag-before")]
        try endpoint.applyHeadersAndCredentials(
            to: &configuration, environment: ["FILES_API_KEY": "k-123", "FILES_TOKEN": "t-456", "FILES_USER": "u:p"])
        #expect(configuration.headers.map { "\($0.name): \($0.value)" } == ["X-Tenant: acme", "X-Api-Key: k-123"])
        // user-env comes after bearer-env: Basic wins when both are named.
        #expect(configuration.authorization?.headerValue == HTTPAuthorization.basic(user: "u", password: "p").headerValue)
        #expect(configuration.userAgent == "ops-uploader/2")

        var withoutToken = ConnectionConfiguration()
        #expect {
            try endpoint.applyHeadersAndCredentials(to: &withoutToken, environment: ["FILES_API_KEY": "k"])
        } throws: { error in
            let error = error as? AttacheError
            return error?.code == .configInvalid && error?.message.contains("FILES_TOKEN is not set") == true
        }
    }

    @Test func flagsReplaceFieldsAndHeadersOfTheSameName() throws {
        let endpoint = try Self.parse(Self.full).endpoint(named: "files")
        let merged = endpoint.fields(overriddenBy: [.init(name: "tags[]", value: "c"), .init(name: "caption", value: "hi")])
        #expect(merged.map { "\($0.name)=\($0.value)" } == ["chat_id=42", "tags[]=c", "caption=hi"])
        let headers = Endpoint.merging(headers: [HeaderField(name: "X-Tenant", value: "acme"), HeaderField(name: "X-Other", value: "1")], overriddenBy: [HeaderField(name: "x-tenant", value: "beta")])
        #expect(headers.map { "\($0.name): \($0.value)" } == ["X-Other: 1", "x-tenant: beta"])
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        var text: String
        var expected: [String]
        var testDescription: String { expected.joined(separator: " ") }
    }

    static let bad: [Bad] = [
        Bad(text: "[endpoints.bot]\nurl = \"https://x\"\nbearer = \"123:ABC\"\n",
            expected: ["line 3", "endpoints.bot.bearer", "holds no secrets", "bearer-env"]),
        Bad(text: "[endpoints.bot]\nurl = \"https://x\"\n\n[endpoints.bot.seal]\nkey = \"c2VjcmV0\"\n",
            expected: ["line 5", "endpoints.bot.seal.key", "key-env or seal.key-file"]),
        Bad(text: "[endpoints.bot]\nheaders = { \"Authorization\" = \"Bearer x\" }\n",
            expected: ["line 2", "endpoints.bot.headers.Authorization", "header-env"]),
        Bad(text: "[endpoints.bot]\nurl = \"https://x\"\nconect-timeout = 3\n",
            expected: ["line 3", "endpoints.bot.conect-timeout", "unknown key", "connect-timeout"]),
        Bad(text: "[endpoints.bot]\nattempts = \"3\"\n", expected: ["line 2", "endpoints.bot.attempts", "integer", "a string"]),
        Bad(text: "[endpoints.bot]\n\nstall-timeout = -1\n", expected: ["line 3", "stall-timeout", "more than 0"]),
        Bad(text: "[endpoints.bot]\nurl = \"ftp://x\"\n", expected: ["line 2", "endpoints.bot.url", "http://"]),
        Bad(text: "[endpoints.bot]\nthumbnails = \"some\"\n", expected: ["line 2", "separate, inline, none"]),
        Bad(text: "[endpoints.bot]\nanswer-profile = \"graphql\"\n", expected: ["line 2", "errorcode, status, s3-post, telegram"]),
        Bad(text: "[endpoints.bot]\nbearer-env = \"123:ABC-secret\"\n", expected: ["line 2", "bearer-env", "environment variable"]),
        Bad(text: "url = \"https://x\"\n", expected: ["line 1", "url", "[endpoints.NAME]"]),
        Bad(text: "[endpoints]\nbot = \"https://x\"\n", expected: ["line 2", "endpoints.bot", "must be a table"]),
        Bad(text: "[endpoints.bot]\nurl = \n", expected: ["line 2", "not valid TOML"]),
        Bad(text: "[endpoints.bot.seal]\nscheme = \"aes\"\n", expected: ["line 2", "seal.scheme", "stream-gcm"]),
        Bad(text: "[endpoints.bot.seal]\nkey-env = \"K\"\nkey-file = \"/k\"\n", expected: ["line 3", "only one of key-env and key-file"]),
        Bad(text: "[endpoints.\"my bot\"]\nfields = { chat_id = 42 }\n",
            expected: ["line 2", "endpoints.\"my bot\".fields.chat_id", "must be a string", "an integer"]),
        Bad(text: "[endpoints.media]\nurl = \"s3://media/in/\"\naws-secret-access-key = \"123:ABC\"\n",
            expected: ["line 3", "endpoints.media.aws-secret-access-key", "holds no secrets", "aws-profile"]),
        Bad(text: "[endpoints.media]\ns3-addressing = \"dns\"\n", expected: ["line 2", "s3-addressing", "auto, path, virtual"]),
        Bad(text: "[endpoints.media]\ns3-endpoint = \"127.0.0.1:9000\"\n", expected: ["line 2", "s3-endpoint", "http://"]),
    ]

    /// A bucket endpoint: `url = "s3://…"` with the store's settings, never its keys.
    @Test func aBucketEndpointIsRead() throws {
        let file = try Self.parse("""
            [endpoints.media]
            url = "s3://media/in/"
            aws-profile = "uploader"
            region = "eu-west-1"
            s3-endpoint = "http://127.0.0.1:9000"
            s3-addressing = "path"
            key-template = "chat/{date}/{idempotencyKey}{ext}"
            """)
        let media = try #require(file.endpoints["media"])
        #expect(media.url == "s3://media/in/")
        #expect(media.objectStore.awsProfile == "uploader")
        #expect(media.objectStore.region == "eu-west-1")
        #expect(media.objectStore.s3Endpoint == "http://127.0.0.1:9000")
        #expect(media.objectStore.s3Addressing == .path)
        #expect(media.objectStore.keyTemplate == "chat/{date}/{idempotencyKey}{ext}")
    }

    @Test(arguments: bad)
    func aWrongFileIsRefusedWithTheLineAndTheKey(_ bad: Bad) {
        let message = Self.message(bad.text)
        for part in bad.expected { #expect(message.contains(part), "\(message)") }
        #expect(!message.contains("123:ABC"), "a secret written in the file is never repeated")
    }

    @Test func aMissingEndpointListsTheOnesThereAre() throws {
        let file = try Self.parse(Self.full)
        #expect {
            _ = try file.endpoint(named: "bott")
        } throws: { error in
            (error as? AttacheError)?.message == "no endpoint 'bott' (the file has files, s3)"
        }
    }

    @Test func theFileIsLookedUpInOrder() {
        let home = ["HOME": "/home/op"]
        #expect(EndpointConfigFile.locate(explicit: "/x.toml", environment: home.merging(["ATTACHE_CONFIG": "/y"]) { $1 })! == ("/x.toml", true))
        #expect(EndpointConfigFile.locate(explicit: nil, environment: home.merging(["ATTACHE_CONFIG": "/y"]) { $1 })! == ("/y", true))
        #expect(EndpointConfigFile.locate(explicit: nil, environment: home.merging(["XDG_CONFIG_HOME": "/cfg"]) { $1 })!
            == ("/cfg/attache/config.toml", false))
        #expect(EndpointConfigFile.locate(explicit: nil, environment: home)! == ("/home/op/.config/attache/config.toml", false))
        // A relative XDG_CONFIG_HOME is ignored, as the XDG specification says.
        #expect(EndpointConfigFile.locate(explicit: nil, environment: home.merging(["XDG_CONFIG_HOME": "cfg"]) { $1 })!
            == ("/home/op/.config/attache/config.toml", false))
    }

    @Test func aFileThatIsNotThereIsNamedInTheError() {
        #expect {
            _ = try EndpointConfigFile.endpoint(
                named: "bot", explicit: nil, environment: ["XDG_CONFIG_HOME": "/nonexistent-attache-config"])
        } throws: { error in
            let error = error as? AttacheError
            return error?.file == "/nonexistent-attache-config/attache/config.toml" && error?.code == .configInvalid
        }
    }
}
