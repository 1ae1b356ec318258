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
        var rules: [(kind: Kind, schedule: FaultSchedule)] = []
        for text in spec.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !text.isEmpty {
            var pieces = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            var head = pieces.removeFirst()
            var schedule = FaultSchedule.always
            if let at = head.firstIndex(of: "@") {
                schedule = try FaultSchedule(parsing: String(head[head.index(after: at)...]), rule: text)
                head = String(head[..<at])
            }
            var options: [String: Int] = [:]
            for piece in pieces {
                let pair = piece.split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2, let value = Int(pair[1]), value > 0 else {
                    throw Self.invalid(text, "expected key=positive number, found '\(piece)'")
                }
                options[pair[0].lowercased()] = value
            }
            let kind: Kind
            let allowed: Set<String>
            switch head.lowercased() {
            case "change": (kind, allowed) = (.change, [])
            case "cut": (kind, allowed) = (.cut(afterBytes: options["after"] ?? 65536), ["after"])
            case "416": (kind, allowed) = (.unsatisfiable, [])
            case "throttle": (kind, allowed) = (.throttle(bytesPerSecond: options["rate"] ?? 1 << 20), ["rate"])
            default: throw Self.invalid(text, "unknown file fault '\(head)' (change, cut, 416, throttle)")
            }
            if let unknown = options.keys.sorted().first(where: { !allowed.contains($0) }) {
                throw Self.invalid(text, "'\(head)' takes no option '\(unknown)'")
            }
            rules.append((kind, schedule))
        }
        self.rules = rules
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

    private static func invalid(_ rule: String, _ reason: String) -> AttacheError {
        AttacheError(.invalidArgument, stage: .configuration, "invalid file fault rule '\(rule)': \(reason)")
    }
}
