package import CoreMetrics
package import Tracing

/// Where Attache's metrics and spans go: the swift-metrics factory and the swift-distributed-tracing
/// tracer in force when a client or pipeline was made, or none.
///
/// Each is nil when nothing was bootstrapped (`MetricsSystem.bootstrap`, `InstrumentationSystem.bootstrap`),
/// and every hook checks that first: a library user who sets up neither pays one branch per hook, no
/// allocation, no lock. Tests hand a factory and a tracer of their own instead of bootstrapping the
/// process-wide systems.
package struct Telemetry: Sendable {
    /// The metrics factory; nil when metrics are off.
    package let metrics: (any MetricsFactory)?
    /// The tracer; nil when tracing is off.
    package let tracer: (any Tracer)?

    /// The handles made so far from `metrics`, each made once; nil when metrics are off.
    let handles: MetricHandles?
    /// `tracer`, when its spans keep a ``SpanAttributeList`` (Attache's own): found once here, so that
    /// starting a span needs no cast.
    let listTracer: (any AttributeListTracer)?

    /// Telemetry that goes to `metrics` and `tracer`.
    package init(metrics: (any MetricsFactory)?, tracer: (any Tracer)?) {
        self.metrics = metrics
        self.tracer = tracer
        handles = metrics.map(MetricHandles.init(factory:))
        listTracer = tracer as? any AttributeListTracer
    }

    /// Neither metrics nor spans.
    package static let off = Telemetry(metrics: nil, tracer: nil)

    /// What the process bootstrapped, read now: the no-op factory and tracer count as none.
    package static var bootstrapped: Telemetry {
        let factory = MetricsSystem.factory
        let tracer = InstrumentationSystem.tracer
        return Telemetry(
            metrics: factory is NOOPMetricsHandler ? nil : factory, tracer: tracer is NoOpTracer ? nil : tracer)
    }

    /// The span that root spans started in this task link to (see ``startingTraces(_:)``).
    @TaskLocal static var rootLink: InstrumentationContext?

    /// The send span that the stages run in this task record themselves on instead of starting spans of
    /// their own (``TraceDetail/send``); nil: each stage is a span (``TraceDetail/stages``, or a stage run
    /// outside a pipeline's send, such as a lone ``Uploader``'s reading of an answer).
    @TaskLocal static var stageRecorder: TelemetrySpan?

    /// Whether anything is recorded at all.
    package var isOn: Bool { metrics != nil || tracer != nil }

    // MARK: Metrics

    /// Adds `amount` to the counter `name` with `dimensions`.
    package func count(_ name: MetricName, by amount: Int64 = 1, _ dimensions: [(String, String)] = []) {
        guard let handles, amount > 0 else { return }
        handles.counter(name, dimensions).increment(by: amount)
    }

    /// Records `duration` in the timer (a histogram in seconds) `name`.
    package func record(_ duration: Duration, _ name: MetricName, _ dimensions: [(String, String)] = []) {
        guard let handles else { return }
        handles.timer(name, dimensions).recordNanoseconds(duration.nanoseconds)
    }

    /// Moves the up-down gauge `name` by `delta`.
    package func add(_ delta: Int64, to name: MetricName, _ dimensions: [(String, String)] = []) {
        guard let handles else { return }
        let meter = handles.meter(name, dimensions)
        if delta >= 0 { meter.increment(by: Double(delta)) } else { meter.decrement(by: Double(-delta)) }
    }

    /// Sets the gauge `name` to `value`.
    package func set(_ value: Int64, _ name: MetricName, _ dimensions: [(String, String)] = []) {
        guard let handles else { return }
        handles.meter(name, dimensions).set(value)
    }

    // MARK: Spans

    /// Runs `body` inside a span `name` (a child of the task's current span) when tracing is on, and
    /// with no span at all when it is off. A thrown error is recorded on the span and rethrown.
    package func withSpan<T>(
        _ name: String, ofKind kind: SpanKind = .internal, isolation: isolated (any Actor)? = #isolation,
        _ body: (TelemetrySpan?) async throws -> T
    ) async rethrows -> T {
        guard let tracer else { return try await body(nil) }
        let parent = InstrumentationContext.current
        let span = start(name, tracer, context: parent ?? .topLevel, ofKind: kind)
        if parent == nil, let link = Self.rootLink { span.link(to: link) }
        defer { span.span.end() }
        do {
            return try await InstrumentationContext.$current.withValue(span.span.context) {
                try await body(span)
            }
        } catch {
            span.failed(error)
            throw error
        }
    }

    /// A new span of `tracer`: through ``listTracer`` when it has one.
    private func start(_ name: String, _ tracer: any Tracer, context: InstrumentationContext, ofKind kind: SpanKind)
        -> TelemetrySpan
    {
        if let listTracer { return TelemetrySpan(listed: listTracer.startAttributeListSpan(name, context: context, ofKind: kind)) }
        return TelemetrySpan(tracer.startAnySpan(name, context: context, ofKind: kind))
    }

    /// Runs `body` so that each span it starts at the top begins a trace of its own, linked to the
    /// current span: a batch's files are a trace each (what an operator follows), and each links back
    /// to the batch run.
    package func startingTraces<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        guard tracer != nil, let current = InstrumentationContext.current else { return try await body() }
        return try await Self.$rootLink.withValue(current) {
            try await InstrumentationContext.$current.withValue(nil) { try await body() }
        }
    }

    /// Runs `body` so that a span it starts at the top begins a trace of its own, linked to `context`
    /// (a queue job's span to the span that enqueued it); as it is when `context` is nil.
    package func withLinkedRoot<T>(
        _ context: InstrumentationContext?, isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> T
    ) async rethrows -> T {
        guard tracer != nil else { return try await body() }
        return try await Self.$rootLink.withValue(context) {
            try await InstrumentationContext.$current.withValue(nil) { try await body() }
        }
    }

    /// `withSpan` for synchronous work.
    package func withSpan<T>(_ name: String, ofKind kind: SpanKind = .internal, _ body: (TelemetrySpan?) throws -> T) rethrows -> T {
        guard let tracer else { return try body(nil) }
        let span = start(name, tracer, context: .current ?? .topLevel, ofKind: kind)
        defer { span.span.end() }
        do {
            return try InstrumentationContext.$current.withValue(span.span.context) { try body(span) }
        } catch {
            span.failed(error)
            throw error
        }
    }

    /// Runs one stage of a send (`name`: detect, transform, scan, seal, interpret): as a child span
    /// `attache.NAME`, or, inside a send that records its stages (``TraceDetail/send``), as an event and
    /// two attributes of that send span (see ``TraceDetail``). Nothing at all when tracing is off or the
    /// send span is not recording (sampled out).
    package func stage<T>(
        _ name: String, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        guard tracer != nil else { return try await body() }
        guard let recorder = Self.stageRecorder else { return try await withSpan("attache." + name) { _ in try await body() } }
        guard recorder.span.isRecording else { return try await body() }
        let started = DefaultTracerClock.now
        let start = ContinuousClock.now
        do {
            let value = try await body()
            recorder.stageEnded(name, at: started, duration: ContinuousClock.now - start, outcome: "ok")
            return value
        } catch {
            recorder.stageEnded(name, at: started, duration: ContinuousClock.now - start, outcome: TelemetrySpan.errorType(error))
            throw error
        }
    }

    /// ``stage(_:isolation:_:)`` for synchronous work.
    package func stage<T>(_ name: String, _ body: () throws -> T) rethrows -> T {
        guard tracer != nil else { return try body() }
        guard let recorder = Self.stageRecorder else { return try withSpan("attache." + name) { _ in try body() } }
        guard recorder.span.isRecording else { return try body() }
        let started = DefaultTracerClock.now
        let start = ContinuousClock.now
        do {
            let value = try body()
            recorder.stageEnded(name, at: started, duration: ContinuousClock.now - start, outcome: "ok")
            return value
        } catch {
            recorder.stageEnded(name, at: started, duration: ContinuousClock.now - start, outcome: TelemetrySpan.errorType(error))
            throw error
        }
    }

    /// Writes the current span's context into `headers` (W3C `traceparent` and `tracestate` with a
    /// tracer that propagates them), replacing fields of the same names.
    package func inject(into headers: inout [HeaderField]) {
        guard let tracer, let context = InstrumentationContext.current else { return }
        tracer.inject(context, into: &headers, using: HeaderFieldInjector())
    }

    /// The context a later job links back to (W3C `traceparent`/`tracestate` fields), or none.
    package func propagationFields() -> [HeaderField] {
        if let listTracer {
            guard let context = InstrumentationContext.current else { return [] }
            return listTracer.propagationFields(of: context)
        }
        var fields: [HeaderField] = []
        inject(into: &fields)
        return fields
    }

    /// The context carried by `fields` (what ``propagationFields()`` wrote), to link a span to.
    package func extract(from fields: [HeaderField]) -> InstrumentationContext? {
        guard let tracer, !fields.isEmpty else { return nil }
        var context = InstrumentationContext.topLevel
        tracer.extract(fields, into: &context, using: HeaderFieldExtractor())
        return context
    }
}

