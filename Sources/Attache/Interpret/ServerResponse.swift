import FoundationEssentials
import Glibc

/// What the server answered to one attempt, as the uploader captured it.
public struct ServerResponse: Sendable {
    /// The final HTTP status code (after any `100 Continue`).
    public var status: Int
    /// Response headers in order, names as sent.
    public var headers: [HeaderField]
    /// The body, at most the interpreter's size cap.
    public var body: [UInt8]
    /// True when the body was longer than the cap and the rest was not read.
    package var bodyExceededCap: Bool
    /// True when the connection ended before the declared body was complete.
    package var bodyIncomplete: Bool
    /// Where the time of the exchange went (DNS, connect, TLS, first byte, total) and how many bytes
    /// moved, as the transport measured them; nil when the transport measures none (tests' transports).
    package var timings: TransferTimings?
    /// Whether the classifier of the client that received it retries this answer (the client sets it);
    /// false for an answer no client judged, one made in memory.
    package var retryableByClient = false

    /// Creates a response, as a transport that answers from memory returns it.
    package init(
        status: Int, headers: [HeaderField] = [], body: [UInt8] = [],
        bodyExceededCap: Bool = false, bodyIncomplete: Bool = false
    ) {
        self.init(
            status: status, headers: headers, body: body, bodyExceededCap: bodyExceededCap,
            bodyIncomplete: bodyIncomplete, timings: nil)
    }

    /// Creates a response with the transport's measured timings.
    package init(
        status: Int, headers: [HeaderField] = [], body: [UInt8] = [],
        bodyExceededCap: Bool = false, bodyIncomplete: Bool = false, timings: TransferTimings?
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bodyExceededCap = bodyExceededCap
        self.bodyIncomplete = bodyIncomplete
        self.timings = timings
    }

    /// The last value of the header `name`, compared without regard to case.
    public func header(_ name: String) -> String? {
        headers.last { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// The media type of the body, lower-cased, without parameters (`application/json`).
    package var mediaType: String? {
        guard let value = header("Content-Type") else { return nil }
        return value.split(separator: ";").first?.trimmingBlanks.lowercased()
    }
}
