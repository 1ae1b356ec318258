internal import AttacheCore
import FoundationEssentials
import Glibc

/// One HTTP exchange as a transport sends it: one attempt, redirects included.
///
/// The transport adds what every request carries from ``connection``: `User-Agent`, the
/// `Authorization` of ``ConnectionConfiguration/authorization`` and the connection's headers, then
/// ``headers``.
package struct TransportRequest: Sendable {
    /// `GET`, `HEAD`, `POST`, `PUT`, `PATCH`, `DELETE` or another token.
    package var method: String
    /// The `http://` or `https://` URL.
    package var url: String
    /// This request's own headers, after the connection's.
    package var headers: [HeaderField]
    /// The body, streamed from its source; nil for none.
    package var body: (any ByteSource)?
    /// Timeouts, TLS, proxy, credentials, redirects.
    package var connection: ConnectionConfiguration
    /// The longest body kept by the default collecting sink; longer answers are cut there and
    /// marked ``ServerResponse/bodyExceededCap``.
    package var maximumResponseBodySize: Int
    /// A deadline for the whole exchange, if any.
    package var timeout: Duration?
    /// The `Accept-Encoding` to offer, with the answer decoded transparently before it reaches the sink:
    /// `""` offers every encoding this libcurl decodes (gzip, deflate, and br/zstd when built with
    /// them), as curl's `--compressed` does. nil (the default) offers none and passes the body as the
    /// server sent it: uploads and resumable downloads need the bytes on the wire.
    package var acceptEncoding: String?
    /// The size of curl's receive buffer (`CURLOPT_BUFFERSIZE`) for a large answer streamed to a sink: fewer,
    /// larger writes to it. nil (the default) keeps curl's 16 KiB, right for answers of a few kilobytes,
    /// and lets the transport reuse a curl handle from an earlier request instead of making one.
    package var receiveBufferSize: Int?
    /// Whether the client's rule may send it again after a failure without an answer (true by default):
    /// the request layer sends a non-idempotent request once, unless it carries an idempotency key, and a
    /// resumable append needs the server's offset first. A retrier may still ask for another attempt.
    package var isResendable = true
    /// The ``receiveBufferSize`` Attache's own large answers ask for: downloads, and `RequestClient`
    /// answers written to a file.
    static let streamingReceiveBufferSize = 256 * 1024

    /// Creates a request.
    package init(
        method: String, url: String, headers: [HeaderField] = [], body: (any ByteSource)? = nil,
        connection: ConnectionConfiguration = .init(), maximumResponseBodySize: Int = 1 << 20, timeout: Duration? = nil,
        acceptEncoding: String? = nil, receiveBufferSize: Int? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.connection = connection
        self.maximumResponseBodySize = maximumResponseBodySize
        self.timeout = timeout
        self.acceptEncoding = acceptEncoding
        self.receiveBufferSize = receiveBufferSize
    }
}

/// Receives an answer as it arrives. A transport calls one sink from one thread at a time, in
/// order: ``informational(status:headers:)`` for each 1xx answer, then ``begin(status:headers:)``
/// once for the final answer (at its first body byte, or at its end when it has none), then
/// ``receive(_:)`` for each piece of the body. ``progress(sent:received:expectedReceive:)`` comes
/// in between.
///
/// Sinks are called on the transport's own thread: they must not block for long (a disk write is
/// fine, waiting on another request is not).
package protocol ResponseSink: AnyObject, Sendable {
    /// A 1xx interim answer (`103 Early Hints`, `104 Upload Resumption Supported`).
    func informational(status: Int, headers: [HeaderField])
    /// The final answer's head. Returning false stops the exchange; ``failure`` says why.
    func begin(status: Int, headers: [HeaderField]) -> Bool
    /// A piece of the final answer's body. Returning false stops the exchange: either ``failure``
    /// says why, or the sink has all it wants (``bodyExceededCap``).
    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// Bytes of the request body handed to the network, and of the answer's body received.
    func progress(sent: Int64, received: Int64, expectedReceive: Int64?)
    /// Whether ``progress(sent:received:expectedReceive:)`` does anything: when false, the transport does
    /// not ask curl for progress at all (curl calls back many times per transfer). True unless a sink says
    /// otherwise.
    var wantsProgress: Bool { get }
    /// Why the sink stopped the exchange, if it did.
    var failure: AttacheError? { get }
    /// The body bytes the sink kept for ``ServerResponse/body`` (an error answer's text, a JSON answer).
    var collectedBody: [UInt8] { get }
    /// True when the sink stopped reading because the body was longer than it keeps.
    var bodyExceededCap: Bool { get }
}

