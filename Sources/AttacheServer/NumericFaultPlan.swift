/// A fault plan whose rules are kinds with numeric options and a schedule (``AppendFaultPlan``,
/// ``FileFaultPlan``): what they share besides the grammar, written once.
public protocol NumericFaultPlan: Sendable, Hashable, CustomStringConvertible {
    /// What one rule does.
    associatedtype Kind: Sendable, Hashable

    /// The rules with their schedules.
    var rules: [(kind: Kind, schedule: FaultSchedule)] { get }

    /// Creates a plan from rules.
    init(rules: [(kind: Kind, schedule: FaultSchedule)])

    /// How a rule of `kind` is written: its name and its options (`:key=value…`, or empty).
    static func ruleText(of kind: Kind) -> (name: String, options: String)
}

extension NumericFaultPlan {
    /// The plan that injects nothing.
    public static var none: Self { Self(rules: []) }

    /// Whether the plan has no rules.
    public var isEmpty: Bool { rules.isEmpty }

    /// The plan in the grammar it is parsed from.
    public var description: String {
        rules.map { rule in
            let text = Self.ruleText(of: rule.kind)
            return text.name + (rule.schedule == .always ? "" : "@\(rule.schedule)") + text.options
        }.joined(separator: ",")
    }

    /// Plans are equal when they read the same (rules, schedules and options, in order).
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.description == rhs.description }

    /// Hashes the plan's text.
    public func hash(into hasher: inout Hasher) { hasher.combine(description) }
}
