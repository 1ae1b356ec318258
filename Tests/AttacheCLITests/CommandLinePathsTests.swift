import ArgumentParser
import Foundation
import Testing
@testable import AttacheCLI

/// Long lists of paths on the command line (``CommandLinePaths``): the same parse as ArgumentParser's, in
/// linear time.
@Suite struct CommandLinePathsTests {
    /// What parsing `arguments` gives: the whole command, every option and list, as text; or the exit
    /// status and message of the error.
    static func outcome(_ arguments: [String], split: Bool) -> String {
        do {
            let command = split
                ? try CommandLinePaths.parse(RootCommand.self, arguments, threshold: 0, fallingBack: false)
                : try RootCommand.parseAsRoot(arguments)
            var text = ""
            dump(command, to: &text)
            return text
        } catch let error as CommandLinePaths.Disagreement {
            return "the walk and ArgumentParser disagree: \(error)"
        } catch {
            return "exit \(RootCommand.exitCode(for: error).rawValue): \(RootCommand.fullMessage(for: error))"
        }
    }

    static let url = "http://127.0.0.1:9/upload"

    /// Command lines whose paths are taken out, and what a split must give for each: options before,
    /// between and after the paths, values apart and after `=`, repeated options, `--`, and errors.
    /// (Few, each with much in it: a parse of a large command takes about half a second in a debug build.)
    static let commandLines: [[String]] = [
        // An option's value apart, after `=`, and after an empty `=` (the next word).
        ["detect", "a", "--json", "b", "--blurhash-components", "3x3", "c", "--blurhash-components=", "4x4", "--placeholders", "d"],
        // Without options (the table is not made), and with `--` before paths that look like options.
        ["detect", "a", "b", "c"],
        ["scan", "a", "b", "--", "--json", "-x"],
        // `-` alone and the empty word are paths; after `--`, so is every word that looks like an option.
        ["detect", "-", "a", "", "--json", "--", "-x", "--json", "--", "-h", "--files-from", "b"],
        // Repeated options keep their order; a value may look like a path, or be `-`.
        [
            "upload", "a.jpg", "--url", url, "b.jpg", "--field", "chatId=42", "c.jpg", "--field=tags[]=a", "-v", "d.jpg",
            "--field", "x=-", "--header", "X-A: 1", "e", "--header=X-B: 2", "--kind", "file", "--no-progress", "--json", "f",
        ],
        ["batch", "--log-level", "debug", "x", "--url", url, "--journal", "j.sqlite", "--dry-run", "y", "--", "--url", "z"],
        ["enqueue", "a", "--queue", "postgres://attache@127.0.0.1/attache", "b", "--hash-limit", "0", "c"],
        ["scan", "a", "--clamd", "unix:/run/clamd.ctl", "b", "--json", "--concurrency", "2", "c"],
        // Short options take the next word; one URL with -o is the single download.
        ["download", "http://h/1", "-d", "out", "s3://bucket/key", "--header", "A: b", "--journal", "j", "https://h/3"],
        ["download", "http://h/1", "-o=out"],
        // Errors: the same message and status as ArgumentParser's.
        ["upload", "a", "b", "--url", url, "--idempotency-key", "k"],
        ["upload", "a", "b", "--url"],
        ["upload", "a", "--url", "--", "b"],
        ["upload", "a", "--bogus", "b", "--url", url],
        ["detect", "a", "--json=yes", "b"],
        ["detect", "a", "--blurhash-components", "--json", "b"],
        ["detect", "a", "b", "--blurhash-components", "x"],
        ["detect", "a", "---x", "b"],
        ["download", "http://h/1", "http://h/2", "-od", "x", "y"],
        ["download", "http://h/1", "ftp://h/2", "-d", "out"],
        ["batch", "a", "b"],
        // Help, and a request for the command's description.
        ["detect", "a", "b", "--help"],
        ["scan", "a", "-h", "b"],
        ["detect", "a", "--experimental-dump-help", "b"],
    ]

