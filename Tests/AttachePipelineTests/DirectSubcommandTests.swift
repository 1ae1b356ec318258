import ArgumentParser
import AttacheCommands
import AttacheTransferCommands
import Testing

/// ``CommandLineScreen/directSubcommand(of:in:)``: which command lines `attache-transfer` parses as the
/// subcommand alone, and which go through the tree (help, the version, completion scripts, an empty
/// command line), where only the tree gives the right answer.
@Suite struct DirectSubcommandTests {
    struct Tree: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "attache", version: "1", subcommands: [UploadCommand.self, RequestCommand.self])
    }

    @Test func aTransferCommandLineIsParsedAsItsSubcommand() throws {
        let direct = try #require(
            CommandLineScreen.directSubcommand(of: Tree.self, in: ["attache", "request", "POST", "http://h/", "--json-field", "a=1"]))
        #expect(ObjectIdentifier(direct.command) == ObjectIdentifier(RequestCommand.self))
        #expect(direct.arguments == ["attache", "POST", "http://h/", "--json-field", "a=1"])
        let upload = try #require(CommandLineScreen.directSubcommand(of: Tree.self, in: ["attache", "upload", "a.jpg", "--url", "http://h/"]))
        #expect(ObjectIdentifier(upload.command) == ObjectIdentifier(UploadCommand.self))
        // A file named like a help flag after `--` is data, not a help request.
        let dashed = try #require(CommandLineScreen.directSubcommand(of: Tree.self, in: ["attache", "upload", "--url", "http://h/", "--", "--help"]))
        #expect(dashed.arguments == ["attache", "--url", "http://h/", "--", "--help"])
    }

    @Test(arguments: [
        ["attache"],
        ["attache", "request"],
        ["attache", "batch", "dir"],
        ["attache", "--version"],
        ["attache", "request", "--help"],
        ["attache", "upload", "-h"],
        ["attache", "upload", "-help"],
        ["attache", "upload", "help"],
        ["attache", "upload", "x", "--version"],
        ["attache", "request", "--generate-completion-script", "bash"],
        ["attache", "request", "--experimental-dump-help"],
    ])
    func everythingElseGoesThroughTheTree(_ arguments: [String]) {
        #expect(CommandLineScreen.directSubcommand(of: Tree.self, in: arguments) == nil)
    }

    @Test func bothSubcommandsNameTheToolAsTheirParent() {
        // Without it, their usage lines would read `request …` rather than `attache request …`.
        #expect(RequestCommand.configuration._superCommandName == "attache")
        #expect(UploadCommand.configuration._superCommandName == "attache")
        #expect(RequestCommand.usageString().hasPrefix("attache request"))
    }
}
