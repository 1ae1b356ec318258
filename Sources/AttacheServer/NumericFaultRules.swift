import Attache
import Foundation

/// The rules of a fault plan whose options are all positive numbers (``AppendFaultPlan``,
/// ``FileFaultPlan``), split but not yet understood: `RULE[,RULE…]`, `RULE = KIND[@WHEN][:key=N…]`.
///
/// Each plan maps a rule's ``kind`` to its own cases and says which options that kind takes
/// (``checkOptions(allowed:)``); the splitting, the schedule and the number checks are done here once.
struct NumericFaultRule {
    /// The rule as written, for error messages.
    let text: String
    /// The kind, lowercased (`drop`, `cut`, `460`, …).
    let kind: String
    /// When it applies (``FaultSchedule/always`` without `@WHEN`).
    let schedule: FaultSchedule
    /// The options, keys lowercased.
    let options: [String: Int64]
    /// What the plan calls its rules in messages ("append fault", "file fault").
    let noun: String

    /// Splits `spec` into rules; an empty spec gives none.
    /// - Throws: ``AttacheError/Code/invalidArgument`` naming the rule whose schedule or options
    ///   cannot be read.
    static func parse(_ spec: String, noun: String) throws -> [NumericFaultRule] {
        var rules: [NumericFaultRule] = []
        for text in spec.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !text.isEmpty {
            var pieces = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            var head = pieces.removeFirst()
            var schedule = FaultSchedule.always
            if let at = head.firstIndex(of: "@") {
                schedule = try FaultSchedule(parsing: String(head[head.index(after: at)...]), rule: text)
                head = String(head[..<at])
            }
            var options: [String: Int64] = [:]
            for piece in pieces {
                let pair = piece.split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2, let value = Int64(pair[1]), value > 0 else {
                    throw invalid(noun, text, "expected key=positive number, found '\(piece)'")
                }
                options[pair[0].lowercased()] = value
            }
            rules.append(
                NumericFaultRule(text: text, kind: head.lowercased(), schedule: schedule, options: options, noun: noun))
        }
        return rules
    }

    /// Throws when the rule has an option its kind does not take.
    func checkOptions(allowed: Set<String>) throws {
        if let unknown = options.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw invalid("'\(kind)' takes no option '\(unknown)'")
        }
    }

    /// An error naming this rule.
    func invalid(_ reason: String) -> AttacheError { Self.invalid(noun, text, reason) }

    private static func invalid(_ noun: String, _ rule: String, _ reason: String) -> AttacheError {
        AttacheError(.invalidArgument, stage: .configuration, "invalid \(noun) rule '\(rule)': \(reason)")
    }
}
