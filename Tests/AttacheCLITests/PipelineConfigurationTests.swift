import ArgumentParser
import Attache
import Foundation
import Testing
@testable import AttacheCLI

/// ``PipelineFlags/configuration(endpoint:environment:retry:url:scanWait:)``: the parsed flags, the endpoint of the
/// config file and the environment (a dictionary) in, the configuration `upload`, `batch` and `worker` run
/// with out. Each setting comes from its flag, else the config file, else the environment, else the default.
@Suite struct PipelineConfigurationTests {
    static func flags(_ arguments: [String]) throws -> PipelineFlags {
        try PipelineFlagsParser.parse(arguments).flags
    }

    static func exitStatus(of error: any Error) -> Int32 {
        if let error = error as? AttacheError { return ExitStatus.forError(error) }
        return RootCommand.exitCode(for: error).rawValue
    }

    static var endpoint: Endpoint {
        var endpoint = Endpoint(name: "files", file: "config.toml")
        endpoint.url = "http://file.example/upload"
        endpoint.fileField = "document"
        endpoint.fields = [.init(name: "chatId", value: "1"), .init(name: "tag", value: "file")]
        endpoint.seal = .init(scheme: .signal)
        endpoint.connectTimeout = 3
        endpoint.attempts = 2
        endpoint.answerProfile = .telegram
        endpoint.thumbnails = .separate
        return endpoint
    }

    @Test func theURLComesFromTheFlagThenTheFileThenTheEnvironment() throws {
        let environment = ["ATTACHE_URL": "http://environment.example/upload"]
        var endpoint = Self.endpoint
        let flagged = try Self.flags(["--url", "http://flag.example/upload"])
        #expect(try flagged.configuration(endpoint: endpoint, environment: environment).url == "http://flag.example/upload")
        let plain = try Self.flags([])
        #expect(try plain.configuration(endpoint: endpoint, environment: environment).url == "http://file.example/upload")
        endpoint.url = nil
        #expect(try plain.configuration(endpoint: endpoint, environment: environment).url == "http://environment.example/upload")
        #expect(try plain.configuration(environment: environment).url == "http://environment.example/upload")
        // A dry run's stand-in comes last.
        #expect(try plain.configuration(environment: [:], url: "http://127.0.0.1/").url == "http://127.0.0.1/")
    }

