import ArgumentParser
import AttacheCommands
import AttacheCore
import CFront
import CLibc
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The `attache` executable: runs `detect`, `recompress`, `encrypt` and `decrypt` itself, hands
/// `upload` and `request` to `attache-transfer` and every other command line (`download`, whose journal is
/// SQLite, included) to `attache-pipeline`;
/// both install next to it.
///
/// Those four commands need neither Foundation nor libcurl or SQLite, so this executable is linked
/// fully statically without them (the codecs and libcrypto from their static archives): it starts in
/// under a millisecond and a few MB, where the whole tool takes several times that
/// (docs/BENCHMARKS.md, Start-up). A `detect` over a few hundred files, a `recompress` of one photo and
/// an `encrypt` of a small attachment all feel that start-up. Everything else costs one `execv` more,
/// made from a C constructor before the Swift runtime starts (Sources/CFront), which is little next to
/// what those commands do. `upload` and `request` go to `attache-transfer`,
/// which links libcurl but neither Foundation nor SQLite, so a transfer's process stays small; `batch`,
/// `--help` and `--version` go to `attache-pipeline`, the whole tool.
@main
struct AttacheFront {
    /// A synchronous `main` on purpose. An `async` main parks the main thread in `dispatch_main`, which
    /// calls `pthread_exit`, whose forced unwind makes libgcc sort every unwind entry of a static
    /// executable first: ~12 ms of CPU on each run (perf), more than a `detect` or a small `encrypt` costs.
    /// Here the main thread waits on a condition instead while the command runs as a task, then exits.
    static func main() {
        // File names are bytes: arguments that are not UTF-8 are kept exactly (PlatformPath).
        let arguments = PlatformPath.commandLineArguments
        // Normally a command line for a sibling never gets here: CFront's constructor has already
        // replaced the process. Here it is tried again, on PATH too, with an error when it fails.
        if let target = attache_front_target(CommandLine.argc > 1 ? CommandLine.unsafeArgv[1] : nil) {
            SiblingExecutable.replaceProcess(with: String(cString: target), arguments)
        }
        _ = attache_set_malloc_arena_limit(2)
        DetectCommand.runIfPlain(arguments)
        CommandLineScreen.runBlockingMain(FrontCommand.self, arguments)
    }
}

/// The commands this executable runs itself; `commandName` keeps usage lines reading `attache …`.
struct FrontCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache",
        subcommands: [DetectCommand.self, RecompressCommand.self, EncryptCommand.self, DecryptCommand.self])
}
