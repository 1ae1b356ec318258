import Attache
import AttacheCore

/// The span export as the environment configures it: OpenTelemetry's SDK variables (`OTEL_TRACES_SAMPLER`,
/// `OTEL_PROPAGATORS`, `OTEL_BSP_*`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`) and the OTLP exporter's
/// (`OTEL_EXPORTER_OTLP_*`, each signal-specific `_TRACES_` form winning over the general one).
///
/// Values are read as ``OTLPEnvironment/unsupportedSetting(in:)`` has already checked them: an empty value
/// counts as unset, and what it would refuse is never reached here (a value that still cannot be read
/// keeps the default).
struct OTLPTraceConfiguration {
    var sampler = TraceSampler.standard
    var propagates = true
    var batching = Self.spanBatching
    var exporter: OTLPHTTPSpanExporter.Settings
    /// `service.name` first, then the rest of `OTEL_RESOURCE_ATTRIBUTES` in its order.
    var resource: [(String, String)]

    /// Attache's defaults for the batch span processor, where the specification's (2,048 spans held, 512
    /// sent every 5 s) drop spans of a batch of small files. A file makes six spans or more with stage
    /// spans, so a batch at 300 files/s ends 1,800 spans a second or more: the processor must send more
    /// than that, and hold a batch of a thousand files whole while a slow collector answers.
    /// - `maxQueueSize` 16,384 spans: 2,700 files' spans with nothing sent yet, some 16 MiB held at most
    ///   (about 1 KiB a span in memory); above that spans are dropped, never memory grown without bound.
    /// - `maxExportBatchSize` 4,096 spans per request (about 0.55 MB of protobuf, well under collectors'
    ///   4 MiB limit on a request): a full queue empties in four exports.
    /// - `scheduleDelay` 1 s: 4,096 spans a second sent at least, and at most a second of spans lost to a
    ///   SIGKILL. A full batch goes at once, without waiting for the delay.
    static let spanBatching = BatchSpanProcessor.Settings(
        maximumQueueSize: 16_384, maximumExportBatchSize: 4_096, scheduleDelay: .seconds(1))

    /// The default per-request timeout of an OTLP exporter (`OTEL_EXPORTER_OTLP_TIMEOUT`).
    static let defaultTimeout = Duration.seconds(10)
    /// The default bound on one export of the batch span processor (`OTEL_BSP_EXPORT_TIMEOUT`).
    static let defaultExportTimeout = Duration.seconds(30)

    /// Reads `environment`; `serviceName` is `service.name` unless `OTEL_SERVICE_NAME` or a
    /// `service.name` in `OTEL_RESOURCE_ATTRIBUTES` says otherwise (in that order).
    init(environment: [String: String], serviceName: String) {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingBlanks, !text.isEmpty else { return nil }
            return text
        }
        func traces(_ suffix: String) -> String? {
            value("OTEL_EXPORTER_OTLP_TRACES_" + suffix) ?? value("OTEL_EXPORTER_OTLP_" + suffix)
        }
        func milliseconds(_ text: String?) -> Duration? {
            text.flatMap { Int64($0) }.flatMap { $0 >= 0 ? Duration.milliseconds($0) : nil }
        }
        func count(_ name: String) -> Int? {
            value(name).flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil }
        }

        if let name = value("OTEL_TRACES_SAMPLER"),
            let sampler = TraceSampler(name: name, argument: value("OTEL_TRACES_SAMPLER_ARG"))
        {
            self.sampler = sampler
        }
        if let names = value("OTEL_PROPAGATORS") {
            propagates = names.split(separator: ",").contains { $0.trimmingBlanks == "tracecontext" }
        }
        batching = BatchSpanProcessor.Settings(
            maximumQueueSize: count("OTEL_BSP_MAX_QUEUE_SIZE") ?? Self.spanBatching.maximumQueueSize,
            maximumExportBatchSize: count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") ?? Self.spanBatching.maximumExportBatchSize,
            scheduleDelay: milliseconds(value("OTEL_BSP_SCHEDULE_DELAY")) ?? Self.spanBatching.scheduleDelay)

        let endpoint: String
        if let full = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            endpoint = full
        } else if let base = value("OTEL_EXPORTER_OTLP_ENDPOINT") {
            endpoint = base + (base.hasSuffix("/") ? "v1/traces" : "/v1/traces")
        } else {
            endpoint = "http://localhost:4318/v1/traces"
        }
        exporter = OTLPHTTPSpanExporter.Settings(endpoint: endpoint)
        exporter.headers = traces("HEADERS").flatMap(Self.headers(from:)) ?? []
        exporter.timeout = min(
            milliseconds(traces("TIMEOUT")) ?? Self.defaultTimeout,
            milliseconds(value("OTEL_BSP_EXPORT_TIMEOUT")) ?? Self.defaultExportTimeout)
        exporter.gzip = traces("COMPRESSION") == "gzip"
        exporter.caFile = traces("CERTIFICATE")
        exporter.clientCertificate = traces("CLIENT_CERTIFICATE")
        exporter.clientKey = traces("CLIENT_KEY")

        let attributes = value("OTEL_RESOURCE_ATTRIBUTES").flatMap(Self.pairs(from:)) ?? []
        let name = value("OTEL_SERVICE_NAME") ?? attributes.last { $0.0 == "service.name" }?.1 ?? serviceName
        var resource = [("service.name", name)]
        for (key, _) in attributes where key != "service.name" && !resource.contains(where: { $0.0 == key }) {
            resource.append((key, attributes.last { $0.0 == key }!.1))
        }
        self.resource = resource
    }

    /// `OTEL_EXPORTER_OTLP_HEADERS`: `name=value` pairs separated by commas, values percent-decoded (W3C
    /// Baggage's format, as the specification says); nil when it is not such a list or a header could
    /// not be sent.
    static func headers(from text: String) -> [HeaderField]? {
        guard let pairs = pairs(from: text) else { return nil }
        let fields = pairs.map { HeaderField(name: $0.0, value: $0.1) }
        guard fields.allSatisfy({ HeaderFieldSyntax.isValidName($0.name) && HeaderFieldSyntax.isValidValue($0.value) })
        else { return nil }
        return fields
    }

    /// `key=value,key=value`, each side trimmed and each value percent-decoded; nil when an entry has no
    /// `=` or an empty key, or a value is not valid percent-encoded UTF-8.
    static func pairs(from text: String) -> [(String, String)]? {
        var pairs: [(String, String)] = []
        for entry in text.split(separator: ",", omittingEmptySubsequences: true) {
            guard let equals = entry.firstIndex(of: "=") else { return nil }
            let key = entry[..<equals].trimmingBlanks
            let raw = entry[entry.index(after: equals)...].trimmingBlanks
            guard !key.isEmpty, let bytes = PercentDecoding.decoding(raw.utf8),
                let value = String(validating: bytes, as: UTF8.self)
            else { return nil }
            pairs.append((key, value))
        }
        return pairs
    }
}
