import ArgumentParser
import Attache
import Testing
@testable import AttacheCLI

/// The one root command, parsed in-process as the `attache` executable parses its arguments.
@Suite struct RootCommandTests {
    @Test func everyCommandIsASubcommandOfTheOneRoot() {
        let names = RootCommand.configuration.subcommands.compactMap { $0.configuration.commandName }
        #expect(names == [
            "upload", "batch", "enqueue", "worker", "queue", "detect", "scan", "recompress", "download", "request", "encrypt",
            "decrypt", "s3",
        ])
    }

    @Test func aCommandLineIsParsedIntoItsSubcommand() throws {
        let request = try RootCommand.parseAsRoot(["request", "POST", "http://h/", "--json-field", "a=1"])
        #expect(request is RequestCommand)
        let upload = try #require(try RootCommand.parseAsRoot(["upload", "a.jpg", "--url", "http://h/"]) as? UploadCommand)
        #expect(upload.files == ["a.jpg"])
        // A file named like a help flag after `--` is data, not a help request.
        let dashed = try #require(try RootCommand.parseAsRoot(["upload", "--url", "http://h/", "--", "--help"]) as? UploadCommand)
        #expect(dashed.files == ["--help"])
    }

    /// `download URL -o OUT` is the single-file download, run from the options parsed by the one command.
    @Test func oneURLWithAnOutputIsTheSingleFileDownload() throws {
        let parsed = try RootCommand.parseAsRoot(
            ["download", "http://h/files/1", "-o", "movie.mp4", "--resume", "--key-env", "K", "--scheme", "signal", "--json"])
        let download = try #require(parsed as? DownloadManyCommand)
        let single = download.single
        #expect(single.url == "http://h/files/1")
        #expect(single.output == "movie.mp4")
        #expect(single.resume)
        #expect(single.json)
        #expect(single.key.keyEnv == "K")
        #expect(single.key.scheme == .signal)
    }

    @Test(arguments: [["--help"], ["request", "--help"], ["upload", "-h"], ["help", "upload"], ["--version"]])
    func helpAndTheVersionExitZero(_ arguments: [String]) {
        // Help parses into ArgumentParser's help command, whose run ends with a clean exit; the version
        // ends the parse itself.
        do {
            var command = try RootCommand.parseAsRoot(arguments)
            try command.run()
            Issue.record("\(arguments) printed neither help nor the version")
        } catch {
            #expect(RootCommand.exitCode(for: error) == .success)
            #expect(!RootCommand.fullMessage(for: error).isEmpty)
        }
    }

    @Test func usageLinesNameTheTool() {
        #expect(RootCommand.usageString(for: RequestCommand.self).hasPrefix("attache request"))
        #expect(RootCommand.usageString(for: UploadCommand.self).hasPrefix("attache upload"))
    }

    @Test(arguments: [
        ["request", "--bogus", "http://h/"],
        ["request", "POST"],
        ["upload", "--scheme", "nope", "x"],
        ["nonsense"],
        ["upload", "x", "--url", "http://h/", "--log-level", "loud"],
        ["recompress", "a.jpg", "-o", "b", "--format", "gif"],
        ["download", "ftp://h/x", "-o", "out"],
        ["download", "http://h/x", "-o", "-", "--resume"],
        ["download", "http://h/x", "-o", "out", "--key-file", "k", "--key-env", "K"],
    ])
    func usageErrorsExit64(_ arguments: [String]) {
        do {
            _ = try RootCommand.parseAsRoot(arguments)
            Issue.record("\(arguments) parsed")
        } catch {
            #expect(RootCommand.exitCode(for: error).rawValue == 64, "\(arguments)")
        }
    }
}
