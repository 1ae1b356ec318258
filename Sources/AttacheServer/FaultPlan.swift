import Attache
import Foundation

/// A list of faults the reference server injects into `POST /upload`, so that clients' retry, timeout
/// and error handling can be tested against a real socket.
///
/// A plan is written as `RULE[,RULE…]` with `RULE = KIND[@WHEN][:key=value[:key=value]]`:
///
/// | KIND | effect | keys |
/// |------|--------|------|
/// | `500` `502` `503` `504` `408` | drain the body, answer that status with a small JSON error | `retry-after` |
/// | `429` | drain the body, answer 429 with `Retry-After` | `retry-after` (default 1) |
/// | `413` | answer 413 before reading the body and close the connection | |
/// | `stall` | read the head, then neither read nor answer for a while, then close | `seconds` (default 30) |
/// | `drop` | read some body bytes, then reset the connection without an answer | `after` (default 65536) |
/// | `garbage` | 200 with an HTML page | |
/// | `empty` | 200 with an empty body | |
/// | `truncated` | 200 JSON cut in the middle: `Content-Length` larger than what is sent, then close | |
/// | `business` | 200 with `{"errorCode":N,"message":…}` | `code` (default 1001), `message` |
/// | `crash` | kill the server (SIGKILL) at a point of the request's commit; per-run plans only | `at`: `after-part`, `after-files` (default), `after-key` |
///
/// `WHEN` is `N` (the Nth request, 1-based), `N-M`, `*` (every request, the default) or `P%` (each
/// request with probability P). In a per-run plan (`attache-server --fault`) requests are counted
/// over all `POST /upload`s; in the `X-Attache-Fault` header they are the attempts of one
/// `Idempotency-Key`, so `503@1` fails the first attempt of an upload and lets its retry succeed.
/// Values may be percent-encoded (`message=quota%20exceeded`), which is how a value can contain
/// `,` or `:`.
///
/// ```swift
/// var configuration = ReferenceServerConfiguration(storeDirectory: "/tmp/store")
/// configuration.faults = try FaultPlan(parsing: "503@1-2:retry-after=1,drop@5:after=1024")
/// ```
public struct FaultPlan: Sendable, Hashable, CustomStringConvertible {
    /// The rules, checked in order; the first one whose schedule matches applies.
    public var rules: [FaultRule]

    /// The plan that injects nothing.
    public static let none = FaultPlan(rules: [])

    /// Creates a plan from rules.
    public init(rules: [FaultRule]) { self.rules = rules }

    /// Parses a plan written in the grammar above; an empty string is ``none``.
    ///
    /// - Throws: ``AttacheError/Code/invalidArgument`` naming the rule that cannot be parsed.
    public init(parsing spec: String) throws {
        rules = try FaultRuleSyntax.rules(in: spec, noun: "fault").map(FaultRule.init(syntax:))
    }

    /// Whether the plan has no rules.
    public var isEmpty: Bool { rules.isEmpty }

    /// The fault for the `count`th request (1-based), or `nil` when the request goes through.
    public func fault(forRequest count: Int) -> FaultKind? {
        rules.first { $0.schedule.matches(count) }?.kind
    }

    /// Appends the rules of `other`, which are checked after this plan's own.
    public mutating func append(_ other: FaultPlan) { rules += other.rules }

    /// The plan in the grammar it is parsed from.
    public var description: String { rules.map(\.description).joined(separator: ",") }
}

/// One rule of a ``FaultPlan``: what to do and when.
public struct FaultRule: Sendable, Hashable, CustomStringConvertible {
    /// What happens to a matching request.
    public var kind: FaultKind
    /// Which requests match.
    public var schedule: FaultSchedule

    /// Creates a rule.
    public init(_ kind: FaultKind, when schedule: FaultSchedule = .always) {
        self.kind = kind
        self.schedule = schedule
    }

    /// Parses `KIND[@WHEN][:key=value…]`.
    /// - Throws: ``AttacheError/Code/invalidArgument`` when the rule is malformed.
    public init(parsing text: String) throws {
        try self.init(syntax: FaultRuleSyntax(parsing: text, noun: "fault"))
    }

    init(syntax: FaultRuleSyntax) throws {
        kind = try FaultKind(name: syntax.kind, options: syntax.options, rule: syntax.text)
        schedule = syntax.schedule
    }

    public var description: String {
        var text = kind.name
        if schedule != .always { text += "@\(schedule)" }
        for (key, value) in kind.options { text += ":\(key)=\(value)" }
        return text
    }
}

/// Which requests a ``FaultRule`` applies to, by 1-based count.
public enum FaultSchedule: Sendable, Hashable, CustomStringConvertible {
    /// Every request (`*`).
    case always
    /// Requests `lowerBound` through `upperBound` (`N` or `N-M`).
    case requests(ClosedRange<Int>)
    /// Each request independently with this probability in percent (`P%`).
    case percent(Double)

    init(parsing text: String, rule: String) throws {
        if text == "*" {
            self = .always
        } else if text.hasSuffix("%") {
            guard let percent = Double(text.dropLast()), (0...100).contains(percent) else {
                throw invalidRule(rule, "'\(text)' is not a percentage between 0 and 100")
            }
            self = .percent(percent)
        } else if let dash = text.firstIndex(of: "-") {
            guard let low = Int(text[..<dash]), let high = Int(text[text.index(after: dash)...]),
                low >= 1, low <= high
            else { throw invalidRule(rule, "'\(text)' is not a range N-M with 1 ≤ N ≤ M") }
            self = .requests(low...high)
        } else {
            guard let count = Int(text), count >= 1 else {
                throw invalidRule(rule, "'\(text)' is not a request number (1-based), N-M, * or P%")
            }
            self = .requests(count...count)
        }
    }

