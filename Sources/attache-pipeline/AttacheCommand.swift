import ArgumentParser
import Attache
import AttacheEndpointConfig
import AttacheTransferCommands
import AttacheCommands
import CLibc

/// The whole `attache` command-line tool, as `attache-pipeline`.
///
/// The small `attache` executable runs `detect`, `encrypt` and `decrypt` itself and starts this one,
/// with the same arguments, for everything else; run directly, it does everything.
@main
struct AttacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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
            RecompressCommand.self,
            DownloadManyCommand.self,
            RequestCommand.self,
            EncryptCommand.self,
            DecryptCommand.self,
        ])

    /// `attache detect` with only files and `--json` runs without the argument parser, whose cost
    /// grows with the square of the number of files (see ``DetectCommand/runIfPlain(_:)``). Words that
    /// ArgumentParser would misread as a help request are refused first, and its error messages are
    /// printed escaped (``CommandLineScreen``).
    ///
    /// glibc gives each thread that allocates its own malloc arena (up to 8 per core) and keeps what is
    /// freed in each: a batch at concurrency 8, whose image buffers are allocated and freed on many pool
    /// threads, peaked at 96 MiB that way, and at 62 MiB with two arenas, at no measurable CPU cost
    /// (docs/BENCHMARKS.md, Batch). The library leaves the process's allocator alone; the tool sets it.
    static func main() async {
        _ = attache_set_malloc_arena_limit(2)
        // `recompress` of a HEIC/AVIF photo: the static front hands it here, where libheif can be loaded.
        HEIFDecoders.install(LibHEIFDecoder())
        EndpointOptions.loader = { name, explicit, environment in
            try EndpointConfigFile.endpoint(named: name, explicit: explicit, environment: environment)
        }
        // File names are bytes: arguments that are not UTF-8 are kept exactly (PlatformPath).
        let arguments = PlatformPath.commandLineArguments
        DetectCommand.runIfPlain(arguments)
        await CommandLineScreen.run(AttacheCommand.self, arguments)
    }
}