    /// A bucket endpoint of the config file gives the store's region, endpoint, addressing and key
    /// template; a flag wins over each; the keys come from the environment passed in; and on an http URL
    /// those settings are a usage error, as the flags are.
    @Test func aBucketEndpointGivesTheStoreItsSettingsAndFlagsWin() throws {
        var endpoint = Endpoint(name: "media", file: "config.toml")
        endpoint.url = "s3://media/in/"
        endpoint.objectStore.region = "eu-west-1"
        endpoint.objectStore.s3Endpoint = "http://127.0.0.1:9000"
        endpoint.objectStore.s3Addressing = .path
        endpoint.objectStore.keyTemplate = "chat/{idempotencyKey}{ext}"
        let environment = ["AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "example-secret-of-the-test"]
        let store = try #require(try Self.flags([]).configuration(endpoint: endpoint, environment: environment).objectStore)
        #expect(store.region == "eu-west-1")
        #expect(store.endpointURL == "http://127.0.0.1:9000")
        #expect(store.addressing == .path)
        #expect(store.keyTemplate.text == "chat/{idempotencyKey}{ext}")
        let flagged = try Self.flags(["--region", "us-west-2", "--s3-endpoint", "http://127.0.0.1:9100", "--key-template", "{random}{ext}"])
        let overridden = try #require(try flagged.configuration(endpoint: endpoint, environment: environment).objectStore)
        #expect(overridden.region == "us-west-2")
        #expect(overridden.endpointURL == "http://127.0.0.1:9100")
        #expect(overridden.addressing == .path)
        #expect(overridden.keyTemplate.text == "{random}{ext}")
        endpoint.url = "http://file.example/upload"
        do {
            _ = try Self.flags([]).configuration(endpoint: endpoint, environment: environment)
            Issue.record("S3 settings on an http URL")
        } catch {
            #expect(Self.exitStatus(of: error) == 64)
            #expect("\(error)".contains("need --url s3://"), "\(error)")
        }
    }

    @Test func noURLAnywhereIsAUsageError() throws {
        let plain = try Self.flags([])
        for endpoint in [Endpoint.none, Endpoint(name: "files")] {
            do {
                _ = try plain.configuration(endpoint: endpoint, environment: [:])
                Issue.record("a configuration without a URL")
            } catch {
                #expect(Self.exitStatus(of: error) == 64)
                #expect("\(error)".contains("missing --url"))
            }
        }
    }

    @Test func flagsWinOverTheFileAndTheFileOverTheDefaults() throws {
        let flagged = try Self.flags([
            "--url", "http://flag.example/", "--file-field", "upload", "--field", "tag=photo", "--scheme", "none",
            "--connect-timeout", "7", "--attempts", "4", "--answer-profile", "status", "--thumbnails", "none",
        ])
        let fromFlags = try flagged.configuration(endpoint: Self.endpoint, environment: [:])
        #expect(fromFlags.fileFieldName == "upload")
        // A field named on the command line replaces the file's field of that name; the others stay.
        #expect(fromFlags.fields.map { "\($0.name)=\($0.value)" } == ["chatId=1", "tag=photo"])
        #expect(fromFlags.seal.scheme == SealScheme.none)
        #expect(fromFlags.connection.connectTimeout == .seconds(7))
        #expect(fromFlags.connection.retry.maximumAttempts == 4)
        #expect(fromFlags.answers.profile == .status)
        #expect(fromFlags.thumbnails == .omitted)

        let fromFile = try Self.flags([]).configuration(endpoint: Self.endpoint, environment: [:])
        #expect(fromFile.url == "http://file.example/upload")
        #expect(fromFile.fileFieldName == "document")
        #expect(fromFile.fields.map { "\($0.name)=\($0.value)" } == ["chatId=1", "tag=file"])
        #expect(fromFile.seal.scheme == .signal)
        #expect(fromFile.connection.connectTimeout == .seconds(3))
        #expect(fromFile.connection.retry.maximumAttempts == 2)
        #expect(fromFile.answers.profile == .telegram)
        #expect(fromFile.thumbnails == .separate)

        let defaults = try Self.flags(["--url", "http://h/"]).configuration(environment: [:])
        #expect(defaults.fileFieldName == "file")
        #expect(defaults.fields.isEmpty)
        #expect(defaults.seal.scheme == .streamGCM)
        #expect(defaults.seal.transferEncoding == .binary)
        #expect(defaults.connection.connectTimeout == .seconds(10))
        #expect(defaults.connection.stallTimeout == .seconds(30))
        #expect(defaults.answers.profile == .errorCode)
        #expect(defaults.thumbnails == nil)
        #expect(defaults.transform.media.video == .standard)
        #expect(defaults.transform.media.voice == .telegram)
        #expect(defaults.transform.onTransformError == .sendOriginal)
        #expect(defaults.resumable.mode == .off)
        #expect(defaults.resumable.threshold == 16 << 20)
        #expect(defaults.transform.image.memoryBudget == 256 << 20)
    }

    @Test func valuesAreParsedOnceIntoTheirTypes() throws {
        let flags = try Self.flags([
            "--url", "http://h/", "--resumable", "TUS", "--resumable-threshold", "64M", "--video-preset", "hd",
            "--voice-preset", "high", "--on-transform-error", "fail", "--kind", "Voice", "--answer-profile", "S3-POST",
            "--thumbnails", "separate", "--id-pointer", "/Key", "--memory-budget", "48M",
        ])
        #expect(flags.pipeline.resumable == .tus)
        #expect(flags.pipeline.resumableThreshold == ByteSize(bytes: 64 << 20))
        #expect(flags.pipeline.kind == .voice)
        let configuration = try flags.configuration(environment: [:])
        #expect(configuration.resumable.mode == .tus)
        #expect(configuration.resumable.threshold == 64 << 20)
        #expect(configuration.transform.image.memoryBudget == 48 << 20)
        #expect(configuration.transform.media.video == .hd)
        #expect(configuration.transform.media.voice == .high)
        #expect(configuration.transform.onTransformError == .fail)
        #expect(configuration.answers.profile == .s3Post)
        #expect(configuration.answers.idPointer == (try JSONPointer("/Key")))
    }

    @Test(arguments: [
        ["--scheme", "aes"], ["--resumable", "sometimes"], ["--resumable-threshold", "12X"], ["--memory-budget", "-1M"], ["--video-preset", "4k"],
        ["--on-transform-error", "ignore"], ["--kind", "gif"], ["--answer-profile", "soap"], ["--thumbnails", "some"],
        ["--field", "no-equals"], ["--field", "=value"], ["--id-pointer", "no-slash"], ["--max-side", "8"],
        ["--key-file", "k", "--key-env", "K"], ["--scheme", "legacy-cbc"], ["--answer-profile", "s3-post", "--thumbnails", "inline"],
    ])
    func aWrongValueOrCombinationIsAUsageError(_ arguments: [String]) {
        do {
            _ = try Self.flags(arguments)
            Issue.record("\(arguments) parsed")
        } catch {
            #expect(Self.exitStatus(of: error) == 64, "\(arguments)")
        }
    }

    /// Settings that only fit together once merged with the file are checked by the function: exit 64.
    @Test func mergedSettingsThatDoNotFitAreAUsageError() throws {
        var endpoint = Self.endpoint
        endpoint.answerProfile = .s3Post
        endpoint.thumbnails = nil
        #expect(throws: ValidationError.self) {
            try Self.flags(["--thumbnails", "inline"]).configuration(endpoint: endpoint, environment: [:])
        }
        endpoint.seal = .init(scheme: .legacyCBC)
        do {
            _ = try Self.flags(["--endpoint", "files"]).configuration(endpoint: endpoint, environment: [:])
            Issue.record("legacy-cbc without a passphrase")
        } catch {
            #expect(Self.exitStatus(of: error) == 64)
        }
    }

    @Test func secretsAreReadFromTheEnvironmentPassedIn() throws {
        let flags = try Self.flags(["--url", "http://h/", "--scheme", "legacy-cbc", "--key-env", "PASS", "--bearer-env", "TOKEN"])
        let configuration = try flags.configuration(environment: ["PASS": "correct horse", "TOKEN": "t-1"])
        #expect(configuration.seal.key?.isPassphrase == true)
        #expect(configuration.connection.authorization?.headerValue == "Bearer t-1")

        // A key variable that is not set: invalid-key (65), naming the variable.
        do {
            _ = try flags.configuration(environment: ["TOKEN": "t-1"])
            Issue.record("a key from an unset variable")
        } catch let error as AttacheError {
            #expect(error.code == .invalidKey)
            #expect(ExitStatus.forError(error) == 65)
            #expect(error.message.contains("PASS"))
        }

        // A variable the config file names that is not set: config-invalid (78).
        var endpoint = Self.endpoint
        endpoint.bearerEnv = "FILES_TOKEN"
        do {
            _ = try Self.flags([]).configuration(endpoint: endpoint, environment: [:])
            Issue.record("a token from an unset variable")
        } catch let error as AttacheError {
            #expect(ExitStatus.forError(error) == 78)
            #expect(error.message.contains("FILES_TOKEN"))
        }
    }
}
