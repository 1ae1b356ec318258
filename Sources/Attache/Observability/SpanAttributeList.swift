package import Tracing

/// A span's attributes in the order they were first set, a later value replacing the earlier one of its
/// key: what Attache's own spans keep and its hooks write.
///
/// swift-distributed-tracing's `SpanAttributes` is a dictionary: each key set is hashed, the table grows
/// and rehashes as a span gains its ten-odd attributes, and reading them back for export goes through a
/// closure per entry. A span has few attributes, so a scan of a short array finds a key as soon, and
/// setting one is an append. Spans of other tracers still get `SpanAttributes` (see
/// ``TelemetrySpan/update(_:)``).
///
/// ```swift
/// var attributes = SpanAttributeList()
/// attributes.put("http.request.method", "POST")
/// attributes.put("http.response.status_code", 200)
/// ```
package struct SpanAttributeList: Sendable, ExpressibleByDictionaryLiteral {
    // Two arrays rather than one of pairs: an array of tuples is copied and destroyed through the tuple's
    // run-time value witnesses, an array of `String` or of `SpanAttribute` by specialized code.
    /// The keys, in the order they were first set.
    package private(set) var keys: [String] = []
    /// The value of each key, at the key's index.
    package private(set) var values: [SpanAttribute] = []

    /// No attributes.
    package init() {}

    /// The attributes of `attributes`, in the dictionary's order.
    package init(_ attributes: SpanAttributes) {
        var keys: [String] = []
        var values: [SpanAttribute] = []
        keys.reserveCapacity(attributes.count)
        values.reserveCapacity(attributes.count)
        attributes.forEach { key, value in
            keys.append(key)
            values.append(value)
        }
        self.keys = keys
        self.values = values
    }

    /// The attributes of a literal.
    package init(dictionaryLiteral elements: (String, SpanAttribute)...) {
        for (key, value) in elements { set(key, value: value) }
    }

    /// Whether there are none.
    package var isEmpty: Bool { keys.isEmpty }

    /// How many there are.
    package var count: Int { keys.count }

    /// Makes room for `count` attributes in all.
    package mutating func reserveCapacity(_ count: Int) {
        keys.reserveCapacity(count)
        values.reserveCapacity(count)
    }

    /// The value of `key`, if it is set.
    package func get(_ key: String) -> SpanAttribute? {
        index(of: key).map { values[$0] }
    }

    /// Sets `key` to `value`; nil removes it.
    package mutating func set(_ key: String, value: SpanAttribute?) {
        switch (index(of: key), value) {
        case (let index?, let value?): values[index] = value
        case (let index?, nil):
            keys.remove(at: index)
            values.remove(at: index)
        case (nil, let value?):
            keys.append(key)
            values.append(value)
        case (nil, nil): break
        }
    }

    /// Where `key` is. Lengths first: two keys of a span mostly differ in length, which a native string
    /// knows at once, where comparing two long strings of the same prefix (`attache.stage.…`) walks them.
    private func index(of key: String) -> Int? {
        let length = key.utf8.count
        return keys.firstIndex { $0.utf8.count == length && $0 == key }
    }

    /// Sets `key` to a string.
    package mutating func put(_ key: String, _ value: String) { set(key, value: .string(value)) }
    /// Sets `key` to an integer.
    package mutating func put(_ key: String, _ value: Int) { set(key, value: .int64(Int64(value))) }
    /// Sets `key` to an integer.
    package mutating func put(_ key: String, _ value: Int64) { set(key, value: .int64(value)) }
    /// Sets `key` to a flag.
    package mutating func put(_ key: String, _ value: Bool) { set(key, value: .bool(value)) }
    /// Sets `key` to a number.
    package mutating func put(_ key: String, _ value: Double) { set(key, value: .double(value)) }

    /// The same attributes as swift-distributed-tracing's type.
    package var spanAttributes: SpanAttributes {
        var attributes = SpanAttributes()
        attributes.reserveCapacity(keys.count)
        for index in keys.indices { attributes.set(keys[index], value: values[index]) }
        return attributes
    }
}

/// A span that keeps its attributes as a ``SpanAttributeList`` (the spans of Attache's OTLP tracer), so
/// that Attache's hooks write them there instead of through `SpanAttributes`.
package protocol AttributeListSpan: Span {
    /// Runs `body` on the span's attributes, in place; a span that records nothing (sampled out, or
    /// ended) hands it a list that is thrown away.
    func updateAttributeList(_ body: (inout SpanAttributeList) -> Void)

    /// Adds an event `name` at `nanoseconds` since the Unix epoch, with `attributes`.
    func addEvent(_ name: String, atNanoseconds nanoseconds: UInt64, attributes: SpanAttributeList)
}

/// A tracer whose spans are ``AttributeListSpan``s; ``Telemetry`` starts its spans through it.
package protocol AttributeListTracer: Tracer {
    /// Starts a span `name` of `kind` in `context`, now.
    func startAttributeListSpan(_ name: String, context: InstrumentationContext, ofKind kind: SpanKind)
        -> any AttributeListSpan

    /// The header fields that carry `context` onward (W3C `traceparent`, and `tracestate`), or none: what
    /// `inject` writes, without its generic carrier.
    func propagationFields(of context: InstrumentationContext) -> [HeaderField]
}
