internal import AttacheCore
public import Logging

/// What an ``AttacheClient`` does to every request of every operation: adapters before each attempt,
/// retriers after it, and a log line with secrets redacted.
///
/// Adapters and retriers are the request layer's (``RequestAdapter``, ``RequestRetrier``). For an
/// upload or a download they see the request's method, URL and headers (its body is the operation's
/// and stays as it is, also when an adapter changes the URL); what an adapter changes in them is sent.
/// That is how a process without an object store's keys sends to it: an adapter presigns each request
/// (``ObjectStoreSigning/adapters``). A retrier that answers anything but
/// ``RetryDecision/useDefault`` decides for the attempt, whichever operation it belongs to: the 401
/// retrier that refreshes a token works for uploads and downloads as for requests.
///
/// ```swift
/// var interceptors = ClientInterceptors()
/// interceptors.adapters = [TokenAdapter(store: store)]
/// interceptors.retriers = [RefreshOn401(store: store)]
/// let client = AttacheClient(interceptors: interceptors)
/// ```
public struct ClientInterceptors: Sendable {
    /// Run in order before every attempt of every operation (signing, fresh tokens, tenant headers).
    public var adapters: [any RequestAdapter]
    /// Asked in order after every attempt whether to retry (refresh a token on 401).
    public var retriers: [any RequestRetrier]
    /// Where one line per attempt is logged at `.debug` (operation, method, redacted URL, status or
    /// failure, time); nil logs nothing.
    public var logger: Logger?
    /// What the log lines never show.
    public var redaction: LogRedaction

    /// No adapters, no retriers, no logging.
    public init(
        adapters: [any RequestAdapter] = [], retriers: [any RequestRetrier] = [], logger: Logger? = nil,
        redaction: LogRedaction = LogRedaction()
    ) {
        self.adapters = adapters
        self.retriers = retriers
        self.logger = logger
        self.redaction = redaction
    }

    /// Whether there is nothing to do: the exchange then skips building the request's view.
    var isEmpty: Bool { adapters.isEmpty && retriers.isEmpty && logger == nil }
}
