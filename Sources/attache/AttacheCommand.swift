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
}
