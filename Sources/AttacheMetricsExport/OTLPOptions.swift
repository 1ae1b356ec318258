package import ArgumentParser
import FoundationEssentials
import Glibc

/// `--otlp-endpoint`: spans and metrics exported over OTLP/HTTP (protobuf) to a collector, for the life
/// of a run. Without the flag the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or its `_TRACES_`/`_METRICS_`
/// forms) turns the export on; the other `OTEL_*` variables the exporters read apply either way.
package struct OTLPOptions: ParsableArguments {
    package init() {}

    @Option(help: ArgumentHelp(
        "Export spans and metrics over OTLP/HTTP to this collector (e.g. http://127.0.0.1:4318); "
            + "/v1/traces and /v1/metrics are appended, as for OTEL_EXPORTER_OTLP_ENDPOINT.",
        valueName: "url"))
    package var otlpEndpoint: String?

    @Option(help: ArgumentHelp(
        "Seconds the export may take at the end of the run to send the spans and metrics it still holds; "
            + "what the collector has not taken by then is dropped, with a warning, so that a collector that is "
            + "down or stalled never holds the command (default 5, or OTEL_BSP_EXPORT_TIMEOUT in ms when set).",
        valueName: "seconds"))
    package var otlpFlushTimeout: Double?

    /// When neither the flag nor `OTEL_BSP_EXPORT_TIMEOUT` says otherwise.
    static let defaultFlushLimit = Duration.seconds(5)

    package func validate() throws {
        if let otlpEndpoint, !Self.isHTTPURL(otlpEndpoint) {
            // The URL itself is not repeated: it may carry a token.
            throw ValidationError("--otlp-endpoint must be an http:// or https:// URL with a host")
        }
        if let otlpFlushTimeout, !(otlpFlushTimeout >= 0 && otlpFlushTimeout <= 3600) {
            throw ValidationError("--otlp-flush-timeout must be 0...3600 seconds")
        }
    }

    /// How long the flush at the end of the run may take: the flag, else `OTEL_BSP_EXPORT_TIMEOUT`
    /// (milliseconds, as OpenTelemetry names it), else ``defaultFlushLimit``.
    package func flushLimit(environment: [String: String] = ProcessInfo.processInfo.environment) -> Duration {
        if let otlpFlushTimeout { return .milliseconds(Int64(otlpFlushTimeout * 1000)) }
        if let text = environment["OTEL_BSP_EXPORT_TIMEOUT"], let milliseconds = Int64(text.trimmingCharacters(in: .whitespaces)),
            milliseconds >= 0
        {
            return .milliseconds(milliseconds)
        }
        return Self.defaultFlushLimit
    }

    /// The variables that name a collector, any of which turns the export on without the flag.
    static let endpointVariables = [
        "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    ]

    /// Whether this run exports: the flag, or a collector named in the environment, unless
    /// `OTEL_SDK_DISABLED=true`.
    package func isEnabled(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        Self.isEnabled(endpoint: otlpEndpoint, environment: environment)
    }

    /// ``isEnabled(environment:)`` for an endpoint given in code (``TelemetryExport``).
    static func isEnabled(endpoint: String?, environment: [String: String]) -> Bool {
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return false }
        return endpoint != nil || endpointVariables.contains { environment[$0]?.isEmpty == false }
    }

    /// Makes the flag the process's `OTEL_EXPORTER_OTLP_ENDPOINT`, replacing the signal-specific
    /// variables, so that the exporters derive `/v1/traces` and `/v1/metrics` from it exactly as from the
    /// variable, and the flag wins over the environment. Called once, before the exporters read the
    /// environment and before any other thread does.
    func applyToEnvironment() { Self.applyToEnvironment(endpoint: otlpEndpoint) }

    /// ``applyToEnvironment()`` for an endpoint given in code (``TelemetryExport``).
    static func applyToEnvironment(endpoint: String?) {
        guard let endpoint else { return }
        for name in endpointVariables.dropFirst() { unsetenv(name) }
        setenv(endpointVariables[0], endpoint, 1)
    }

    static func isHTTPURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else { return false }
        return true
    }
}
