package import AttacheCore
package import Logging

/// How an operation judged one attempt of its request.
///
/// The operation's settle function returns it for every answer that reaches it; the client's attempt
/// loop (``AttacheClient/execute(_:logger:request:failed:settle:)``) acts on it.
package enum Settlement<Value: Sendable>: Sendable {
    /// The operation is over: stored, rejected, downloaded, answered.
    case done(Value)
    /// Worth another attempt, after the wait the policy and the advice give; `failure` is the error
    /// of an attempt that had no answer.
    case retry(RetryAdvice, failure: AttacheError?)
    /// The attempt moved the operation forward (an append the server accepted): the next attempt
    /// starts at once, and the count of failures starts again.
    case progressed
}

/// An answer, as an operation's settle function sees it.
package struct AttemptAnswer: Sendable {
    /// The answer.
    package var response: ServerResponse
    /// The request as it was sent (after the adapters).
    package var request: PreparedRequest
    /// The sink the answer went to.
    package var sink: (any ResponseSink)?
    /// The attempt's number within its run of failures, from 1.
    package var attempt: Int
    /// True when a retrier ruled out another attempt: the operation must end with this answer (a
    /// ``Settlement/retry(_:failure:)`` then fails the operation).
    package var isFinal: Bool
    /// The client's rule: what the operation asks whether an answer is tried again.
    package var classifier: RetryClassifier

    /// The client's default advice for this answer: a retry for a status its classifier retries
    /// (honouring `Retry-After`), nil otherwise or when the answer is final.
    package var retryAdvice: RetryAdvice? {
        guard !isFinal else { return nil }
        return classifier.advice(for: response)
    }
}

/// The attempts of one operation so far: what the client's attempt loop counts and judges.
///
/// A single request (a multipart upload, a download) has a series of its own. A resumable upload,
/// which sends several kinds of request (create, `HEAD`, `PATCH`), keeps one series for all of them,
/// so that its failures are counted together and an accepted append (``Settlement/progressed``)
/// starts the count again.
package struct AttemptSeries: Sendable {
    /// What kind of work it is.
    package let operation: ClientOperation
    /// The retry policy: attempts, backoff, budget.
    package let policy: RetryPolicy
    /// The stage a give-up error is attributed to when the last attempt had an answer.
    package let answerStage: AttacheError.Stage
    /// Requests sent, every one counted.
    package fileprivate(set) var requests = 0
    /// Failed attempts since the operation last made progress.
    package fileprivate(set) var failures = 0
    /// Why each failed attempt failed, in order.
    package fileprivate(set) var reasons: [String] = []
    /// When the first attempt started.
    let start: ContinuousClock.Instant
    /// When the operation last moved forward (its start, at first): the policy's time budget runs
    /// from here, so that a long resumable upload that keeps moving is not cut off by its length.
    fileprivate var lastProgress: ContinuousClock.Instant
    /// A server never reached is unavailable (exit 69), not a temporary failure that retrying used up.
    var neverConnected = true

    init(operation: ClientOperation, policy: RetryPolicy, answerStage: AttacheError.Stage) {
        self.operation = operation
        self.policy = policy
        self.answerStage = answerStage
        self.start = ContinuousClock.now
        self.lastProgress = start
    }

    /// The number of the next attempt within the current run of failures, from 1.
    package var attempt: Int { failures + 1 }

    /// From the first attempt's start to now.
    package var elapsed: Duration { ContinuousClock.now - start }
}

/// What the attempts of an operation added up to.
package struct Executed<Value: Sendable>: Sendable {
    /// The settled value.
    package var value: Value
    /// Requests sent, the settling one included.
    package var attempts: Int
    /// Why each failed attempt failed, in order.
    package var reasons: [String]
    /// From the first attempt's start to the end.
    package var duration: Duration
}

