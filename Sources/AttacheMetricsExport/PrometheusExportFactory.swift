import Attache
package import CoreMetrics
package import Prometheus

/// A swift-metrics factory over a Prometheus registry that writes Prometheus's names: dots become
/// underscores, the unit is appended (`_seconds`, `_bytes`), counters end in `_total`, and Attache's own
/// metrics carry their `# HELP` line, so that `promtool check metrics` finds nothing to say.
///
/// Metrics of other libraries (Hummingbird's, on the reference server) go through
/// `PrometheusMetricsFactory` with the same name rule and no help text.
package struct PrometheusExportFactory: MetricsFactory {
    /// The registry the `/metrics` endpoint serves.
    package let registry: PrometheusCollectorRegistry
    private let fallback: PrometheusMetricsFactory

    /// The OpenTelemetry HTTP client buckets (seconds), for every duration histogram.
    package static let durationBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(75),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .milliseconds(750), .seconds(1),
        .milliseconds(2500), .seconds(5), .milliseconds(7500), .seconds(10),
    ]

    package init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        var fallback = PrometheusMetricsFactory(registry: registry)
        fallback.defaultDurationHistogramBuckets = Self.durationBuckets
        fallback.nameAndLabelSanitizer = { name, labels in
            (Self.prometheusName(name, counter: false), Self.labels(labels))
        }
        self.fallback = fallback
    }

    /// The Prometheus name of a dotted metric name.
    package static func prometheusName(_ name: String, counter: Bool) -> String {
        var base = sanitized(name)
        let unit: String
        switch MetricName(rawValue: name)?.unit {
        case "s": unit = "_seconds"
        case "By": unit = "_bytes"
        default: unit = name.hasSuffix(".duration") ? "_seconds" : ""
        }
        if !base.hasSuffix(unit) { base += unit }
        if counter, !base.hasSuffix("_total") { base += "_total" }
        return base
    }

    static func labels(_ labels: [(String, String)]) -> [(String, String)] {
        labels.map { (sanitized($0.0), $0.1) }
    }

    private static func sanitized(_ name: String) -> String {
        String(name.map { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "_" ? $0 : "_" })
    }

    /// Help texts of the reference server's Hummingbird metrics.
    private static let serverHelp = [
        "hb.requests": "HTTP requests served, by route, method and status.",
        "hb.request.errors": "HTTP requests that ended in an error.",
        "http.server.request.duration": "Duration of HTTP requests served.",
        "http.server.active_requests": "HTTP requests being served.",
    ]

    /// The descriptor of a metric with a known help text (Attache's own, the reference server's), or nil.
    private func descriptor(_ label: String, counter: Bool) -> MetricNameDescriptor? {
        guard let help = MetricName(rawValue: label)?.help ?? Self.serverHelp[label] else { return nil }
        return MetricNameDescriptor(metricName: Self.prometheusName(label, counter: counter), unitName: "", helpText: help)
    }

    package func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        guard let descriptor = descriptor(label, counter: true) else {
            return registry.makeCounter(
                descriptor: MetricNameDescriptor(metricName: Self.prometheusName(label, counter: true), unitName: "", helpText: ""),
                labels: Self.labels(dimensions))
        }
        return registry.makeCounter(descriptor: descriptor, labels: Self.labels(dimensions))
    }

    package func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        let descriptor =
            descriptor(label, counter: true)
            ?? MetricNameDescriptor(metricName: Self.prometheusName(label, counter: true), unitName: "", helpText: "")
        return registry.makeCounter(descriptor: descriptor, labels: Self.labels(dimensions))
    }

    package func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        fallback.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }

    package func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        guard let descriptor = descriptor(label, counter: false) else {
            return fallback.makeMeter(label: label, dimensions: dimensions)
        }
        return registry.makeGauge(descriptor: descriptor, labels: Self.labels(dimensions))
    }

    package func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        guard let descriptor = descriptor(label, counter: false) else {
            return fallback.makeTimer(label: label, dimensions: dimensions)
        }
        return registry.makeDurationHistogram(
            descriptor: descriptor, labels: Self.labels(dimensions), buckets: Self.durationBuckets)
    }

    package func destroyCounter(_ handler: any CounterHandler) { fallback.destroyCounter(handler) }
    package func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        fallback.destroyFloatingPointCounter(handler)
    }
    package func destroyRecorder(_ handler: any RecorderHandler) { fallback.destroyRecorder(handler) }
    package func destroyMeter(_ handler: any MeterHandler) { fallback.destroyMeter(handler) }
    package func destroyTimer(_ handler: any TimerHandler) { fallback.destroyTimer(handler) }
}
