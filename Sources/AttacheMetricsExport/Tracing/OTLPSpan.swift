import AttacheCore
package import Attache
package import Tracing

/// A span of ``OTLPTracer``: recorded under a lock while it runs, handed to the batch processor as a
/// ``FinishedSpan`` when it ends.
///
/// A span the sampler left out holds its context and nothing else: no lock, no attributes, and every
/// setter returns at once.
package final class OTLPSpan: AttributeListSpan, @unchecked Sendable {
    // Checked `Sendable` by hand: the `let`s never change, and every `var` is read and written with
    // `lock` held; a span that is not recording has no lock and never changes a `var`.
    package let context: InstrumentationContext
    /// This span's W3C context.
    package let spanContext: SpanContext
    private let parent: SpanContext?
    private let kind: SpanKind
    private let startNanoseconds: UInt64
    private let processor: BatchSpanProcessor?
    private let lock: Lock?
    private var name: String
    private var recordedAttributes = SpanAttributeList()
    private var events: [FinishedSpan.Event] = []
    private var links: [FinishedSpan.Link] = []
    private var status: SpanStatus?
    private var hasEnded = false

    /// A span that records into `processor` (nil: sampled out) and ends there.
    init(
        name: String, context: InstrumentationContext, spanContext: SpanContext, parent: SpanContext?, kind: SpanKind,
        startNanoseconds: UInt64, processor: BatchSpanProcessor?
    ) {
        self.name = name
        self.context = context
        self.spanContext = spanContext
        self.parent = parent
        self.kind = kind
        self.startNanoseconds = startNanoseconds
        self.processor = processor
        self.lock = processor == nil ? nil : Lock()
    }

    package var operationName: String {
        get {
            guard let lock else { return name }
            return lock.withLock { name }
        }
        set {
            lock?.withLock { if !hasEnded { name = newValue } }
        }
    }

    package var isRecording: Bool {
        guard let lock else { return false }
        return lock.withLock { !hasEnded }
    }

    /// The attributes as swift-distributed-tracing's type, for code that sets them through the `Span`
    /// protocol (Hummingbird's middleware, a library user's spans): each access converts the span's
    /// list. Attache's own hooks write the list in place (``updateAttributeList(_:)``).
    package var attributes: SpanAttributes {
        get { lock?.withLock { recordedAttributes.spanAttributes } ?? SpanAttributes() }
        set { lock?.withLock { if !hasEnded { recordedAttributes = SpanAttributeList(newValue) } } }
    }

    package func updateAttributeList(_ body: (inout SpanAttributeList) -> Void) {
        guard let lock else {
            var discarded = SpanAttributeList()
            return body(&discarded)
        }
        lock.lock()
        defer { lock.unlock() }
        if hasEnded {
            var discarded = SpanAttributeList()
            body(&discarded)
        } else {
            body(&recordedAttributes)
        }
    }

    package func setStatus(_ status: SpanStatus) {
        // OpenTelemetry: Ok is final; otherwise the last status set wins.
        lock?.withLock { if !hasEnded, self.status?.code != .ok { self.status = status } }
    }

    package func addEvent(_ event: SpanEvent) {
        guard let lock else { return }
        let event = FinishedSpan.Event(event)
        lock.withLock { if !hasEnded { events.append(event) } }
    }

    package func addEvent(_ name: String, atNanoseconds nanoseconds: UInt64, attributes: SpanAttributeList) {
        lock?.withLock {
            if !hasEnded {
                events.append(FinishedSpan.Event(name: name, nanosecondsSinceEpoch: nanoseconds, attributes: attributes))
            }
        }
    }

    /// Records an `exception` event with `exception.type`, the error's type. Not its description: an
    /// error's message may name a file or carry a URL's query, which Attache never exports.
    package func recordError<Instant: TracerInstant>(
        _ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant
    ) {
        guard lock != nil else { return }
        var attributes = attributes
        attributes.set("exception.type", value: .string(String(describing: type(of: error))))
        addEvent(SpanEvent(name: "exception", at: instant(), attributes: attributes))
    }

    package func addLink(_ link: SpanLink) {
        guard let lock, let linked = link.context.spanContext else { return }
        lock.withLock { if !hasEnded { links.append(FinishedSpan.Link(context: linked, attributes: link.attributes)) } }
    }

    package func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        guard let lock, let processor else { return }
        let end = instant().nanosecondsSinceEpoch
        let finished: FinishedSpan? = lock.withLock {
            guard !hasEnded else { return nil }
            hasEnded = true
            return FinishedSpan(
                context: spanContext, parentSpanID: parent?.spanID, parentIsRemote: parent?.isRemote ?? false,
                name: name, kind: kind, startNanoseconds: startNanoseconds, endNanoseconds: max(end, startNanoseconds),
                attributes: recordedAttributes, events: events, links: links, status: status)
        }
        if let finished { processor.add(finished) }
    }
}