extension AttacheClient {
    /// A new series of attempts for `operation`, under `policy` (the connection's when nil).
    package func series(
        _ operation: ClientOperation, policy: RetryPolicy? = nil, answerStage: AttacheError.Stage = .interpret
    ) -> AttemptSeries {
        AttemptSeries(operation: operation, policy: policy ?? connection.retry, answerStage: answerStage)
    }

    /// Runs one operation's request until it is settled: the one attempt loop of the client.
    ///
    /// Each attempt: `request` makes the attempt's request (signed for this attempt, with this attempt's
    /// `Range`) and the sink its answer goes to (nil collects nothing); the client's adapters change it; the transport
    /// sends it (metrics, span and log hear how it ended); the client's retriers are asked; then
    /// - a failure without an answer goes through `failed` (the operation may note it or change the
    ///   error) and is retried when a retrier says so or the client's ``RetryClassifier`` does;
    /// - an answer goes to `settle`, which says done, retry or progressed.
    /// A retry waits per the policy (backoff and jitter, or the server's `Retry-After`) unless the
    /// policy gives up.
    ///
    /// - Throws: ``AttacheCore/AttacheError`` — `.connectionFailed` when no attempt ever reached the
    ///   server, `.retriesExhausted` when the policy gave up otherwise (the last failure is the
    ///   cause); `.cancelled`; a failure that is not retried, as it is; whatever `request`, `failed`
    ///   or `settle` throw.
    package func execute<Value: Sendable>(
        _ series: inout AttemptSeries, logger: Logger? = nil, retriers: [any RequestRetrier] = [],
        request: (_ attempt: Int) async throws -> (PreparedRequest, (any ResponseSink)?),
        failed: (_ error: AttacheError, _ attempt: Int) async throws -> AttacheError = { error, _ in error },
        settle: (AttemptAnswer) async throws -> Settlement<Value>
    ) async throws -> Value {
        let operation = series.operation
        while true {
            try Task.checkCancellation()
            let attempt = series.attempt
            let (prepared, sink) = try await request(attempt)
            var sent = prepared
            let response: ServerResponse
            do {
                sent = try await adapted(prepared, operation: operation)
                series.requests += 1
                response = try await exchange(sent, sink: sink, operation: operation, attempt: attempt)
            } catch let transportError as AttacheError {
                if transportError.code != .connectionFailed { series.neverConnected = false }
                let error = try await failed(transportError, attempt)
                let advice = RetryAdvice(reason: error.message)
                switch await retryDecision(sent, response: nil, error: error, attempt: attempt, first: retriers) {
                case .retry:
                    try await wait(&series, advice, failure: error, logger: logger)
                case .retryAfter(let delay):
                    try await wait(&series, RetryAdvice(reason: error.message, retryAfter: delay), failure: error, logger: logger)
                case .doNotRetry:
                    throw error
                case .useDefault:
                    guard prepared.isResendable, retry.isRetryable(error) else { throw error }
                    logger?.debug("attempt \(attempt) failed: \(error.message)")
                    try await wait(&series, advice, failure: error, logger: logger)
                }
                continue
            }
            series.neverConnected = false
            let decision = await retryDecision(sent, response: response, error: nil, attempt: attempt, first: retriers)
            switch decision {
            case .retry:
                try await wait(
                    &series,
                    RetryAdvice(reason: "HTTP \(response.status)", status: response.status, refusal: Self.refusal(response)),
                    failure: nil, logger: logger)
                continue
            case .retryAfter(let delay):
                try await wait(
                    &series,
                    RetryAdvice(
                        reason: "HTTP \(response.status)", status: response.status, retryAfter: delay,
                        refusal: Self.refusal(response)),
                    failure: nil, logger: logger)
                continue
            case .doNotRetry, .useDefault:
                break
            }
            let answer = AttemptAnswer(
                response: response, request: sent, sink: sink, attempt: attempt, isFinal: decision == .doNotRetry,
                classifier: retry)
            switch try await settle(answer) {
            case .done(let value):
                return value
            case .progressed:
                series.progressed()
            case .retry(let advice, let failure):
                guard !answer.isFinal else {
                    throw AttacheError(
                        .rejected, stage: series.answerStage, "a retrier ruled out another attempt; last: \(advice.reason)",
                        cause: failure)
                }
                try await wait(&series, advice, failure: failure, logger: logger)
            }
        }
    }

