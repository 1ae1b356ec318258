package import Attache
package import Tracing
import Synchronization

/// Attache's tracer for OTLP export: spans with W3C ids, sampled as OpenTelemetry's SDK samples them,
/// ended into a ``BatchSpanProcessor`` that sends them to a collector.
///
/// It is a plain `Tracer` of swift-distributed-tracing: a process bootstraps it once
/// (`InstrumentationSystem.bootstrap`) and every span of the library and of Hummingbird goes through it.
/// Context crosses processes as W3C Trace Context (`traceparent`, with `tracestate` passed on as it came),
/// unless `propagates` is false (`OTEL_PROPAGATORS=none`).
///
/// ```swift
/// let tracer = OTLPTracer(sampler: .standard, processor: processor)
/// InstrumentationSystem.bootstrap(tracer)
/// ```
package final class OTLPTracer: AttributeListTracer {
    package typealias Span = OTLPSpan

    /// Which spans are recorded.
    package let sampler: TraceSampler
    /// Where ended spans go.
    package let processor: BatchSpanProcessor
    /// Whether `inject` and `extract` read and write `traceparent` and `tracestate`.
    package let propagates: Bool
    private let identifiers = SpanIdentifiers()

    /// Creates a tracer.
    package init(sampler: TraceSampler, processor: BatchSpanProcessor, propagates: Bool = true) {
        self.sampler = sampler
        self.processor = processor
        self.propagates = propagates
    }

    package func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> OTLPSpan {
        var context = context()
        let parent = context.spanContext
        let traceID = parent?.traceID ?? identifiers.traceID()
        let sampled = sampler.shouldSample(traceID: traceID, parent: parent)
        let own = SpanContext(
            traceID: traceID, spanID: identifiers.spanID(), isSampled: sampled, traceState: parent?.traceState)
        context.spanContext = own
        return OTLPSpan(
            name: operationName, context: context, spanContext: own, parent: parent, kind: kind,
            startNanoseconds: sampled ? instant().nanosecondsSinceEpoch : 0, processor: sampled ? processor : nil)
    }

    /// Asks the processor to send what it holds now, without waiting for it.
    package func forceFlush() {
        processor.requestFlush()
    }

    package func startAttributeListSpan(_ name: String, context: InstrumentationContext, ofKind kind: SpanKind)
        -> any AttributeListSpan
    {
        startSpan(name, context: context, ofKind: kind, at: DefaultTracerClock.now, function: "", file: "", line: 0)
    }

    package func propagationFields(of context: InstrumentationContext) -> [HeaderField] {
        guard propagates, let span = context.spanContext else { return [] }
        guard let state = span.traceState else { return [HeaderField(name: "traceparent", value: span.traceparent)] }
        return [HeaderField(name: "traceparent", value: span.traceparent), HeaderField(name: "tracestate", value: state)]
    }

    package func inject<Carrier, Inject>(
        _ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject
    ) where Inject: Injector, Inject.Carrier == Carrier {
        guard propagates, let span = context.spanContext else { return }
        injector.inject(span.traceparent, forKey: "traceparent", into: &carrier)
        if let state = span.traceState { injector.inject(state, forKey: "tracestate", into: &carrier) }
    }

    package func extract<Carrier, Extract>(
        _ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract
    ) where Extract: Extractor, Extract.Carrier == Carrier {
        guard propagates, let traceparent = extractor.extract(key: "traceparent", from: carrier),
            let remote = SpanContext(
                traceparent: traceparent, traceState: extractor.extract(key: "tracestate", from: carrier))
        else { return }
        context.spanContext = remote
    }
}

/// New trace and span ids.
///
/// A trace id is 16 bytes from the system's random source (one a trace, so its system call does not
/// count). Span ids come far more often, so they are SplitMix64 over one atomic counter whose start is
/// random: unique within the process, spread evenly over 64 bits, one atomic add each, and none zero.
final class SpanIdentifiers: Sendable {
    private let counter: Atomic<UInt64>

    init() {
        var random = SystemRandomNumberGenerator()
        counter = Atomic(random.next())
    }

    /// A random trace id, never all zero.
    func traceID() -> TraceID {
        var random = SystemRandomNumberGenerator()
        while true {
            let id = TraceID(high: random.next(), low: random.next())
            if !id.isZero { return id }
        }
    }

    /// A new span id, never zero.
    func spanID() -> SpanID {
        while true {
            var value = counter.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
            value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
            value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
            value ^= value >> 31
            if value != 0 { return SpanID(value) }
        }
    }
}