    /// Whether the `count`th request matches.
    public func matches(_ count: Int) -> Bool {
        switch self {
        case .always: true
        case .requests(let range): range.contains(count)
        case .percent(let percent): Double.random(in: 0..<100) < percent
        }
    }

    public var description: String {
        switch self {
        case .always: "*"
        case .requests(let range):
            range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound)-\(range.upperBound)"
        case .percent(let percent): "\(percent)%"
        }
    }
}

/// What the server does to a request hit by a fault.
public enum FaultKind: Sendable, Hashable {
    /// Drain the body, then answer `status` (408, 429 or 5xx) with a small JSON error body and, when
    /// set, a `Retry-After` header of that many seconds.
    case status(Int, retryAfter: Int?)
    /// Answer 413 before reading the body and close the connection.
    case tooLargeEarly
    /// Read the request head, then neither read the body nor answer for `seconds`, then close.
    case stall(seconds: Double)
    /// Read about `afterBytes` of the body, then reset the connection without any answer.
    case drop(afterBytes: Int)
    /// Drain the body, then answer 200 with `Content-Type: text/html` and an HTML error page.
    case garbage
    /// Drain the body, then answer 200 with an empty body.
    case empty
    /// Drain the body, then answer 200 JSON whose body stops halfway through its `Content-Length`.
    case truncated
    /// Drain the body, then answer 200 with `{"errorCode":code,"message":message}`.
    case business(code: Int, message: String)
    /// Store the upload as usual but kill the server with SIGKILL at `point` of the commit, to test
    /// that a retry after a crash at the worst moment still stores one copy. Accepted in
    /// `attache-server --fault` only, never from the `X-Attache-Fault` header of a request.
    case crash(at: CrashPoint)

    init(name: String, options: [String: String], rule: String) throws {
        func integer(_ key: String, default value: Int, minimum: Int = 0) throws -> Int {
            guard let text = options[key] else { return value }
            guard let number = Int(text), number >= minimum else {
                throw invalidRule(rule, "\(key)=\(text) is not a whole number ≥ \(minimum)")
            }
            return number
        }
        let allowed: Set<String>
        switch name {
        case "500", "502", "503", "504", "408":
            self = .status(Int(name)!, retryAfter: options["retry-after"] == nil ? nil : try integer("retry-after", default: 1))
            allowed = ["retry-after"]
        case "429":
            self = .status(429, retryAfter: try integer("retry-after", default: 1))
            allowed = ["retry-after"]
        case "413":
            self = .tooLargeEarly
            allowed = []
        case "stall":
            let text = options["seconds"] ?? "30"
            guard let seconds = Double(text), seconds >= 0, seconds.isFinite else {
                throw invalidRule(rule, "seconds=\(text) is not a number of seconds")
            }
            self = .stall(seconds: seconds)
            allowed = ["seconds"]
        case "drop":
            self = .drop(afterBytes: try integer("after", default: 65536))
            allowed = ["after"]
        case "garbage":
            self = .garbage
            allowed = []
        case "empty":
            self = .empty
            allowed = []
        case "truncated":
            self = .truncated
            allowed = []
        case "business":
            self = .business(code: try integer("code", default: 1001, minimum: Int.min), message: options["message"] ?? "rejected by business rule")
            allowed = ["code", "message"]
        case "crash":
            let text = options["at"] ?? CrashPoint.afterFiles.rawValue
            guard let point = CrashPoint(rawValue: text) else {
                let known = CrashPoint.allCases.map(\.rawValue).joined(separator: ", ")
                throw invalidRule(rule, "at=\(text) is not one of \(known)")
            }
            self = .crash(at: point)
            allowed = ["at"]
        default:
            throw invalidRule(rule, "unknown fault kind '\(name)'")
        }
        if let unknown = options.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw invalidRule(rule, "'\(name)' takes no option '\(unknown)'")
        }
    }

    /// The kind as written in a plan.
    var name: String {
        switch self {
        case .status(let status, _): "\(status)"
        case .tooLargeEarly: "413"
        case .stall: "stall"
        case .drop: "drop"
        case .garbage: "garbage"
        case .empty: "empty"
        case .truncated: "truncated"
        case .business: "business"
        case .crash: "crash"
        }
    }

    /// The options as written in a plan, percent-encoded where needed.
    var options: [(String, String)] {
        switch self {
        case .status(_, let retryAfter): retryAfter.map { [("retry-after", "\($0)")] } ?? []
        case .stall(let seconds): [("seconds", "\(seconds)")]
        case .drop(let after): [("after", "\(after)")]
        case .business(let code, let message):
            [("code", "\(code)"), ("message", message.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? message)]
        case .crash(let point): [("at", point.rawValue)]
        case .tooLargeEarly, .garbage, .empty, .truncated: []
        }
    }
}

/// A moment inside the reference server's commit of an upload (see ``FaultKind/crash(at:)``).
public enum CrashPoint: String, Sendable, Hashable, CaseIterable {
    /// The first file part is in the store, its receipt is not.
    case afterPart = "after-part"
    /// Every part and its receipt are in the store, the idempotency key is not recorded yet: the
    /// moment at which a crash once made the client's retry store a second copy.
    case afterFiles = "after-files"
    /// The idempotency key is recorded (the upload is committed); the answer has not been sent.
    case afterKey = "after-key"
}
