import FoundationEssentials

/// The `OTEL_*` settings of the environment that this build's exporter (swift-otel, OTLP/HTTP only) cannot
/// honour, found before swift-otel reads them: some of them stop the process in swift-otel
/// (`OTEL_TRACES_SAMPLER=jaeger_remote`, `OTEL_PROPAGATORS=b3`, `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`), others
/// make its set-up throw (`OTEL_TRACES_EXPORTER=console`) or are read and then not applied
/// (`OTEL_EXPORTER_OTLP_COMPRESSION=gzip`: the HTTP exporter sends its bodies uncompressed). A value set
/// but not honoured is a usage error that names the variable, never a crash or a silent default.
/// An empty value counts as unset, as the specification says.
enum OTLPEnvironment {
    /// The samplers swift-otel implements.
    static let samplers = [
        "always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off",
        "parentbased_traceidratio",
    ]

    /// The first setting that cannot be honoured, said as a sentence for the usage error; nil when
    /// every setting can be.
    static func unsupportedSetting(in environment: [String: String]) -> String? {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        func refusal(_ name: String, _ text: String, supported: [String], why: String? = nil) -> String {
            "\(name)=\(text) is not supported by this build's OTLP exporter"
                + (why.map { " (\($0))" } ?? "") + "; it takes " + supported.joined(separator: ", ")
        }
        if let sampler = value("OTEL_TRACES_SAMPLER"), !samplers.contains(sampler) {
            return refusal("OTEL_TRACES_SAMPLER", sampler, supported: samplers)
        }
        if let sampler = value("OTEL_TRACES_SAMPLER"), sampler.hasSuffix("traceidratio"),
            let argument = value("OTEL_TRACES_SAMPLER_ARG")
        {
            guard let ratio = Double(argument), ratio >= 0, ratio <= 1 else {
                return "OTEL_TRACES_SAMPLER_ARG=\(argument) is not a sampling ratio: \(sampler) takes a number from 0 to 1"
            }
        }
        if let propagators = value("OTEL_PROPAGATORS") {
            let names = propagators.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if let other = names.first(where: { $0 != "tracecontext" && $0 != "none" }) {
                return refusal(
                    "OTEL_PROPAGATORS", propagators, supported: ["tracecontext", "none"],
                    why: "\(other): W3C trace context is the one propagator it implements")
            }
        }
        for (name, also) in [("OTEL_TRACES_EXPORTER", nil), ("OTEL_METRICS_EXPORTER", "prometheus: serve /metrics with --metrics-listen")] {
            if let exporter = value(name), exporter != "otlp", exporter != "none" {
                return refusal(name, exporter, supported: ["otlp", "none"], why: exporter == "prometheus" ? also : nil)
            }
        }
        for signal in ["", "TRACES_", "METRICS_"] {
            let protocolName = "OTEL_EXPORTER_OTLP_\(signal)PROTOCOL"
            if let text = value(protocolName), text != "http/protobuf", text != "http/json" {
                return refusal(protocolName, text, supported: ["http/protobuf", "http/json"], why: "it exports over HTTP only")
            }
            let compressionName = "OTEL_EXPORTER_OTLP_\(signal)COMPRESSION"
            if let text = value(compressionName), text != "none" {
                return refusal(compressionName, text, supported: ["none"], why: "its HTTP exporter sends bodies uncompressed")
            }
        }
        return nil
    }
}
