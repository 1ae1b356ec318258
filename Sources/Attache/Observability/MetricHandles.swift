import AttacheCore
import CoreMetrics

/// The counters, timers and meters a ``Telemetry`` has made, kept by name and dimensions so that each is
/// made once: making one asks the factory (a Prometheus registry, OpenTelemetry's, both under a
/// multiplexer), which looks the series up under a lock and, for Prometheus, rewrites its name each time.
/// A hook then costs one lookup here instead.
///
/// At most ``limit`` series are kept; past that (dimensions with unbounded values) each reading makes its
/// handle again, as without the cache, so memory stays bounded.
final class MetricHandles: Sendable {
    /// The most series kept.
    static let limit = 4_096

    private let factory: any MetricsFactory
    private let state = LockedValue(State())

    private struct State {
        var counters: [SeriesKey: Counter] = [:]
        var timers: [SeriesKey: CoreMetrics.Timer] = [:]
        var meters: [SeriesKey: Meter] = [:]
        var attempts: [AttemptKey: CoreMetrics.Timer] = [:]
        var count: Int { counters.count + timers.count + meters.count + attempts.count }
    }

    init(factory: any MetricsFactory) { self.factory = factory }

    /// The counter `name` with `dimensions`.
    func counter(_ name: MetricName, _ dimensions: [(String, String)]) -> Counter {
        let key = SeriesKey(name: name, dimensions: dimensions)
        return handle(find: { $0.counters[key] }, keep: { $0.counters[key] = $1 }) {
            Counter(label: name.rawValue, dimensions: dimensions, factory: factory)
        }
    }

    /// The timer `name` with `dimensions`.
    func timer(_ name: MetricName, _ dimensions: [(String, String)]) -> CoreMetrics.Timer {
        let key = SeriesKey(name: name, dimensions: dimensions)
        return handle(find: { $0.timers[key] }, keep: { $0.timers[key] = $1 }) {
            CoreMetrics.Timer(label: name.rawValue, dimensions: dimensions, factory: factory)
        }
    }

    /// The meter `name` with `dimensions`.
    func meter(_ name: MetricName, _ dimensions: [(String, String)]) -> Meter {
        let key = SeriesKey(name: name, dimensions: dimensions)
        return handle(find: { $0.meters[key] }, keep: { $0.meters[key] = $1 }) {
            Meter(label: name.rawValue, dimensions: dimensions, factory: factory)
        }
    }

    /// The timer of `http.client.request.duration` for an attempt described by `key`; `dimensions` makes
    /// its dimensions the first time. Kept by the attempt's few facts: the dimensions (a dozen strings,
    /// two of them formatted numbers) are neither made nor hashed again for every request.
    func attemptTimer(_ key: AttemptKey, dimensions: () -> [(String, String)]) -> CoreMetrics.Timer {
        handle(find: { $0.attempts[key] }, keep: { $0.attempts[key] = $1 }) {
            timer(.httpClientRequestDuration, dimensions())
        }
    }

    /// The handle `find` finds, else one `make` makes, which `keep` keeps while there are fewer than
    /// ``limit``. (Closures rather than a key path to the table: a key path is projected at run time.)
    private func handle<Handle: Sendable>(
        find: (State) -> Handle?, keep: (inout State, Handle) -> Void, make: () -> Handle
    ) -> Handle {
        if let kept = state.withLock({ find($0) }) { return kept }
        let made = make()
        return state.withLock { state in
            if let kept = find(state) { return kept }
            if state.count < Self.limit { keep(&state, made) }
            return made
        }
    }
}

/// A metric's name and dimensions, in their order, as a dictionary key.
struct SeriesKey: Hashable, Sendable {
    let name: MetricName
    let dimensions: [(String, String)]

    static func == (lhs: SeriesKey, rhs: SeriesKey) -> Bool {
        lhs.name == rhs.name && lhs.dimensions.count == rhs.dimensions.count
            && zip(lhs.dimensions, rhs.dimensions).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    /// The values only: a metric's dimension names are the same from one reading to the next, and a table
    /// holds a few metrics whose series differ in their values, so hashing the names (the metric's and
    /// the dimensions', a dozen strings) would only cost. Equality still compares them all.
    func hash(into hasher: inout Hasher) {
        hasher.combine(dimensions.count)
        for (_, value) in dimensions { hasher.combine(value) }
    }
}

/// What makes one attempt's series of `http.client.request.duration` (``MetricHandles/attemptTimer(_:dimensions:)``).
struct AttemptKey: Hashable, Sendable {
    let operation: ClientOperation
    let method: String
    let host: String
    let port: Int
    let status: Int?
    let failure: AttacheError.Code?
}