extension ResponseSink {
    package func informational(status: Int, headers: [HeaderField]) {}
    package func progress(sent: Int64, received: Int64, expectedReceive: Int64?) {}
    package var wantsProgress: Bool { true }
    package var failure: AttacheError? { nil }
}

/// The sink used when a caller gives none: keeps the body in memory up to a limit.
package final class CollectingSink: ResponseSink, @unchecked Sendable {
    private var body: CappedBody
    private let onProgress: (@Sendable (_ sent: Int64, _ received: Int64) -> Void)?
    private let onInformational: (@Sendable (Int, [HeaderField]) -> Void)?
    package var collectedBody: [UInt8] { body.bytes }
    package var bodyExceededCap: Bool { body.exceededCap }

    /// Creates a sink keeping at most `limit` bytes of body.
    package init(
        limit: Int, onProgress: (@Sendable (_ sent: Int64, _ received: Int64) -> Void)? = nil,
        onInformational: (@Sendable (Int, [HeaderField]) -> Void)? = nil
    ) {
        self.body = CappedBody(limit: limit)
        self.onProgress = onProgress
        self.onInformational = onInformational
    }

    package func informational(status: Int, headers: [HeaderField]) {
        onInformational?(status, headers)
    }

    package func begin(status: Int, headers: [HeaderField]) -> Bool {
        body.reset()
        return true
    }

    package func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        body.append(bytes)
    }

    package func progress(sent: Int64, received: Int64, expectedReceive: Int64?) {
        onProgress?(sent, received)
    }

    package var wantsProgress: Bool { onProgress != nil }
}

/// Sends one exchange and returns the final answer: the seam between the request logic (retries,
/// interpretation, downloads) and the network. ``CurlTransport`` is the real one; tests drive the
/// same logic through one that answers from memory.
package protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the final answer (after any redirects the request's policy
    /// follows), whatever its status.
    ///
    /// - Parameter sink: where the answer goes as it arrives; nil collects it in memory up to
    ///   ``TransportRequest/maximumResponseBodySize``. ``ServerResponse/body`` holds what the sink
    ///   collected.
    /// - Throws: ``TransportError`` (no stage: the operation that sent the request attributes it):
    ///   `.connectionFailed`, `.timedOut`, `.connectionLost`, `.tlsFailure`, `.invalidArgument`,
    ///   `.rejected`, `.cancelled`, `.nativeLibrary`; or the sink's own ``ResponseSink/failure``, or the
    ///   body source's error, as they are.
    func send(_ request: PreparedRequest, sink: (any ResponseSink)?) async throws -> ServerResponse
}

extension HTTPTransport {
    /// Sends `request`, collecting the answer in memory.
    package func send(_ request: PreparedRequest) async throws -> ServerResponse {
        try await send(request, sink: nil)
    }
}

extension TransportRequest {
    /// The header lines for one hop: Attache's defaults, the connection's, then the request's own.
    /// Credentials (the connection's `Authorization`, and every header named in `CredentialHeaders`)
    /// are left out when `withCredentials` is false: a redirect to another host.
    func headerLines(withCredentials: Bool) -> [String] {
        var lines: [String] = []
        lines.reserveCapacity(2 + connection.headers.count + headers.count)
        lines.append("User-Agent: " + connection.userAgent)
        if withCredentials, let authorization = connection.authorization {
            lines.append("Authorization: " + authorization.headerValue)
        }
        for fields in [connection.headers, headers] {
            for field in fields {
                if !withCredentials, CredentialHeaders.contains(field.name) { continue }
                lines.append(field.value.isEmpty ? field.name + ":" : field.name + ": " + field.value)
            }
        }
        return lines
    }
}

/// The one rule for header fields, used by the transport before sending and by the command line and
/// the config file when they read headers.
package enum HeaderFieldSyntax {
    /// An RFC 9110 field name: a token of ASCII letters, digits and ``!#$%&'*+-.^_`|~``.
    package static func isValidName(_ name: some StringProtocol) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                    || "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
    }

    /// A field value Attache sends: no control character but tab (so no CR or LF that could end the
    /// field early).
    package static func isValidValue(_ value: some StringProtocol) -> Bool {
        // By byte: in UTF-8 every byte of a multi-byte scalar is 0x80 or above, so a control character
        // is exactly a byte below 0x20 or 0x7F. Over the contiguous bytes when the string has them (a
        // native String does): the generic view costs tens of instructions a byte.
        func control(_ byte: UInt8) -> Bool { (byte < 0x20 && byte != 0x09) || byte == 0x7F }
        if let found = value.utf8.withContiguousStorageIfAvailable({ $0.contains(where: control) }) { return !found }
        return !value.utf8.contains(where: control)
    }
}
