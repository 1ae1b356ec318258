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
public struct FileFaultPlan: NumericFaultPlan {
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

    /// The rules with their schedules; every rule whose schedule matches applies.
    public var rules: [(kind: Kind, schedule: FaultSchedule)]

    /// Creates a plan from rules.
    public init(rules: [(kind: Kind, schedule: FaultSchedule)]) { self.rules = rules }

    /// Parses a plan; an empty string is ``NumericFaultPlan/none``.
    /// - Throws: ``AttacheError/Code/invalidArgument`` naming the rule that cannot be parsed.
    public init(parsing spec: String) throws {
        rules = try FaultRuleSyntax.rules(in: spec, noun: "file fault").map { (try Kind($0), $0.schedule) }
    }

    /// The kinds that apply to the `count`th request.
    public func faults(forRequest count: Int) -> [Kind] {
        rules.filter { $0.schedule.matches(count) }.map(\.kind)
    }

    /// How a rule of `kind` is written.
    public static func ruleText(of kind: Kind) -> (name: String, options: String) {
        switch kind {
        case .change: ("change", "")
        case .cut(let after): ("cut", ":after=\(after)")
        case .unsatisfiable: ("416", "")
        case .throttle(let rate): ("throttle", ":rate=\(rate)")
        }
    }
}

extension FileFaultPlan.Kind {
    /// The options each kind takes; a kind not listed takes none.
    private static let options: [String: Set<String>] = ["cut": ["after"], "throttle": ["rate"]]

    init(_ rule: FaultRuleSyntax) throws {
        switch rule.kind {
        case "change": self = .change
        case "cut": self = .cut(afterBytes: Int(try rule.number("after", default: 65536)))
        case "416": self = .unsatisfiable
        case "throttle": self = .throttle(bytesPerSecond: Int(try rule.number("rate", default: 1 << 20)))
        default: throw rule.invalid("unknown file fault '\(rule.kind)' (change, cut, 416, throttle)")
        }
        try rule.checkOptions(allowed: Self.options[rule.kind] ?? [])
    }
}