/// A span that is being recorded: the attribute setters Attache uses, so call sites stay short.
package struct TelemetrySpan: Sendable {
    let span: any Span
    /// The same span, when it keeps a ``SpanAttributeList``.
    private let listed: (any AttributeListSpan)?

    init(_ span: any Span) {
        self.span = span
        listed = nil
    }

    init(listed span: any AttributeListSpan) {
        self.span = span
        listed = span
    }

    /// Sets `key` to a string.
    package func set(_ key: String, _ value: String) { update { $0.put(key, value) } }
    /// Sets `key` to an integer.
    package func set(_ key: String, _ value: Int64) { update { $0.put(key, value) } }
    /// Sets `key` to an integer.
    package func set(_ key: String, _ value: Int) { update { $0.put(key, value) } }
    /// Sets `key` to a flag.
    package func set(_ key: String, _ value: Bool) { update { $0.put(key, value) } }
    /// Sets several attributes in one update of the span (one lock), where each `set` above takes its
    /// own. A span of Attache's tracer takes them into its list in place; another tracer's span gets
    /// them through its `attributes` accessor (`Span.updateAttributes` would copy them out and back).
    package func update(_ body: (inout SpanAttributeList) -> Void) {
        if let listed { return listed.updateAttributeList(body) }
        var list = SpanAttributeList()
        body(&list)
        guard !list.isEmpty else { return }
        func apply(_ attributes: inout SpanAttributes) {
            for index in list.keys.indices { attributes.set(list.keys[index], value: list.values[index]) }
        }
        apply(&span.attributes)
    }
    /// Whether the span records what it is given: false for one a sampler left out, whose attributes
    /// would be thrown away, so none are made.
    package var isRecording: Bool { span.isRecording }
    /// Records a stage that ran within this span (``TraceDetail/send``): an event at its start, and its
    /// duration and outcome as attributes.
    func stageEnded(_ name: String, at started: DefaultTracerClock.Instant, duration: Duration, outcome: String) {
        let seconds = duration.seconds
        let names = StageAttributeNames(name)
        var event = SpanAttributeList()
        event.reserveCapacity(2)
        event.put("attache.stage.duration_s", seconds)
        event.put("attache.stage.outcome", outcome)
        if let listed {
            listed.addEvent(names.event, atNanoseconds: started.nanosecondsSinceEpoch, attributes: event)
        } else {
            span.addEvent(SpanEvent(name: names.event, at: started, attributes: event.spanAttributes))
        }
        update { attributes in
            attributes.put(names.duration, seconds)
            attributes.put(names.outcome, outcome)
        }
    }
    /// Adds a link to the span of `context`.
    package func link(to context: InstrumentationContext) { span.addLink(SpanLink(context: context, attributes: [:])) }

    /// Marks the span failed with `error.type` set to the error's code (never its message, which may
    /// name a file).
    func failed(_ error: any Error) {
        guard span.isRecording else { return }
        set("error.type", TelemetrySpan.errorType(error))
        span.setStatus(SpanStatus(code: .error))
    }

    /// A low-cardinality name for `error`: an ``AttacheCore/AttacheError``'s code, or the error's type.
    static func errorType(_ error: any Error) -> String {
        if let error = error as? AttacheError { return error.code.rawValue }
        if let error = error as? TransportError { return error.code.rawValue }
        if error is CancellationError { return AttacheError.Code.cancelled.rawValue }
        return "\(type(of: error))"
    }
}

