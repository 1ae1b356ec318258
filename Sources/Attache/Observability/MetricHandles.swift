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
        var count: Int { counters.count + timers.count + meters.count }
    }

    init(factory: any MetricsFactory) { self.factory = factory }

    /// The counter `name` with `dimensions`.
    func counter(_ name: MetricName, _ dimensions: [(String, String)]) -> Counter {
        handle(name, dimensions, \.counters) { Counter(label: name.rawValue, dimensions: dimensions, factory: factory) }
    }

    /// The timer `name` with `dimensions`.
    func timer(_ name: MetricName, _ dimensions: [(String, String)]) -> CoreMetrics.Timer {
        handle(name, dimensions, \.timers) { CoreMetrics.Timer(label: name.rawValue, dimensions: dimensions, factory: factory) }
    }

    /// The meter `name` with `dimensions`.
    func meter(_ name: MetricName, _ dimensions: [(String, String)]) -> Meter {
        handle(name, dimensions, \.meters) { Meter(label: name.rawValue, dimensions: dimensions, factory: factory) }
    }

    /// The handle kept in `table` for the series, else one `make` makes (kept while under ``limit``).
    private func handle<Handle: Sendable>(
        _ name: MetricName, _ dimensions: [(String, String)], _ table: WritableKeyPath<State, [SeriesKey: Handle]> & Sendable,
        make: () -> Handle
    ) -> Handle {
        let key = SeriesKey(name: name, dimensions: dimensions)
        if let kept = state.withLock({ $0[keyPath: table][key] }) { return kept }
        let made = make()
        return state.withLock { state in
            if let kept = state[keyPath: table][key] { return kept }
            if state.count < Self.limit { state[keyPath: table][key] = made }
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

    func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(dimensions.count)
        for (key, value) in dimensions {
            hasher.combine(key)
            hasher.combine(value)
        }
    }
}
