import FoundationEssentials

/// Why the server refused an upload.
public struct Rejection: Sendable, Hashable, CustomStringConvertible {
    /// The category of refusal.
    public enum Reason: String, Sendable, Hashable, Codable {
        /// An HTTP error status (4xx other than the retryable ones, or 3xx).
        case status
        /// A 2xx answer whose `errorCode` is not a success code, or an answer carrying the service's own
        /// error code (S3's XML `Error` on a 2xx, the Bot API's `"ok":false`).
        case business
        /// An answer that cannot be understood: HTML, empty, not JSON, over the size cap.
        case badResponse
    }

    /// The category.
    public var reason: Reason
    /// The HTTP status.
    public var status: Int
    /// The server's own error code, as it wrote it: the `errorCode` of `.business`; S3's `Code`
    /// (`AccessDenied`, `EntityTooLarge`) or the Bot API's `error_code`, also with `.status`.
    public var businessCode: String?
    /// The server's message, or a description of what was wrong with the answer.
    public var message: String

    /// Creates a rejection.
    package init(reason: Reason, status: Int, businessCode: String? = nil, message: String) {
        self.reason = reason
        self.status = status
        self.businessCode = businessCode
        self.message = message
    }

    /// One line for people: the HTTP status or the server's error code, and the server's message
    /// (`HTTP 413: file too large`).
    public var description: String {
        switch reason {
        case .status:
            if let businessCode, businessCode != String(status) {
                return "HTTP \(status) \(businessCode): \(message)"
            }
            return "HTTP \(status): \(message)"
        case .business: return "error code \(businessCode ?? "?"): \(message)"
        case .badResponse: return "unusable answer (HTTP \(status)): \(message)"
        }
    }
}