/// The event and attribute names of a stage recorded on its send span: literals for the pipeline's
/// stages, so that recording one makes no string.
struct StageAttributeNames {
    let event: String
    let duration: String
    let outcome: String

    init(_ stage: String) {
        switch stage {
        case "detect": (event, duration, outcome) = ("attache.detect", "attache.stage.detect.duration_s", "attache.stage.detect.outcome")
        case "transform":
            (event, duration, outcome) = ("attache.transform", "attache.stage.transform.duration_s", "attache.stage.transform.outcome")
        case "scan": (event, duration, outcome) = ("attache.scan", "attache.stage.scan.duration_s", "attache.stage.scan.outcome")
        case "seal": (event, duration, outcome) = ("attache.seal", "attache.stage.seal.duration_s", "attache.stage.seal.outcome")
        case "interpret":
            (event, duration, outcome) = ("attache.interpret", "attache.stage.interpret.duration_s", "attache.stage.interpret.outcome")
        default:
            (event, duration, outcome) = ("attache." + stage, "attache.stage." + stage + ".duration_s", "attache.stage." + stage + ".outcome")
        }
    }
}

/// Writes propagation fields into header fields.
struct HeaderFieldInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [HeaderField]) {
        carrier.removeAll { $0.name.equalsIgnoringASCIICase(key) }
        carrier.append(HeaderField(name: key, value: value))
    }
}

/// Reads propagation fields from header fields.
struct HeaderFieldExtractor: Extractor {
    func extract(key: String, from carrier: [HeaderField]) -> String? {
        carrier.first { $0.name.equalsIgnoringASCIICase(key) }?.value
    }
}
