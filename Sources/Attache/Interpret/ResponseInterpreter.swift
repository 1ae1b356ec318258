import Foundation

/// What an answer from the server means for the upload.
public enum ResponseOutcome: Sendable {
    /// The server stored the attachment.
    case success(ServerReceipt)
    /// The server refused it; sending it again will not help.
    case rejection(Rejection)
    /// A temporary failure; the same upload may succeed later.
    case retry(RetryAdvice)
}

/// The server's receipt for a stored attachment.
public struct ServerReceipt: Sendable, Codable, Hashable {
    /// The HTTP status of the answer.
    public var status: Int
    /// The file id the server assigned, when it named one.
    public var fileId: String?
    /// Where the server says the file can be fetched, when it said so.
    public var url: String?
    /// The server's `data` member (or the whole body when it has none): every field kept.
    public var data: JSONValue
    /// True when the server answered an earlier attempt's receipt again (`Idempotent-Replayed`).
    public var replayed: Bool

    /// Creates a receipt.
    public init(status: Int, fileId: String?, url: String?, data: JSONValue, replayed: Bool = false) {
        self.status = status
        self.fileId = fileId
        self.url = url
        self.data = data
        self.replayed = replayed
    }
}

/// Why the server refused an upload.
public struct Rejection: Sendable, Hashable, CustomStringConvertible {
    /// The category of refusal.
    public enum Reason: String, Sendable, Hashable, Codable {
        /// An HTTP error status (4xx other than the retryable ones, or 3xx).
        case status
        /// A 2xx answer whose `errorCode` is not a success code.
        case business
        /// An answer that cannot be understood: HTML, empty, not JSON, over the size cap.
        case badResponse
    }

    /// The category.
    public var reason: Reason
    /// The HTTP status.
    public var status: Int
    /// The business error code, as the server wrote it, for `.business`.
    public var businessCode: String?
    /// The server's message, or a description of what was wrong with the answer.
    public var message: String

    /// Creates a rejection.
    public init(reason: Reason, status: Int, businessCode: String? = nil, message: String) {
        self.reason = reason
        self.status = status
        self.businessCode = businessCode
        self.message = message
    }

    public var description: String {
        switch reason {
        case .status: return "HTTP \(status): \(message)"
        case .business: return "error code \(businessCode ?? "?"): \(message)"
        case .badResponse: return "unusable answer (HTTP \(status)): \(message)"
        }
    }
}

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

/// Turns an ``HTTPResponse`` into a ``ResponseOutcome``.
///
/// The default configuration follows the old backend's convention: a 2xx JSON object whose `errorCode`
/// is `0` (number or string) is a success, with the payload under `data`; any other code is a business
/// error carrying `message`. 408, 425, 429 and 5xx are retried (honouring `Retry-After`); other 4xx
/// and 3xx are rejections. An answer that cannot be read is a rejection with reason `.badResponse`,
/// except a body cut short by the connection, which is retried.
///
/// ```swift
/// let interpreter = ResponseInterpreter()
/// switch interpreter.interpret(response) {
/// case .success(let receipt): print(receipt.fileId ?? "-")
/// case .rejection(let rejection): print(rejection)
/// case .retry(let advice): print("retry:", advice)
/// }
/// ```
public struct ResponseInterpreter: Sendable {
    /// How to read the server's answers.
    public struct Configuration: Sendable {
        /// Bodies longer than this are not read further and count as a bad response.
        public var maximumBodySize = 1 << 20
        /// The member holding the business error code. `nil`: any 2xx JSON object is a success.
        public var errorCodeField: String? = "errorCode"
        /// Codes (compared as strings) that mean success.
        public var successCodes: Set<String> = ["0"]
        /// Business codes that mean "try again later".
        public var retryableBusinessCodes: Set<String> = []
        /// Members searched, in order, for the server's message.
        public var messageFields = ["message", "msg", "errorMsg", "error", "detail"]
        /// The member holding the payload; the whole body is used when it is missing.
        public var dataField = "data"
        /// Members of the payload searched, in order, for the file id.
        public var fileIdFields = ["fileId", "file_id", "id"]
        /// Members of the payload searched, in order, for the file's URL.
        public var urlFields = ["url", "fileUrl", "file_url"]
        /// HTTP statuses that are retried.
        public var retryableStatuses: Set<Int> = [408, 425, 429, 500, 502, 503, 504]
        /// The longest `Retry-After` that is honoured; longer requests are capped to this.
        public var maximumRetryAfter: Duration = .seconds(300)

        /// The old backend's convention.
        public init() {}
    }

    /// The configuration in use.
    public var configuration: Configuration

