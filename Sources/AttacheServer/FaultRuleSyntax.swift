import Attache
import Foundation

/// One rule of a fault plan as written, `KIND[@WHEN][:key=value…]`, split but not yet understood:
/// the one parser of the grammar that ``FaultPlan``, ``FileFaultPlan`` and ``AppendFaultPlan`` share.
///
/// Each plan maps ``kind`` to its own cases and says which options a kind takes
/// (``checkOptions(allowed:)``); splitting, the schedule, percent-decoding and number checks are done here.
struct FaultRuleSyntax {
    /// The rule as written, for error messages.
    let text: String
    /// The kind, lowercased (`503`, `drop`, `cut`, …).
    let kind: String
    /// When it applies (``FaultSchedule/always`` without `@WHEN`).
    let schedule: FaultSchedule
    /// The options, keys lowercased, values percent-decoded.
    let options: [String: String]
    /// What the plan calls its rules in messages ("fault", "append fault", "file fault").
    let noun: String

    /// Splits `spec` at commas into rules; blank rules are skipped, so an empty spec gives none.
    /// - Throws: ``AttacheError/Code/invalidArgument`` naming the first rule that cannot be read.
    static func rules(in spec: String, noun: String) throws -> [FaultRuleSyntax] {
        try spec.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            .map { try FaultRuleSyntax(parsing: $0, noun: noun) }
    }

    /// Splits one rule.
    /// - Throws: ``AttacheError/Code/invalidArgument`` when its schedule or an option is malformed.
    init(parsing text: String, noun: String) throws {
        let pieces = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        var head = pieces[0]
        var schedule = FaultSchedule.always
        if let at = head.firstIndex(of: "@") {
            schedule = try FaultSchedule(parsing: String(head[head.index(after: at)...]), rule: text)
            head = String(head[..<at])
        }
        var options: [String: String] = [:]
        for piece in pieces.dropFirst() {
            guard let equals = piece.firstIndex(of: "="), equals != piece.startIndex else {
                throw invalidRule(text, "expected key=value, found '\(piece)'", noun: noun)
            }
            let raw = String(piece[piece.index(after: equals)...])
            options[piece[..<equals].lowercased()] = raw.percentDecoded() ?? raw
        }
        self.text = text
        self.kind = head.lowercased()
        self.schedule = schedule
        self.options = options
        self.noun = noun
    }

    /// Throws when the rule has an option its kind does not take.
    func checkOptions(allowed: Set<String>) throws {
        if let unknown = options.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw invalid("'\(kind)' takes no option '\(unknown)'")
        }
    }

    /// The positive whole number of option `key`, or `value` when the rule does not give it.
    func number(_ key: String, default value: Int64) throws -> Int64 {
        guard let text = options[key] else { return value }
        guard let number = Int64(text), number > 0 else { throw invalid("expected \(key)=positive number, found '\(text)'") }
        return number
    }

    /// An error naming this rule.
    func invalid(_ reason: String) -> AttacheError { invalidRule(text, reason, noun: noun) }
}

/// The error for a rule of a fault plan that cannot be read.
func invalidRule(_ rule: String, _ reason: String, noun: String = "fault") -> AttacheError {
    AttacheError(.invalidArgument, stage: .configuration, "invalid \(noun) rule '\(rule)': \(reason)")
}
