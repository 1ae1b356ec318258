package import Attache
package import Tracing

/// An ended span as it waits for export: everything the OTLP encoder writes, nothing more.
package struct FinishedSpan: Sendable {
    /// The span's own context (trace, id, flags, `tracestate`).
    package var context: SpanContext
    /// The parent span, if any.
    package var parentSpanID: SpanID?
    /// Whether the parent came from another process (`extract`).
    package var parentIsRemote: Bool
    /// The operation name.
    package var name: String
    /// Server, client, internal, producer or consumer.
    package var kind: SpanKind
    /// Start and end, nanoseconds since the Unix epoch.
    package var startNanoseconds: UInt64
    package var endNanoseconds: UInt64
    /// The attributes as set last, in the order they were first set.
    package var attributes: SpanAttributeList
    /// Events in the order they were added.
    package var events: [Event]
    /// Links to other spans.
    package var links: [Link]
    /// The status, if one was set.
    package var status: SpanStatus?

    /// Something that happened during the span.
    package struct Event: Sendable {
        /// What happened.
        package var name: String
        /// When, nanoseconds since the Unix epoch.
        package var nanosecondsSinceEpoch: UInt64
        /// What the event says.
        package var attributes: SpanAttributeList

        /// Creates an event.
        package init(name: String, nanosecondsSinceEpoch: UInt64, attributes: SpanAttributeList) {
            self.name = name
            self.nanosecondsSinceEpoch = nanosecondsSinceEpoch
            self.attributes = attributes
        }

        /// The event swift-distributed-tracing's `Span.addEvent` hands over.
        package init(_ event: SpanEvent) {
            self.init(
                name: event.name, nanosecondsSinceEpoch: event.nanosecondsSinceEpoch,
                attributes: SpanAttributeList(event.attributes))
        }
    }

    /// A link to another span's context.
    package struct Link: Sendable {
        /// The span linked to.
        package var context: SpanContext
        /// What the link says.
        package var attributes: SpanAttributes

        /// Creates a link.
        package init(context: SpanContext, attributes: SpanAttributes) {
            self.context = context
            self.attributes = attributes
        }
    }

    /// Creates a span record.
    package init(
        context: SpanContext, parentSpanID: SpanID?, parentIsRemote: Bool = false, name: String, kind: SpanKind,
        startNanoseconds: UInt64, endNanoseconds: UInt64, attributes: SpanAttributeList = [:], events: [Event] = [],
        links: [Link] = [], status: SpanStatus? = nil
    ) {
        self.context = context
        self.parentSpanID = parentSpanID
        self.parentIsRemote = parentIsRemote
        self.name = name
        self.kind = kind
        self.startNanoseconds = startNanoseconds
        self.endNanoseconds = endNanoseconds
        self.attributes = attributes
        self.events = events
        self.links = links
        self.status = status
    }
}
