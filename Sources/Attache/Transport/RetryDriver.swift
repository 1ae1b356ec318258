internal import AttacheCore
import Logging

/// Runs attempts of one request until one of them settles it: waits between attempts per a
/// ``RetryPolicy`` (backoff, jitter, the server's `Retry-After`, a time budget) without holding a
/// thread, and turns the last failure into the error the caller sees.
///
/// Uploads and downloads both retry through it; what an attempt is, and what counts as settled, is
/// theirs.
struct RetryDriver: Sendable {
    /// How one attempt ended.
    enum Verdict<Value: Sendable>: Sendable {
        /// The request is settled (stored, rejected, downloaded).
        case done(Value)
        /// Worth another attempt: why, when the server asked to wait, and the error if there was no answer.
        case retry(RetryAdvice, failure: AttacheError?)
    }

    /// What the attempts added up to.
    struct Outcome<Value: Sendable>: Sendable {
        var value: Value
        var attempts: Int
        /// Why each earlier attempt failed, in order.
        var reasons: [String]
        var duration: Duration
    }

    var policy: RetryPolicy
    /// The stage a give-up error is attributed to when the last attempt had an answer.
    var answerStage: AttacheError.Stage
    /// The stage a give-up error is attributed to when the last attempt had none.
    var transportStage: AttacheError.Stage
    var logger: Logger
    /// Waits between attempts; tests replace it to run without real time passing.
    var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    /// Told of every retry before its wait: the failed attempt's number, why, its error when there was
    /// no answer, and the wait.
    var onRetry: (@Sendable (_ attempt: Int, _ advice: RetryAdvice, _ failure: AttacheError?, _ delay: Duration) -> Void)?

    /// Runs `attempt` (given its number, from 1) until it is done or the policy gives up.
    ///
    /// - Throws: ``AttacheCore/AttacheError`` — `.connectionFailed` when no attempt ever reached the server,
    ///   `.retriesExhausted` otherwise (the last failure is the cause); `.cancelled` when the task is
    ///   cancelled; whatever `attempt` throws, as it is.
    func run<Value: Sendable>(
        _ attempt: (Int) async throws -> Verdict<Value>
    ) async throws -> Outcome<Value> {
        let clock = ContinuousClock()
        let start = clock.now
        var reasons: [String] = []
        // A server that was never reached is unavailable (exit 69), not a temporary failure that
        // retrying has used up.
        var neverConnected = true
        var number = 0
        while true {
            number += 1
            try Task.checkCancellation()
            switch try await attempt(number) {
            case .done(let value):
                return Outcome(value: value, attempts: number, reasons: reasons, duration: clock.now - start)
            case .retry(let advice, let failure):
                reasons.append(advice.reason)
                if failure?.code != .connectionFailed { neverConnected = false }
                let delay = policy.delay(afterAttempt: number, retryAfter: advice.retryAfter)
                let elapsed = clock.now - start
                if number >= policy.maximumAttempts || elapsed + delay > policy.budget {
                    let why =
                        number >= policy.maximumAttempts
                        ? "gave up after \(number) attempts" : "gave up after \(number) attempts: time budget spent"
                    logger.debug("\(why): \(advice.reason)")
                    throw AttacheError(
                        neverConnected ? .connectionFailed : .retriesExhausted,
                        stage: failure == nil ? answerStage : transportStage,
                        "\(why); last: \(advice.reason)", isRetryable: true, cause: failure)
                }
                logger.debug(
                    "attempt \(number) failed, retrying",
                    metadata: ["reason": "\(advice.reason)", "delay-ms": "\(delay.milliseconds)"])
                onRetry?(number, advice, failure, delay)
                do {
                    try await sleep(delay)
                } catch {
                    throw AttacheError(.cancelled, stage: transportStage, "cancelled while waiting to retry")
                }
            }
        }
    }
}
