/// How much of each send its spans show, when a tracer is bootstrapped.
///
/// With ``send`` (the default), a file makes two kinds of span: `attache.send`, and under it one HTTP client
/// span per attempt (OpenTelemetry's HTTP client conventions; the server's spans hang from these through
/// `traceparent`). Detect, Transform, Scan, Seal and the reading of each answer are recorded on
/// `attache.send`: an event each, at the moment the stage began (`attache.stage.duration_s`,
/// `attache.stage.outcome`), and the attributes `attache.stage.NAME.duration_s` and
/// `attache.stage.NAME.outcome` (`ok`, or the error's code). A trace view still shows when each stage ran,
/// for a third of the spans. With ``stages``, each of them is a child span of its own, for whoever wants
/// the waterfall. The `attache.stage.duration` histogram is recorded either way.
public enum TraceDetail: String, Sendable, Hashable, Codable, CaseIterable {
    /// The send span and its attempts; the stages as events and attributes of the send.
    case send
    /// A span for each stage too.
    case stages
}