    /// Creates an interpreter.
    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// Decides what `response` means.
    public func interpret(_ response: HTTPResponse) -> ResponseOutcome {
        let status = response.status
        if configuration.retryableStatuses.contains(status)
            || (status == 409 && response.header("Retry-After") != nil)
        {
            return .retry(
                RetryAdvice(
                    reason: "HTTP \(status)\(summary(of: response).map { ": \($0)" } ?? "")",
                    status: status, retryAfter: retryAfter(in: response)))
        }
        guard (200..<300).contains(status) else {
            let message: String
            if status == 413 {
                message = "the server refused the upload as too large"
                    + (summary(of: response).map { " (\($0))" } ?? "")
            } else {
                message = summary(of: response) ?? HTTPResponse.reasonPhrase(status)
            }
            return .rejection(Rejection(reason: .status, status: status, message: message))
        }
        if response.bodyIncomplete {
            return .retry(
                RetryAdvice(reason: "the answer was cut short (HTTP \(status))", status: status))
        }
        if response.bodyExceededCap {
            return .rejection(
                Rejection(
                    reason: .badResponse, status: status,
                    message: "the answer is larger than \(configuration.maximumBodySize) bytes"))
        }
        if response.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            return .rejection(Rejection(reason: .badResponse, status: status, message: "the answer is empty"))
        }
        guard let json = try? JSONValue.parse(response.body), case .object = json else {
            let what = describeNonJSON(response)
            return .rejection(Rejection(reason: .badResponse, status: status, message: what))
        }
        if let field = configuration.errorCodeField {
            guard let codeValue = json[field], let code = codeValue.stringValue else {
                return .rejection(
                    Rejection(
                        reason: .badResponse, status: status,
                        message: "the answer has no \"\(field)\" member"))
            }
            if !configuration.successCodes.contains(code) {
                let message = message(in: json) ?? "no message"
                if configuration.retryableBusinessCodes.contains(code) {
                    return .retry(
                        RetryAdvice(
                            reason: "error code \(code): \(message)", status: status,
                            retryAfter: retryAfter(in: response)))
                }
                return .rejection(
                    Rejection(reason: .business, status: status, businessCode: code, message: message))
            }
        }
        let data = json[configuration.dataField] ?? json
        let fileId = configuration.fileIdFields.lazy.compactMap { data[$0]?.stringValue }.first
        let url = configuration.urlFields.lazy.compactMap { data[$0]?.stringValue }.first
        let replayed = response.header("Idempotent-Replayed")?.lowercased() == "true"
        return .success(
            ServerReceipt(status: status, fileId: fileId, url: url, data: data, replayed: replayed))
    }

    /// Parses `Retry-After` as delta-seconds or an HTTP-date, capped to the configured maximum.
    public func retryAfter(in response: HTTPResponse) -> Duration? {
        guard let raw = response.header("Retry-After")?.trimmingCharacters(in: .whitespaces),
            !raw.isEmpty
        else { return nil }
        var delay: Duration?
        if let seconds = Int(raw), seconds >= 0 {
            delay = .seconds(seconds)
        } else if let date = HTTPResponse.parseHTTPDate(raw) {
            delay = .milliseconds(max(0, Int64(date.timeIntervalSinceNow * 1000)))
        }
        guard let delay else { return nil }
        return min(delay, configuration.maximumRetryAfter)
    }

    private func message(in json: JSONValue) -> String? {
        for field in configuration.messageFields {
            if let text = json[field]?.stringValue, !text.isEmpty { return String(text.prefix(500)) }
        }
        return nil
    }

    /// A short human summary of an error answer: its JSON message, its HTML title, or its text.
    private func summary(of response: HTTPResponse) -> String? {
        guard !response.body.isEmpty else { return nil }
        if let json = try? JSONValue.parse(response.body), let text = message(in: json) {
            return text
        }
        if let title = htmlTitle(response.body) { return title }
        let text = String(decoding: response.body.prefix(200), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty, !text.contains("<") else { return nil }
        return text.split(whereSeparator: \.isNewline).first.map(String.init)
    }

    private func describeNonJSON(_ response: HTTPResponse) -> String {
        let type = response.mediaType ?? "no content type"
        if let title = htmlTitle(response.body) {
            return "expected JSON, got an HTML page (\(type)) titled \"\(title)\""
        }
        if type.contains("html") { return "expected JSON, got an HTML page (\(type))" }
        return "expected a JSON object, got \(response.body.count) bytes of \(type)"
    }

    private func htmlTitle(_ body: [UInt8]) -> String? {
        let text = String(decoding: body.prefix(8192), as: UTF8.self)
        guard let open = text.range(of: "<title>", options: .caseInsensitive),
            let close = text.range(of: "</title>", options: .caseInsensitive, range: open.upperBound..<text.endIndex)
        else { return nil }
        let title = text[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
        return title.isEmpty ? nil : String(title.prefix(200))
    }
}

extension HTTPResponse {
    /// A reason phrase for the common statuses.
    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 409: return "Conflict"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 422: return "Unprocessable Content"
        default: return "HTTP status \(status)"
        }
    }

    /// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form RFC 9110 requires senders to use.
    static func parseHTTPDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}
