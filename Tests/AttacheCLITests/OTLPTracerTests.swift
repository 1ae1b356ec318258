import AttacheMetricsExport
import Testing
import Tracing

/// The tracer: W3C trace context in and out, and OpenTelemetry's sampling decisions.
@Suite struct OTLPTracerTests {
    /// A tracer whose processor sends to `exporter` when flushed.
    private func tracer(_ sampler: TraceSampler, exporter: TestExporter = TestExporter(.pass), propagates: Bool = true) -> OTLPTracer {
        let processor = BatchSpanProcessor(
            settings: .init(maximumQueueSize: 100, maximumExportBatchSize: 100, scheduleDelay: .seconds(3600)),
            exporter: exporter, warn: { _ in })
        return OTLPTracer(sampler: sampler, processor: processor, propagates: propagates)
    }

    @Test(arguments: [
        ("always_on", nil, TraceSampler.alwaysOn), ("always_off", nil, .alwaysOff),
        ("traceidratio", "0.5", .traceIDRatio(0.5)), ("traceidratio", nil, .traceIDRatio(1)),
        ("parentbased_always_on", nil, .parentBased(root: .alwaysOn)),
        ("parentbased_always_off", "0.3", .parentBased(root: .alwaysOff)),
        ("parentbased_traceidratio", "0.1", .parentBased(root: .traceIDRatio(0.1))),
    ] as [(String, String?, TraceSampler)])
    func theSamplerNamesOfTheSpecification(name: String, argument: String?, expected: TraceSampler) {
        #expect(TraceSampler(name: name, argument: argument) == expected)
    }

    @Test(arguments: [("jaeger_remote", nil), ("xray", nil), ("traceidratio", "2"), ("parentbased_traceidratio", "x")] as [(String, String?)])
    func otherSamplersAndRatiosAreRefused(name: String, argument: String?) {
        #expect(TraceSampler(name: name, argument: argument) == nil)
    }

    @Test func aParentBasedSamplerFollowsTheParentAndItsRootSamplerDecidesRoots() {
        let id = TraceID(high: 7, low: 7)
        let sampled = SpanContext(traceID: id, spanID: SpanID(1), isSampled: true, isRemote: true)
        let unsampled = SpanContext(traceID: id, spanID: SpanID(1), isSampled: false)
        for root in [TraceSampler.alwaysOn, .alwaysOff, .traceIDRatio(0.5)] {
            #expect(TraceSampler.parentBased(root: root).shouldSample(traceID: id, parent: sampled))
            #expect(!TraceSampler.parentBased(root: root).shouldSample(traceID: id, parent: unsampled))
        }
        #expect(TraceSampler.standard.shouldSample(traceID: id, parent: nil))
        #expect(!TraceSampler.parentBased(root: .alwaysOff).shouldSample(traceID: id, parent: nil))
        #expect(TraceSampler.alwaysOn.shouldSample(traceID: id, parent: unsampled), "always_on ignores the parent")
        #expect(!TraceSampler.alwaysOff.shouldSample(traceID: id, parent: sampled))
    }

    /// The ratio keeps its share of random trace ids, and decides the same way for the same id each time.
    @Test func aRatioSamplerKeepsItsShareOfTraces() {
        var random = SystemRandomNumberGenerator()
        let ids = (0..<20_000).map { _ in TraceID(high: random.next(), low: random.next()) }
        let sampler = TraceSampler.traceIDRatio(0.25)
        let kept = ids.filter { sampler.shouldSample(traceID: $0, parent: nil) }
        #expect(kept.count > 4_600 && kept.count < 5_400, "\(kept.count) of 20000")
        #expect(kept.allSatisfy { sampler.shouldSample(traceID: $0, parent: nil) })
        #expect(!ids.contains { TraceSampler.traceIDRatio(0).shouldSample(traceID: $0, parent: nil) })
        #expect(ids.allSatisfy { TraceSampler.traceIDRatio(1).shouldSample(traceID: $0, parent: nil) })
    }

