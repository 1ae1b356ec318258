package import ArgumentParser
import Attache
import AttacheCommands
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `--endpoint NAME` and `--config FILE`: which endpoint of the config file a command starts from.
package struct EndpointOptions: ParsableArguments {
    package init() {}

    @Option(help: ArgumentHelp(
        "Start from the endpoint NAME of the config file (its URL, fields, headers, TLS, seal, timeouts); flags given as well override it.",
        valueName: "name"))
    package var endpoint: String?

    @Option(help: ArgumentHelp(
        "The config file --endpoint reads. Default: $ATTACHE_CONFIG, else $XDG_CONFIG_HOME/attache/config.toml or ~/.config/attache/config.toml.",
        valueName: "file"))
    package var config: String?

    package func validate() throws {
        if config != nil, endpoint == nil { throw ValidationError("--config is read for --endpoint NAME; give one") }
    }

    /// Reads the endpoint `name` of the config file (`explicit` is `--config`). Set once at start by
    /// the executable that can read config files: `attache-pipeline`, which links the TOML parser
    /// (TOMLKit needs Foundation, which `attache-transfer` leaves out; `attache-transfer` hands a
    /// command line with `--endpoint` or `--config` to `attache-pipeline`, see ``mentionsConfigFile(_:)``).
    package typealias Loader = @Sendable (
        _ name: String, _ explicit: String?, _ environment: [String: String]
    ) throws -> Endpoint
    nonisolated(unsafe) package static var loader: Loader?

    /// True when `arguments` (a whole command line) may name an endpoint or a config file, up to `--`.
    package static func mentionsConfigFile(_ arguments: [String]) -> Bool {
        for argument in arguments.dropFirst() {
            if argument == "--" { return false }
            if ["--endpoint", "--config"].contains(where: { argument == $0 || argument.hasPrefix($0 + "=") }) {
                return true
            }
        }
        return false
    }

    /// The chosen endpoint, or ``Endpoint/none`` without `--endpoint` (the file is not read then).
    /// - Throws: `ExitCode` 78 after printing one line when the file or the endpoint cannot be used.
    package func load(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Endpoint {
        guard let endpoint else { return .none }
        do {
            guard let loader = Self.loader else {
                throw AttacheError(
                    .configInvalid, stage: .configuration,
                    "--endpoint \(endpoint): this executable does not read config files; run it as `attache`")
            }
            return try loader(endpoint, config, environment)
        } catch let error as AttacheError {
            Console.err("attache: \(error) [\(error.code)]")
            throw ExitCode(ExitStatus.forError(error))
        }
    }
}
