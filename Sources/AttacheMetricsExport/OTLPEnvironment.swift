import AttacheCore

/// The `OTEL_*` settings of the environment that this build's exporters cannot honour, found before either
/// reads them: Attache's own for spans (OTLP/HTTP with protobuf bodies, W3C trace context, the SDK's
/// samplers) and swift-otel's for metrics (OTLP/HTTP, bodies uncompressed). Some of these values stop the
/// process in swift-otel (`OTEL_EXPORTER_OTLP_PROTOCOL=grpc`), others make its set-up throw
/// (`OTEL_METRICS_EXPORTER=console`) or are read and then not applied (`gzip` for metrics). A value set but
/// not honoured is a usage error that names the variable, never a crash or a silent default. An empty value
/// counts as unset, as the specification says. A header list is never repeated: it may hold a credential.
enum OTLPEnvironment {
    /// The samplers the tracer implements.
    static let samplers = TraceSampler.names

    /// The first setting that cannot be honoured, said as a sentence for the usage error; nil when
    /// every setting can be.
    static func unsupportedSetting(in environment: [String: String]) -> String? {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingBlanks, !text.isEmpty else { return nil }
            return text
        }
        /// A signal's own setting (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`), else the general one, with its name.
        func signalSetting(_ signal: String, _ setting: String) -> (name: String, text: String)? {
            for name in ["OTEL_EXPORTER_OTLP_\(signal)\(setting)", "OTEL_EXPORTER_OTLP_\(setting)"] {
                if let text = value(name) { return (name, text) }
            }
            return nil
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
            let names = propagators.split(separator: ",").map(\.trimmingBlanks)
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
        let exportsSpans = value("OTEL_TRACES_EXPORTER") != "none"
        let exportsMetrics = value("OTEL_METRICS_EXPORTER") != "none"
        for signal in ["", "TRACES_", "METRICS_"] {
            let protocolName = "OTEL_EXPORTER_OTLP_\(signal)PROTOCOL"
            if let text = value(protocolName), text != "http/protobuf", text != "http/json" {
                return refusal(protocolName, text, supported: ["http/protobuf", "http/json"], why: "it exports over HTTP only")
            }
        }
        // Spans go as protobuf only; the general setting applies to them unless their own is set.
        if exportsSpans, let (name, text) = signalSetting("TRACES_", "PROTOCOL"), text != "http/protobuf" {
            return refusal(
                name, text, supported: ["http/protobuf"],
                why: "spans are sent as protobuf only; OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/json still applies to metrics")
        }
        // Spans may be gzipped; metrics (swift-otel) go uncompressed, and the general setting applies to
        // both unless a signal's own is set.
        for signal in ["", "TRACES_", "METRICS_"] {
            let name = "OTEL_EXPORTER_OTLP_\(signal)COMPRESSION"
            if let text = value(name), text != "none", text != "gzip" {
                return refusal(name, text, supported: ["none", "gzip"])
            }
        }
        if exportsMetrics, let (name, text) = signalSetting("METRICS_", "COMPRESSION"), text != "none" {
            return refusal(
                name, text, supported: ["none"],
                why: "its metrics exporter sends bodies uncompressed; OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=gzip compresses spans")
        }
        if exportsSpans {
            for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
                if let text = value(name), OTLPTraceConfiguration.headers(from: text) == nil {
                    return "\(name) is not a list of name=value headers that can be sent (its value is not repeated here)"
                }
            }
        }
        for name in [
            "OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
        ] {
            if let text = value(name), !(Int64(text).map { $0 >= 0 } ?? false) {
                return "\(name)=\(text) is not a number of milliseconds (a whole number, 0 or more)"
            }
        }
        for name in ["OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"] {
            if let text = value(name), !(Int(text).map { $0 > 0 } ?? false) {
                return "\(name)=\(text) is not a number of spans (a whole number, 1 or more)"
            }
        }
        return nil
    }
}