    @Test(arguments: commandLines)
    func theSplitParsesAsArgumentParserDoes(_ arguments: [String]) {
        #expect(Self.outcome(arguments, split: true) == Self.outcome(arguments, split: false))
    }

    @Test func theWalkTellsPathsFromOptionsAndTheirValues() throws {
        let table = try #require(OptionTable("upload", of: RootCommand.self))
        let split = CommandLinePaths.split(
            ["a", "--url", Self.url, "-v", "b", "--field=k=v", "--field", "x=1", "-", "--json", "--", "--url", "-c"],
            table: table)
        #expect(split.paths == ["a", "b", "-", "--url", "-c"])
        #expect(split.kept == ["a", "--url", Self.url, "-v", "--field=k=v", "--field", "x=1", "--json", "--"])
    }

    /// The table comes from ArgumentParser's description of each command; without it nothing is split.
    @Test func everyListCommandHasATable() throws {
        let upload = try #require(OptionTable("upload", of: RootCommand.self))
        #expect(upload["--url"] == .nextValue)
        #expect(upload["--field"] == .nextValue)
        #expect(upload["--json"] == OptionTable.Taking.nothing)
        #expect(upload["-v"] == OptionTable.Taking.nothing)
        #expect(upload["-h"] == OptionTable.Taking.nothing)
        #expect(upload["--bogus"] == nil)
        let download = try #require(OptionTable("download", of: RootCommand.self))
        #expect(download["-o"] == .nextValue)
        #expect(download["-d"] == .nextValue)
        let names = RootCommand.configuration.subcommands.filter { $0 is any PathListCommand.Type }
            .compactMap { $0.configuration.commandName }
        #expect(names == ["upload", "batch", "enqueue", "detect", "scan", "download"])
        for name in names {
            #expect(OptionTable(name, of: RootCommand.self) != nil, "\(name)")
        }
    }

    /// Where the walk reads a word otherwise than ArgumentParser (here an option that takes its value
    /// joined, `-oVALUE`, which ArgumentParser's description does not tell), the command line is parsed
    /// whole instead.
    @Test func aDisagreementIsParsedWhole() throws {
        // The walk gives b and c to -o (read as -o -o -u -t); ArgumentParser gives it "out".
        let arguments = ["list", "a", "z", "-oout", "b", "c"]
        #expect(throws: CommandLinePaths.Disagreement.self) {
            try CommandLinePaths.parse(JoinedRoot.self, arguments, threshold: 0, fallingBack: false)
        }
        let list = try #require(try CommandLinePaths.parse(JoinedRoot.self, arguments, threshold: 0) as? JoinedRoot.List)
        #expect(list.output == "out")
        #expect(list.paths == ["a", "z", "b", "c"])
    }

    struct JoinedRoot: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "joined", subcommands: [List.self])

        struct List: ParsableCommand, PathListCommand {
            static let configuration = CommandConfiguration(commandName: "list")

            @Option(name: .customShort("o", allowingJoined: true)) var output: String?
            @Argument var paths: [String] = []

            mutating func validate() throws { CommandLinePaths.restore(&paths) }
        }
    }

    @Test func aHundredThousandPathsParse() throws {
        let paths = (0..<100_000).map { "photos/\($0).jpg" }
        let detect = try #require(
            try CommandLinePaths.parse(RootCommand.self, ["detect"] + paths + ["--json"]) as? DetectCommand)
        #expect(detect.files == paths)
        #expect(detect.json)

        // Options between them, and `--` before a path that looks like an option.
        var arguments = ["upload", "--url", Self.url]
        arguments += paths[..<50_000]
        arguments += ["--field", "a=1", "--", "-x.jpg"]
        arguments += paths[50_000...]
        arguments.append("--field=b=2")
        var expected = Array(paths[..<50_000])
        expected.append("-x.jpg")
        expected += paths[50_000...]
        expected.append("--field=b=2")
        let upload = try #require(try CommandLinePaths.parse(RootCommand.self, arguments) as? UploadCommand)
        #expect(upload.files == expected)
        #expect(upload.pipeline.fields.map(\.name) == ["a"])
    }
}
