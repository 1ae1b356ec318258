import FoundationEssentials
import Glibc

/// When and how often a failed upload is tried again.
///
/// Delays grow exponentially from `initialDelay` by `multiplier` up to `maximumDelay`, each one drawn at
/// random from its upper `jitter` share so that many clients that failed together do not come back
/// together. A `Retry-After` from the server replaces the computed delay (plus up to 10 % jitter). No new
/// attempt starts once `budget` has passed since the first one began; a running attempt is not cut
/// short by the budget (use the stall timeout for that).
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first one included.
    public var maximumAttempts: Int
    /// The delay before the second attempt.
    package var initialDelay: Duration
    /// The factor between consecutive delays.
    package var multiplier: Double
    /// The longest delay between attempts.
    package var maximumDelay: Duration
    /// The share (0...1) of each delay that is random.
    package var jitter: Double
    /// The longest time from the first attempt's start to the last attempt's start.
    public var budget: Duration

    /// Creates a policy.
    public init(
        maximumAttempts: Int = 6, initialDelay: Duration = .milliseconds(250), multiplier: Double = 2,
        maximumDelay: Duration = .seconds(30), jitter: Double = 0.5, budget: Duration = .seconds(600)
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialDelay = initialDelay
        self.multiplier = max(1, multiplier)
        self.maximumDelay = maximumDelay
        self.jitter = min(1, max(0, jitter))
        self.budget = budget
    }

    /// Six attempts, 250 ms doubling to 30 s, half jitter, ten minutes in all.
    public static let standard = RetryPolicy()
    /// For batches, budgeted by time rather than by count: attempts without a count limit, 250 ms
    /// doubling to 10 s, half jitter, for three minutes. A server that is down for a minute (a restart,
    /// a deploy) costs a batch time, not files: every file in flight keeps trying about every 5–10 s
    /// until it is back. `attache batch` uses it unless `--attempts` or `--retry-budget` say otherwise.
    package static let batch = RetryPolicy(
        maximumAttempts: Int.max, maximumDelay: .seconds(10), budget: .seconds(180))
    /// One attempt only.
    public static let never = RetryPolicy(maximumAttempts: 1)

    /// The delay after failed attempt number `attempt` (1-based), given the server's `Retry-After`.
    package func delay(afterAttempt attempt: Int, retryAfter: Duration?) -> Duration {
        var generator = SystemRandomNumberGenerator()
        return delay(afterAttempt: attempt, retryAfter: retryAfter, using: &generator)
    }

    /// The delay after failed attempt number `attempt`, drawing jitter from `generator`.
    package func delay(
        afterAttempt attempt: Int, retryAfter: Duration?, using generator: inout some RandomNumberGenerator
    ) -> Duration {
        if let retryAfter {
            let extra = Double.random(in: 0...0.1, using: &generator)
            return retryAfter + retryAfter * extra
        }
        let base = initialDelay.seconds * pow(multiplier, Double(max(0, attempt - 1)))
        let capped = min(base, maximumDelay.seconds)
        let random = jitter > 0 ? Double.random(in: 0...jitter, using: &generator) : 0
        return .milliseconds(Int64((capped * (1 - random)) * 1000))
    }
}
