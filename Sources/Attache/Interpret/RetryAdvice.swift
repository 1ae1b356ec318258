import FoundationEssentials

/// Why an attempt should be repeated, and when.
package struct RetryAdvice: Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, in a few words (`HTTP 503`, `connection lost`).
    package var reason: String
    /// The HTTP status, when there was an answer.
    package var status: Int?
    /// How long the server asked the client to wait (`Retry-After`), if it did.
    package var retryAfter: Duration?
    /// The refusal the answer carried (status, the server's own code and message), when it had one: the
    /// cause of the error thrown if the policy gives up after it (``AttacheCore/AttacheError/rejection``).
    package var refusal: Rejection?

    /// Creates retry advice.
    package init(reason: String, status: Int? = nil, retryAfter: Duration? = nil, refusal: Rejection? = nil) {
        self.reason = reason
        self.status = status
        self.retryAfter = retryAfter
        self.refusal = refusal
    }

    package var description: String { reason }
}
