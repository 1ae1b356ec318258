import FoundationEssentials

/// Changes a request just before each attempt is sent: signing, a fresh token, a tenant header.
///
/// Adapters run in the order of ``RequestClient/Configuration/adapters``, after the client's defaults
/// and system parameters were applied, on every attempt (so a retried request is signed again and
/// picks up a refreshed token). An adapter that throws ends the request with its error.
///
/// ```swift
/// struct TokenAdapter: RequestAdapter {
///     let store: TokenStore   // an actor
///     func adapt(_ request: ClientRequest) async throws -> ClientRequest {
///         var request = request
///         request.setHeader("Authorization", "Bearer \(await store.token)")
///         return request
///     }
/// }
/// ```
public protocol RequestAdapter: Sendable {
    /// Returns the request to send in place of `request`.
    /// - Throws: any error; the request fails with it (an ``AttacheCore/AttacheError`` as it is, others wrapped).
    func adapt(_ request: ClientRequest) async throws -> ClientRequest
}

/// What a ``RequestRetrier`` decided about one attempt.
public enum RetryDecision: Sendable, Hashable {
    /// No opinion: the next retrier decides, or the client's own rule (idempotent methods on connection
    /// errors, 408, 429 and 5xx, per the connection's ``RetryPolicy``).
    case useDefault
    /// Send the request again after the policy's backoff (adapters run again first).
    case retry
    /// Send the request again after this delay.
    case retryAfter(Duration)
    /// Do not retry: the answer (or the error) is final.
    case doNotRetry
}

/// Decides whether a finished attempt is tried again: refresh a token once on 401, retry a `POST`
/// the server says is safe to repeat.
///
/// Retriers are asked in order after every attempt; the first that does not answer
/// ``RetryDecision/useDefault`` decides. Every retry, whoever decided it, counts against the
/// connection's ``RetryPolicy`` (attempts and time budget).
///
/// ```swift
/// /// Refreshes the token once when the server answers 401, then lets the adapter send the new one.
/// actor RefreshOn401: RequestRetrier {
///     let store: TokenStore
///     var refreshed = false
///     func retry(_ request: ClientRequest, response: ServerResponse?, error: AttacheError?, attempt: Int) async -> RetryDecision {
///         guard response?.status == 401, !refreshed else { return .useDefault }
///         refreshed = true
///         await store.refresh()
///         return .retryAfter(.zero)
///     }
/// }
/// ```
public protocol RequestRetrier: Sendable {
    /// Decides about attempt number `attempt` (from 1) of `request` (as adapted), which ended with
    /// `response` or, when there was none, with `error`.
    func retry(_ request: ClientRequest, response: ServerResponse?, error: AttacheError?, attempt: Int) async -> RetryDecision
}

extension ClientRequest {
    /// This request as `adapters` leave it, run in order; a failure becomes an ``AttacheCore/AttacheError`` of `stage`
    /// (an adapter's own ``AttacheCore/AttacheError`` as it is).
    func adapted(by adapters: [any RequestAdapter], stage: AttacheError.Stage) async throws -> ClientRequest {
        var request = self
        for adapter in adapters {
            do {
                request = try await adapter.adapt(request)
            } catch let error as AttacheError {
                throw error
            } catch is CancellationError {
                throw AttacheError(.cancelled, stage: stage, "the request was cancelled")
            } catch {
                throw AttacheError(
                    .invalidArgument, stage: stage, "the request adapter \(type(of: adapter)) failed: \(error)",
                    cause: AdapterFailure(description: "\(error)"))
            }
        }
        return request
    }
}
