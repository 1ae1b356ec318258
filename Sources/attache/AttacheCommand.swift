import ArgumentParser
import Attache

/// The `attache` command-line tool.
@main
struct AttacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache",
        abstract: "Detect, recompress, encrypt and upload chat attachments.",
        version: Attache.version,
        subcommands: [
            UploadCommand.self,
            BatchCommand.self,
            DetectCommand.self,
            RecompressCommand.self,
            EncryptCommand.self,
            DecryptCommand.self,
        ])

    /// `attache detect` with only files and `--json` runs without the argument parser, whose cost
    /// grows with the square of the number of files (see ``DetectCommand/runIfPlain(_:)``).
    static func main() async {
        DetectCommand.runIfPlain(CommandLine.arguments)
        await main(nil)
    }
}
