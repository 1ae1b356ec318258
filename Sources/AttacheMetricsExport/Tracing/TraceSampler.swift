/// Which spans are recorded: OpenTelemetry's built-in samplers, chosen by `OTEL_TRACES_SAMPLER` and
/// `OTEL_TRACES_SAMPLER_ARG` as the SDK configuration specification names them.
///
/// A span that is not sampled is still started: it carries its context (flag 00 in `traceparent`) so that
/// what it calls, in this process or another, follows the same decision, but it records nothing.
///
/// ```swift
/// let sampler = TraceSampler(name: "parentbased_traceidratio", argument: "0.1")  // one root in ten
/// ```
package indirect enum TraceSampler: Sendable, Equatable {
    /// Every span.
    case alwaysOn
    /// No span.
    case alwaysOff
    /// A share of the traces, decided by the trace id alone, so that every process deciding on the same
    /// trace decides alike.
    case traceIDRatio(Double)
    /// The parent's decision when there is a parent (local or remote), `root`'s for a span without one.
    case parentBased(root: TraceSampler)

    /// OpenTelemetry's default: `parentbased_always_on`.
    package static let standard = TraceSampler.parentBased(root: .alwaysOn)

    /// The sampler `OTEL_TRACES_SAMPLER` names, with `OTEL_TRACES_SAMPLER_ARG` (a ratio from 0 to 1, 1 when
    /// unset) for the two ratio samplers; nil for any other name or a ratio out of range.
    package init?(name: String, argument: String?) {
        func ratio() -> Double? {
            guard let argument, !argument.isEmpty else { return 1 }
            guard let value = Double(argument), value >= 0, value <= 1 else { return nil }
            return value
        }
        switch name {
        case "always_on": self = .alwaysOn
        case "always_off": self = .alwaysOff
        case "traceidratio":
            guard let ratio = ratio() else { return nil }
            self = .traceIDRatio(ratio)
        case "parentbased_always_on": self = .parentBased(root: .alwaysOn)
        case "parentbased_always_off": self = .parentBased(root: .alwaysOff)
        case "parentbased_traceidratio":
            guard let ratio = ratio() else { return nil }
            self = .parentBased(root: .traceIDRatio(ratio))
        default: return nil
        }
    }

    /// The names ``init(name:argument:)`` takes.
    package static let names = [
        "always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off",
        "parentbased_traceidratio",
    ]

    /// Whether a new span of `traceID` under `parent` (nil for a root) is recorded.
    package func shouldSample(traceID: TraceID, parent: SpanContext?) -> Bool {
        switch self {
        case .alwaysOn: return true
        case .alwaysOff: return false
        case .traceIDRatio(let ratio): return Self.isWithin(ratio, traceID)
        case .parentBased(let root):
            guard let parent else { return root.shouldSample(traceID: traceID, parent: nil) }
            return parent.isSampled
        }
    }

    /// True for the share `ratio` of trace ids: the low 63 bits of the id (the random part W3C Trace
    /// Context asks for, in its last bytes) below `ratio` × 2⁶³.
    private static func isWithin(_ ratio: Double, _ traceID: TraceID) -> Bool {
        if ratio >= 1 { return true }
        if ratio <= 0 { return false }
        let bound = UInt64(ratio * 9_223_372_036_854_775_808.0)
        return traceID.low & 0x7FFF_FFFF_FFFF_FFFF < bound
    }
}
