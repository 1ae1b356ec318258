internal import AttacheCore
internal import CCurl

/// A failure of an exchange itself: the network, TLS, curl, or a request the transport cannot send.
///
/// It says what failed and whether another attempt may help, but not which stage of Attache's work
/// it belongs to: only the operation that sent the request knows whether it was uploading, downloading
/// or requesting, and it turns the failure into an ``AttacheCore/AttacheError`` with `attributed(to:file:)`.
/// Errors of a request body's source or of a sink are already ``AttacheCore/AttacheError``s and pass through a
/// transport as they are.
package struct TransportError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in ``AttacheCore/AttacheError``'s terms: `.connectionFailed`, `.timedOut`, `.connectionLost`,
    /// `.tlsFailure`, `.invalidArgument`, `.rejected` (a redirect that may not be followed), `.cancelled`,
    /// `.nativeLibrary`.
    package var code: AttacheError.Code
    /// A human description, without secrets.
    package var message: String
    /// Whether another attempt may succeed.
    package var isRetryable: Bool
    /// curl's own code and text, when curl reported the failure.
    package var cause: NativeError?

    /// Creates a transport failure.
    package init(_ code: AttacheError.Code, _ message: String, isRetryable: Bool = false, cause: NativeError? = nil) {
        self.code = code
        self.message = message
        self.isRetryable = isRetryable
        self.cause = cause
    }

    /// The failure as the error of the operation that met it.
    package func attributed(to stage: AttacheError.Stage, file: String? = nil) -> AttacheError {
        AttacheError(code, stage: stage, message, file: file, isRetryable: isRetryable, cause: cause)
    }

    /// The message.
    package var description: String { message }

    static let cancelled = TransportError(.cancelled, "the transfer was cancelled")

    /// What curl's result `code` means, with its error text; `bodySent` of `total` bytes of the request
    /// body had left when it happened.
    static func classify(code: CURLcode, text: String, bodySent: Int64, total: Int64) -> TransportError {
        let cause = NativeError(library: "curl", code: Int(code.rawValue), text: text)
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            return TransportError(.connectionFailed, "cannot connect: \(text)", isRetryable: true, cause: cause)
        case CURLE_OPERATION_TIMEDOUT:
            return TransportError(.timedOut, "timed out: \(text)", isRetryable: true, cause: cause)
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE,
            CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_HTTP3, CURLE_SEND_FAIL_REWIND:
            let progress = total > 0 ? "after \(bodySent) of \(total) bytes" : "mid-answer"
            return TransportError(
                .connectionLost, "connection lost \(progress): \(text)", isRetryable: true, cause: cause)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_CERTPROBLEM, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE:
            return TransportError(.tlsFailure, "TLS verification failed: \(text)", cause: cause)
        case CURLE_SSL_CONNECT_ERROR:
            return TransportError(.tlsFailure, "TLS handshake failed: \(text)", isRetryable: true, cause: cause)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return TransportError(.invalidArgument, "bad URL: \(text)", cause: cause)
        case CURLE_ABORTED_BY_CALLBACK:
            return TransportError(.cancelled, "the transfer was cancelled", cause: cause)
        default:
            return TransportError(.nativeLibrary, text, isRetryable: true, cause: cause)
        }
    }
}

extension Error {
    /// This error as the operation `stage` reports it: a ``TransportError`` attributed to `stage`, any
    /// other error as it is.
    func attributed(to stage: AttacheError.Stage, file: String? = nil) -> any Error {
        (self as? TransportError)?.attributed(to: stage, file: file) ?? self
    }
}

extension HTTPTransport {
    /// Sends `request` for an operation of `stage`: a transport failure comes back as an
    /// ``AttacheCore/AttacheError`` of that stage.
    func send(
        _ request: PreparedRequest, sink: (any ResponseSink)?, stage: AttacheError.Stage
    ) async throws -> ServerResponse {
        do {
            return try await send(request, sink: sink)
        } catch {
            throw error.attributed(to: stage)
        }
    }
}
