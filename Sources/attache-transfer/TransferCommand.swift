import ArgumentParser
import Attache
import AttacheCommands
import AttacheCore
import AttacheTransferCommands
import CLibc
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `attache upload` and `attache request`, as `attache-transfer` (`download` keeps its journal in SQLite,
/// so `attache-pipeline` runs it).
///
/// The `attache` front executable starts this one, with the same arguments, for those two commands.
/// It links neither Foundation nor SQLite: a transfer's process holds libcurl's libraries, the
/// pipeline's code and the data in flight, and little else (docs/BENCHMARKS.md, nginx-upload).
/// Run directly, it does what `attache upload` and `attache request` do; a command line naming the
/// config file (`--endpoint`, `--config`) is handed on to `attache-pipeline`, which reads it.
@main
enum AttacheTransfer {
    /// Synchronous on purpose (``CommandLineScreen/runBlockingMain(_:_:)``).
    static func main() {
        let arguments = PlatformPath.commandLineArguments
        // The config file's TOML parser needs Foundation, which this executable leaves out.
        if EndpointOptions.mentionsConfigFile(arguments) {
            SiblingExecutable.replaceProcess(with: "attache-pipeline", arguments)
        }
        _ = attache_set_malloc_arena_limit(2)
        // libcurl's dependencies (librtmp, libldap) bring GnuTLS, whose load-time constructor sets the
        // library up (p11-kit modules, priorities): ~0.6 MB of pages and some CPU for a library this
        // process never calls (curl's TLS is OpenSSL, and only HTTP(S) is enabled). A variable
        // already set is left as it is. The library (`import Attache`) leaves the environment alone.
        setenv("GNUTLS_NO_IMPLICIT_INIT", "1", 0)
        // The command named (`upload`, `request`) is parsed on its own, without the tree
        // (``CommandLineScreen/directSubcommand(of:in:)``); help and the version go through the tree.
        guard let (command, commandArguments) = CommandLineScreen.directSubcommand(of: TransferCommand.self, in: arguments)
        else { CommandLineScreen.runBlockingMain(TransferCommand.self, arguments) }
        // Both commands transfer: libcurl and its ~30 libraries load on the second core while the
        // arguments are parsed and the request is built (docs/BENCHMARKS.md, requests).
        CommandLineScreen.runBlockingMain(command, commandArguments, onStart: { CurlTransport.preloadLibrary() })
    }
}

/// The commands this executable runs; `commandName` keeps usage lines reading `attache …`.
struct TransferCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache",
        abstract: "Upload chat attachments and send plain HTTP requests.",
        version: AttacheLibrary.version,
        subcommands: [UploadCommand.self, RequestCommand.self])
}