    /// The refusal a retrier's retry of `response` leaves as the cause when the retries run out.
    private static func refusal(_ response: ServerResponse) -> Rejection {
        Rejection(reason: .status, status: response.status, message: ServerResponse.reasonPhrase(response.status))
    }

    /// Runs a single request's attempts in a series of its own; see ``execute(_:logger:request:failed:settle:)``.
    package func execute<Value: Sendable>(
        _ operation: ClientOperation, policy: RetryPolicy? = nil, answerStage: AttacheError.Stage = .interpret,
        logger: Logger? = nil,
        request: (_ attempt: Int) async throws -> (PreparedRequest, (any ResponseSink)?),
        failed: (_ error: AttacheError, _ attempt: Int) async throws -> AttacheError = { error, _ in error },
        settle: (AttemptAnswer) async throws -> Settlement<Value>
    ) async throws -> Executed<Value> {
        var series = series(operation, policy: policy, answerStage: answerStage)
        let value = try await execute(&series, logger: logger, request: request, failed: failed, settle: settle)
        return Executed(value: value, attempts: series.requests, reasons: series.reasons, duration: series.elapsed)
    }

    /// Counts a failed attempt of `series` and waits before the next one, per the policy and the
    /// advice; throws when the policy gives up. An operation calls it itself only for a failure its
    /// protocol finds in an answer it settled otherwise (a resumable upload's offset conflict).
    ///
    /// - Throws: ``AttacheCore/AttacheError`` `.connectionFailed` or `.retriesExhausted` when the
    ///   policy gives up (the failure is the cause, or the last answer's refusal, which
    ///   ``AttacheCore/AttacheError/rejection`` reads); `.cancelled` when the task is cancelled.
    package func wait(
        _ series: inout AttemptSeries, _ advice: RetryAdvice, failure: AttacheError?, logger: Logger? = nil
    ) async throws {
        try Task.checkCancellation()
        series.failures += 1
        series.reasons.append(advice.reason)
        let number = series.failures
        let policy = series.policy
        let delay = policy.delay(afterAttempt: number, retryAfter: advice.retryAfter)
        if number >= policy.maximumAttempts || ContinuousClock.now - series.lastProgress + delay > policy.budget {
            let why =
                number >= policy.maximumAttempts
                ? "gave up after \(number) attempts" : "gave up after \(number) attempts: time budget spent"
            logger?.debug("\(why): \(advice.reason)")
            // The cause is the last failure without an answer, or the last answer's refusal, so that a caller
            // can read what the server said last (`error.rejection`: its code, its status) rather than the text.
            throw AttacheError(
                series.neverConnected ? .connectionFailed : .retriesExhausted,
                stage: failure == nil ? series.answerStage : series.operation.stage,
                "\(why); last: \(advice.reason)", isRetryable: true,
                cause: failure ?? advice.refusal.map { RejectionError(rejection: $0) })
        }
        logger?.debug(
            "attempt \(number) failed, retrying", metadata: ["reason": "\(advice.reason)", "delay-ms": "\(delay.milliseconds)"])
        recordRetry(series.operation, cause: Self.retryCause(status: advice.status, failure: failure))
        guard delay > .zero else { return }
        do {
            try await sleep(delay)
        } catch {
            throw AttacheError(.cancelled, stage: series.operation.stage, "cancelled while waiting to retry")
        }
    }
}

extension AttemptSeries {
    /// The operation moved forward: its failures so far no longer count against the next attempt.
    mutating func progressed() {
        failures = 0
        lastProgress = ContinuousClock.now
    }
}
