import ArgumentParser
import Attache
import AttacheCommands
import AttacheCore
import AttacheTransferCommands
import CLibc

/// `attache upload`, `attache download` and `attache request`, as `attache-transfer`.
///
/// The `attache` front executable starts this one, with the same arguments, for those three commands.
/// It links neither Foundation nor SQLite: a transfer's process holds libcurl's libraries, the
/// pipeline's code and the data in flight, and little else (docs/BENCHMARKS.md, nginx-upload).
/// Run directly, it does what `attache upload` and `attache download` do; a command line naming the
/// config file (`--endpoint`, `--config`) is handed on to `attache-pipeline`, which reads it.
@main
struct TransferCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache",
        abstract: "Upload and download chat attachments.",
        version: Attache.version,
        subcommands: [UploadCommand.self, DownloadCommand.self, RequestCommand.self])

    static func main() async {
        let arguments = PlatformPath.commandLineArguments
        // The config file's TOML parser needs Foundation, which this executable leaves out.
        if EndpointOptions.mentionsConfigFile(arguments) {
            SiblingExecutable.replaceProcess(with: "attache-pipeline", arguments)
        }
        _ = attache_set_malloc_arena_limit(2)
        await CommandLineScreen.run(TransferCommand.self, arguments)
    }
}
