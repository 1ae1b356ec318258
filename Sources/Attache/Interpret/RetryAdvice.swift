import FoundationEssentials

/// Why an attempt should be repeated, and when.
public struct RetryAdvice: Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, in a few words (`HTTP 503`, `connection lost`).
    public var reason: String
    /// The HTTP status, when there was an answer.
    public var status: Int?
    /// How long the server asked the client to wait (`Retry-After`), if it did.
    public var retryAfter: Duration?

    /// Creates retry advice.
    public init(reason: String, status: Int? = nil, retryAfter: Duration? = nil) {
        self.reason = reason
        self.status = status
        self.retryAfter = retryAfter
    }

    public var description: String { reason }
}
