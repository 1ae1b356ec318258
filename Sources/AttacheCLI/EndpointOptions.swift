package import ArgumentParser
import Attache
import FoundationEssentials
import Glibc

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

    /// The chosen endpoint, or ``Endpoint/none`` without `--endpoint` (the file is not read then).
    /// - Throws: `ExitCode` 78 after printing one line when the file or the endpoint cannot be used.
    package func load(environment: [String: String] = CommandIO.environment) throws -> Endpoint {
        guard let endpoint else { return .none }
        do {
            return try EndpointConfigFile.endpoint(named: endpoint, explicit: config, environment: environment)
        } catch let error as AttacheError {
            throw Console.failing(error)
        }
    }
}
