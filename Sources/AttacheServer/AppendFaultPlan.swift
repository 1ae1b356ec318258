import Attache
import Foundation

/// Faults the reference server injects into the requests that append to a resumable upload (tus
/// `PATCH`, tus creation-with-upload, IETF `POST` and `PATCH`), so that clients' resume logic can be
/// tested against a real socket.
///
/// Written like a ``FaultPlan``: `RULE[,RULE…]`, `RULE = KIND[@WHEN][:key=value…]`, where `WHEN` counts
/// the appending requests of the run (1-based; `N`, `N-M`, `*`, `P%`). The first matching rule applies.
///
/// | KIND | effect | keys |
/// |------|--------|------|
/// | `drop` | keep that many body bytes of the request, then reset the connection without an answer | `after` (default 1048576) |
/// | `cut` | reset the connection of the append during which the upload reaches that offset, keeping the bytes before it | `at` (required) |
/// | `stall` | keep that many body bytes, then stop reading for a while and close | `after` (default 1048576), `seconds` (default 30) |
/// | `460` | read the whole chunk, discard it and answer `460 Checksum Mismatch` | |
///
/// ```swift
/// configuration.appendFaults = try AppendFaultPlan(parsing: "drop@1-3:after=50000000")
/// ```
public struct AppendFaultPlan: NumericFaultPlan {
    /// What one rule does.
    public enum Kind: Sendable, Hashable {
        /// Keep `afterBytes` of the body, then reset the connection.
        case drop(afterBytes: Int64)
        /// Keep the bytes before upload offset `offset`, then reset the connection (only the append that
        /// crosses it).
        case cut(atOffset: Int64)
        /// Keep `afterBytes` of the body, then stall for `seconds` and close.
        case stall(afterBytes: Int64, seconds: Int)
        /// Discard the chunk and answer 460.
        case checksumMismatch
    }

    /// The rules with their schedules.
    public var rules: [(kind: Kind, schedule: FaultSchedule)]

    /// Creates a plan from rules.
    public init(rules: [(kind: Kind, schedule: FaultSchedule)]) { self.rules = rules }

    /// Parses a plan; an empty string is ``NumericFaultPlan/none``.
    /// - Throws: ``AttacheError/Code/invalidArgument`` naming the rule that cannot be parsed.
    public init(parsing spec: String) throws {
        rules = try FaultRuleSyntax.rules(in: spec, noun: "append fault").map { (try Kind($0), $0.schedule) }
    }

    /// The fault for the `count`th appending request, which appends from `offset` up to `end` (nil when
    /// unknown), or nil. A `cut` applies only to the append that crosses its offset.
    public func fault(forRequest count: Int, offset: Int64 = 0, end: Int64? = nil) -> Kind? {
        rules.first { rule in
            guard rule.schedule.matches(count) else { return false }
            if case .cut(let at) = rule.kind { return offset < at && (end ?? .max) > at }
            return true
        }?.kind
    }

    /// How a rule of `kind` is written.
    public static func ruleText(of kind: Kind) -> (name: String, options: String) {
        switch kind {
        case .drop(let after): ("drop", ":after=\(after)")
        case .stall(let after, let seconds): ("stall", ":after=\(after):seconds=\(seconds)")
        case .checksumMismatch: ("460", "")
        case .cut(let at): ("cut", ":at=\(at)")
        }
    }
}

extension AppendFaultPlan.Kind {
    init(_ rule: FaultRuleSyntax) throws {
        switch rule.kind {
        case "drop":
            try rule.checkOptions(allowed: ["after"])
            self = .drop(afterBytes: try rule.number("after", default: 1 << 20))
        case "stall":
            try rule.checkOptions(allowed: ["after", "seconds"])
            self = .stall(afterBytes: try rule.number("after", default: 1 << 20), seconds: Int(try rule.number("seconds", default: 30)))
        case "460":
            try rule.checkOptions(allowed: [])
            self = .checksumMismatch
        case "cut":
            guard rule.options["at"] != nil else { throw rule.invalid("cut needs at=OFFSET") }
            try rule.checkOptions(allowed: ["at"])
            self = .cut(atOffset: try rule.number("at", default: 0))
        default: throw rule.invalid("unknown append fault '\(rule.kind)' (drop, cut, stall, 460)")
        }
    }
}
