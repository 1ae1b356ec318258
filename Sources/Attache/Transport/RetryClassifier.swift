public import AttacheCore
package import FoundationEssentials

/// The one rule for what is tried again, for every operation: multipart and resumable uploads,
/// downloads and the request layer.
///
/// Retried:
/// - a failure without an answer that the transport marks retryable: a connection refused, reset or
///   cut, a timeout, a TLS handshake that broke (not a certificate that failed verification);
/// - the statuses **408** Request Timeout, **423** Locked (a tus server's answer while an earlier
///   request still holds the upload), **425** Too Early, **429** Too Many Requests, **500** Internal
///   Server Error, **502** Bad Gateway, **503** Service Unavailable and **504** Gateway Timeout;
/// - a **409** Conflict that carries `Retry-After` (the server says when the conflict will be over).
///
/// Not retried: **501** Not Implemented and **505** HTTP Version Not Supported (the server will not
/// change its mind), nor any other status. A client holds one classifier, and every operation asks
/// it (the client's one attempt loop, `AttacheClient.execute`): a client made with another one
/// retries other statuses everywhere. What a protocol defines as a step rather than a failure (a
/// resumable upload's 409 offset conflict, an S3 error code configured as retryable) stays the
/// operation's.
///
/// The server's `Retry-After` is read as delta-seconds (`120`) or an HTTP-date
/// (`Wed, 21 Oct 2026 07:28:00 GMT`) and capped at ``maximumRetryAfter``, five minutes, so that no
/// answer can park a transfer for hours. The wait it gives replaces the backoff of the
/// ``RetryPolicy``, whose budget and jitter apply to every operation alike.
///
/// ```swift
/// let rule = RetryClassifier.standard
/// rule.isRetryable(status: 503)   // true
/// rule.retryAfter("120")          // .seconds(120)
/// ```
public struct RetryClassifier: Sendable, Hashable {
    /// The statuses retried by default (listed above).
    public static let retryableStatuses: Set<Int> = [408, 423, 425, 429, 500, 502, 503, 504]

    /// The rule as described above.
    public static let standard = RetryClassifier()

    /// The statuses that are retried.
    public var statuses: Set<Int>
    /// The longest `Retry-After` honoured; longer ones are cut to this.
    public var maximumRetryAfter: Duration

    /// Creates a rule; the defaults are ``standard``.
    public init(statuses: Set<Int> = RetryClassifier.retryableStatuses, maximumRetryAfter: Duration = .seconds(300)) {
        self.statuses = statuses
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// Whether an answer with `status` is tried again.
    public func isRetryable(status: Int) -> Bool {
        statuses.contains(status)
    }

    /// Whether `response` is tried again: its status is, or it is a 409 that says when to come back.
    package func isRetryable(_ response: ServerResponse) -> Bool {
        isRetryable(status: response.status) || (response.status == 409 && response.header("Retry-After") != nil)
    }

    /// The advice for `response` when it is tried again (its status, and the wait its `Retry-After`
    /// asks for); nil when it is not.
    package func advice(for response: ServerResponse) -> RetryAdvice? {
        guard isRetryable(response) else { return nil }
        return RetryAdvice(
            reason: "HTTP \(response.status)", status: response.status, retryAfter: retryAfter(in: response),
            refusal: Rejection(reason: .status, status: response.status, message: ServerResponse.reasonPhrase(response.status)))
    }

    /// Whether a failure without an answer is tried again.
    public func isRetryable(_ error: AttacheError) -> Bool {
        error.isRetryable && error.code != .fileChanged
    }

    /// The wait `response`'s `Retry-After` asks for, capped; nil when it has none or it cannot be read.
    package func retryAfter(in response: ServerResponse) -> Duration? {
        retryAfter(response.header("Retry-After"))
    }

    /// The wait a `Retry-After` value asks for (delta-seconds or an HTTP-date, measured from `now`),
    /// capped at ``maximumRetryAfter``; nil for nil or a value that is neither.
    package func retryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let raw = value?.trimmingBlanks, !raw.isEmpty else { return nil }
        let delay: Duration
        if let seconds = Int(raw), seconds >= 0 {
            delay = .seconds(seconds)
        } else if let date = ServerResponse.parseHTTPDate(raw) {
            delay = .milliseconds(max(0, Int64(date.timeIntervalSince(now) * 1000)))
        } else {
            return nil
        }
        return min(delay, maximumRetryAfter)
    }
}
