import CoreMetrics
import Tracing

extension AttacheClient {
    /// Sends one attempt inside an HTTP client span (OpenTelemetry's HTTP client conventions) that the
    /// request carries onward in `traceparent`, when tracing is on.
    func tracedExchange(
        _ request: PreparedRequest, sink: (any ResponseSink)?, operation: ClientOperation, attempt: Int
    ) async throws -> ServerResponse {
        try await telemetry.withSpan(request.method, ofKind: .client) { span in
            var sent = request
            if span != nil {
                // The context goes on even for a span a sampler left out, so that the server's spans follow
                // the same decision; its attributes would be thrown away, so none are made.
                let fields = telemetry.propagationFields()
                if !fields.isEmpty { sent = try request.setting(fields) }
            }
            if let span, span.isRecording {
                let server = ServerAddress(request)
                span.update { attributes in
                    attributes.reserveCapacity(8)
                    attributes.put("http.request.method", request.method)
                    attributes.put("server.address", server.host)
                    attributes.put("server.port", server.port)
                    attributes.put("url.full", URLRedaction.redacting(request.url))
                    attributes.put("attache.operation", operation.rawValue)
                    if attempt > 1 { attributes.put("http.request.resend_count", attempt - 1) }
                }
            }
            let response = try await measuredExchange(sent, sink: sink, operation: operation, attempt: attempt)
            if let span, span.isRecording {
                span.update { attributes in
                    attributes.put("http.response.status_code", response.status)
                    if response.status >= 400 { attributes.put("error.type", String(response.status)) }
                }
                if response.status >= 400 { span.span.setStatus(SpanStatus(code: .error)) }
            }
            return response
        }
    }

    /// Records one finished attempt in the metrics: its duration, and for uploads the body bytes.
    func recordAttempt(
        _ request: PreparedRequest, operation: ClientOperation, status: Int?, failure: AttacheError.Code?,
        duration: Duration
    ) {
        guard let handles = telemetry.handles else { return }
        let server = ServerAddress(request)
        let key = AttemptKey(
            operation: operation, method: request.method, host: server.host, port: server.port, status: status,
            failure: failure)
        let timer = handles.attemptTimer(key) {
            var dimensions = [
                ("http.request.method", request.method), ("server.address", server.host),
                ("server.port", String(server.port)), ("attache.operation", operation.rawValue),
            ]
            if let status { dimensions.append(("http.response.status_code", String(status))) }
            if let failure {
                dimensions.append(("error.type", failure.rawValue))
            } else if let status, status >= 400 {
                dimensions.append(("error.type", String(status)))
            }
            return dimensions
        }
        timer.recordNanoseconds(duration.nanoseconds)
        if let body = request.body, operation == .upload || operation == .resumableUpload {
            telemetry.count(.bytesSent, by: body.byteCount, [("attache.operation", operation.rawValue)])
        }
    }

    /// Counts a retry of `operation` by its cause: the failure's code, or the status that asked for it.
    func recordRetry(_ operation: ClientOperation, cause: String) {
        telemetry.count(.retries, [("attache.operation", operation.rawValue), ("attache.retry.cause", cause)])
    }

    /// A bounded name for why an attempt is retried: `http_503`, or the failure's code.
    static func retryCause(status: Int?, failure: AttacheError?) -> String {
        if let failure { return failure.code.rawValue }
        if let status { return "http_\(status)" }
        return "answer"
    }
}

/// The host and port a request goes to.
struct ServerAddress {
    /// The host, lower-cased, without user info.
    let host: String
    /// The port, the scheme's default when the URL names none.
    let port: Int

    init(_ request: PreparedRequest) {
        host = request.target.host
        port = request.target.port ?? (request.target.isHTTPS ? 443 : 80)
    }

    /// The explicit port of `url`, if any (as the request's parsed target holds it).
    static func port(of url: String) -> Int? { HTTPURL(url)?.port }
}
