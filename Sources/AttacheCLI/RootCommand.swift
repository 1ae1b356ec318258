package import ArgumentParser
import Attache
import AttacheCore

/// The `attache` command-line tool: one root command over every subcommand.
///
/// The `attache` executable calls ``runMain()``; tests parse a command line with
/// `RootCommand.parseAsRoot(_:)` and run it in-process.
package struct RootCommand: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "attache",
        abstract: "Detect, recompress, encrypt and upload chat attachments.",
        version: AttacheLibrary.version,
        subcommands: [
            UploadCommand.self,
            BatchCommand.self,
            EnqueueCommand.self,
            WorkerCommand.self,
            QueueCommand.self,
            DetectCommand.self,
            ScanCommand.self,
            RecompressCommand.self,
            DownloadManyCommand.self,
            RequestCommand.self,
            EncryptCommand.self,
            DecryptCommand.self,
            S3Command.self,
        ])

    /// Runs the command line this process was started with and returns when the command succeeded;
    /// exits with the command's status otherwise (docs/EXIT-STATUS.md).
    ///
    /// File names are bytes: arguments that are not UTF-8 are kept exactly (``PlatformPath``). Words that
    /// ArgumentParser would misread as a help request are refused first, and its error messages are
    /// printed escaped (``CommandLineScreen``).
    package static func runMain() async {
        await CommandLineScreen.run(RootCommand.self, PlatformPath.commandLineArguments)
    }

    /// Runs `attache` with `arguments` (without the program name) in this process, its output captured
    /// and `environment` as its environment (``CommandIO``), and returns its exit status with what it
    /// printed: how the command tests run the tool, many at once.
    package static func run(
        arguments: [String], environment: [String: String]
    ) async -> (status: Int32, standardOutput: [UInt8], standardError: [UInt8]) {
        let (status, capture) = await CommandIO.capturing(environment: environment) {
            await CommandLineScreen.status(RootCommand.self, ["attache"] + arguments)
        }
        return (status, capture.standardOutput, capture.standardError)
    }
}