    /// What `inject` writes, `extract` reads back: the same trace, span and flags, `tracestate` carried.
    @Test func injectAndExtractRoundTripW3CTraceContext() async {
        let exporter = TestExporter(.pass)
        let tracer = tracer(.standard, exporter: exporter)
        var incoming = InstrumentationContext.topLevel
        tracer.extract(
            ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": " vendor=1,other=2 "],
            into: &incoming, using: DictionaryCarrier())
        let span = tracer.startSpan("POST /upload", context: incoming, ofKind: .server)
        #expect(span.isRecording)
        var headers: [String: String] = [:]
        tracer.inject(span.context, into: &headers, using: DictionaryCarrier())
        let own = span.spanContext
        #expect(headers["traceparent"] == "00-4bf92f3577b34da6a3ce929d0e0e4736-\(hex(own.spanID.value))-01")
        #expect(headers["tracestate"] == "vendor=1,other=2")

        var readBack = InstrumentationContext.topLevel
        tracer.extract(headers, into: &readBack, using: DictionaryCarrier())
        #expect(readBack.spanContext == SpanContext(
            traceID: own.traceID, spanID: own.spanID, isSampled: true, traceState: "vendor=1,other=2", isRemote: true))

        span.end()
        await tracer.processor.forceFlush()
        let parent = SpanID(0x00F0_67AA_0BA9_02B7)
        #expect(exporter.finished.map(\.parentSpanID) == [parent])
        #expect(exporter.finished.first?.parentIsRemote == true)
        #expect(exporter.finished.first?.kind == .server)
    }

    /// A span a sampler leaves out records nothing and exports nothing, yet its context goes on with flag
    /// 00, and a parent-based sampler downstream leaves its children out too.
    @Test func aSampledOutSpanCarriesItsContextAndRecordsNothing() async {
        let exporter = TestExporter(.pass)
        let tracer = tracer(.parentBased(root: .alwaysOff), exporter: exporter)
        let root = tracer.startSpan("attache.send", context: .topLevel)
        root.attributes["attache.kind"] = "file"
        root.addEvent("attache.detect")
        #expect(!root.isRecording)
        #expect(root.attributes.isEmpty)
        var headers: [String: String] = [:]
        tracer.inject(root.context, into: &headers, using: DictionaryCarrier())
        let parsed = headers["traceparent"].flatMap { SpanContext(traceparent: $0, traceState: nil) }
        #expect(parsed?.isSampled == false)
        #expect(parsed?.traceID == root.spanContext.traceID && parsed?.spanID == root.spanContext.spanID)
        #expect(headers["traceparent"]?.hasSuffix("-00") == true)

        let child = tracer.startSpan("POST", context: root.context, ofKind: .client)
        #expect(!child.isRecording)
        #expect(child.spanContext.traceID == root.spanContext.traceID)
        child.end()
        root.end()
        await tracer.processor.forceFlush()
        #expect(exporter.batchSizes.isEmpty)
    }

    /// A recorded span: its parent and trace from the context, its status, events, links and attributes,
    /// ended once.
    @Test func aRecordedSpanKeepsWhatItIsGiven() async {
        let exporter = TestExporter(.pass)
        let tracer = tracer(.alwaysOn, exporter: exporter)
        let batch = tracer.startSpan("attache.batch", context: .topLevel)
        let send = tracer.startSpan("attache.send", context: batch.context)
        send.attributes["attache.attempts"] = 2
        send.addEvent(SpanEvent(name: "attache.seal"))
        send.addLink(SpanLink(context: batch.context, attributes: [:]))
        send.recordError(TestError())
        send.setStatus(SpanStatus(code: .error, message: "413"))
        send.operationName = "attache.send!"
        send.end()
        send.end()
        send.attributes["late"] = "ignored"
        batch.end()
        await tracer.processor.forceFlush()
        let spans = exporter.finished
        #expect(spans.map(\.name) == ["attache.send!", "attache.batch"], "ended once each, in order")
        let recorded = spans[0]
        #expect(recorded.context.traceID == batch.spanContext.traceID)
        #expect(recorded.parentSpanID == batch.spanContext.spanID)
        #expect(recorded.parentIsRemote == false)
        #expect(spans[1].parentSpanID == nil)
        #expect(recorded.attributes.get("attache.attempts") == .int64(2))
        #expect(recorded.attributes.get("late") == nil)
        #expect(recorded.events.map(\.name) == ["attache.seal", "exception"])
        #expect(recorded.events.last?.attributes.get("exception.type") == .string("TestError"))
        #expect(recorded.links.map(\.context.spanID) == [batch.spanContext.spanID])
        #expect(recorded.status == SpanStatus(code: .error, message: "413"))
        #expect(recorded.endNanoseconds >= recorded.startNanoseconds && recorded.startNanoseconds > 0)
        #expect(Set(spans.map(\.context.spanID)).count == 2)
    }

    @Test func withoutPropagationNothingIsInjectedOrExtracted() {
        let tracer = tracer(.alwaysOn, propagates: false)
        let span = tracer.startSpan("attache.send", context: .topLevel)
        var headers: [String: String] = [:]
        tracer.inject(span.context, into: &headers, using: DictionaryCarrier())
        #expect(headers.isEmpty)
        var context = InstrumentationContext.topLevel
        tracer.extract(
            ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"], into: &context,
            using: DictionaryCarrier())
        #expect(context.spanContext == nil)
    }

    @Test(arguments: [
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",  // upper case
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero span id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version ff
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more",  // version 00 has four fields
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  // a digit short
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
        "",
    ])
    func anInvalidTraceparentIsNoContext(text: String) {
        #expect(SpanContext(traceparent: text, traceState: "a=b") == nil)
    }

    @Test func aLaterVersionIsReadByItsFirstFourFields() {
        let context = SpanContext(traceparent: "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-what-next", traceState: nil)
        #expect(context?.traceID == TraceID(high: 0x4BF9_2F35_77B3_4DA6, low: 0xA3CE_929D_0E0E_4736))
        #expect(context?.spanID == SpanID(0x00F0_67AA_0BA9_02B7))
        #expect(context?.isSampled == true)
        #expect(context?.isRemote == true)
    }
}

private struct TestError: Error {}

private func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
}

/// Headers as a dictionary, both ways.
struct DictionaryCarrier: Injector, Extractor {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}
