import Attache
import Foundation

/// Faults the reference server injects into `GET /files/{id}`, so that download clients' resume,
/// `If-Range` and error handling can be tested against a real socket.
///
/// Written like a ``FaultPlan``: `RULE[,RULE…]`, `RULE = KIND[@WHEN][:key=value…]`, where `WHEN` counts
/// the `GET /files` requests of the run (1-based; `N`, `N-M`, `*`, `P%`). Unlike upload faults, every
/// matching rule applies, so `change@2,throttle:rate=100000` changes the file at the second request
/// and throttles every request.
///
/// | KIND | effect | keys |
/// |------|--------|------|
/// | `change` | before answering, replace the file's bytes with their complement (each byte XOR 0xFF): a new ETag and Last-Modified | |
/// | `cut` | send that many body bytes, then reset the connection | `after` (default 65536) |
/// | `416` | answer 416 Range Not Satisfiable whatever the range | |
/// | `throttle` | send the body at about that many bytes per second | `rate` (default 1048576) |
///
/// ```swift
/// configuration.fileFaults = try FileFaultPlan(parsing: "cut@1:after=100000")
/// ```
public struct FileFaultPlan: Sendable, Hashable, CustomStringConvertible {
    /// What one rule does.
    public enum Kind: Sendable, Hashable {
        /// Replace the stored bytes with their complement before answering.
        case change
        /// Send `afterBytes` of the body, then reset the connection.
        case cut(afterBytes: Int)
        /// Answer 416.
        case unsatisfiable
        /// Send the body at about `bytesPerSecond`.
        case throttle(bytesPerSecond: Int)
    }

    /// The rules with their schedules.
    public var rules: [(kind: Kind, schedule: FaultSchedule)]

    /// The plan that injects nothing.
    public static let none = FileFaultPlan(rules: [])

    /// Creates a plan from rules.
    public init(rules: [(kind: Kind, schedule: FaultSchedule)]) { self.rules = rules }

    /// Parses a plan; an empty string is ``none``.
    /// - Throws: ``AttacheError/Code/invalidArgument`` naming the rule that cannot be parsed.
    public init(parsing spec: String) throws {
        rules = try NumericFaultRule.parse(spec, noun: "file fault").map { rule in
            let kind: Kind
            switch rule.kind {
            case "change":
                try rule.checkOptions(allowed: [])
                kind = .change
            case "cut":
                try rule.checkOptions(allowed: ["after"])
                kind = .cut(afterBytes: Int(rule.options["after"] ?? 65536))
            case "416":
                try rule.checkOptions(allowed: [])
                kind = .unsatisfiable
            case "throttle":
                try rule.checkOptions(allowed: ["rate"])
                kind = .throttle(bytesPerSecond: Int(rule.options["rate"] ?? 1 << 20))
            default: throw rule.invalid("unknown file fault '\(rule.kind)' (change, cut, 416, throttle)")
            }
            return (kind, rule.schedule)
        }
    }

    /// The kinds that apply to the `count`th request.
    public func faults(forRequest count: Int) -> [Kind] {
        rules.filter { $0.schedule.matches(count) }.map(\.kind)
    }

    /// Whether the plan has no rules.
    public var isEmpty: Bool { rules.isEmpty }

    /// The plan in the grammar it is parsed from.
    public var description: String {
        rules.map { rule in
            var text: String
            switch rule.kind {
            case .change: text = "change"
            case .cut: text = "cut"
            case .unsatisfiable: text = "416"
            case .throttle: text = "throttle"
            }
            if rule.schedule != .always { text += "@\(rule.schedule)" }
            switch rule.kind {
            case .cut(let after): text += ":after=\(after)"
            case .throttle(let rate): text += ":rate=\(rate)"
            case .change, .unsatisfiable: break
            }
            return text
        }.joined(separator: ",")
    }

    /// Plans are equal when they read the same (rules, schedules and options, in order).
    public static func == (lhs: FileFaultPlan, rhs: FileFaultPlan) -> Bool { lhs.description == rhs.description }
    /// Hashes the plan's text.
    public func hash(into hasher: inout Hasher) { hasher.combine(description) }
}
