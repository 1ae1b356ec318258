internal import AttacheCore
import Logging

/// The one client: it owns the transport and the connection settings, the retry rule and the
/// interceptors, and every way Attache talks HTTP is an operation on it.
///
/// - ``upload(_:answers:progress:)``: a multipart `POST` (``Uploader``);
/// - resumable uploads (tus 1.0, the IETF resumable upload draft) and object-store requests (S3
///   `PUT` and multipart uploads), which a pipeline sends through its client;
/// - ``download(_:progress:)``: downloads (also of the download manager);
/// - ``requests(_:)``: the request layer (``RequestClient``).
///
/// Every operation runs its attempts on one loop, the client's: the adapters of ``interceptors``
/// change each attempt's request, the transport sends it, the retriers are asked, then ``retry``
/// (the one ``RetryClassifier``) decides what is tried again, and the connection's ``RetryPolicy``
/// how long to wait (the server's `Retry-After` first). Metrics, spans and the log line of each attempt
/// come from the same place. An operation gives only what is its own: its request, where the answer
/// goes, how to sign each attempt, and how to read an answer.
///
/// Make one client and share it, as async-http-client's `HTTPClient` is shared: a pipeline
/// (``AttachmentPipeline/init(configuration:client:logger:)``), uploaders (``Uploader/init(client:answers:logger:)``),
/// downloaders and request clients made from it all send through it. The initializers that take no
/// client make one of their own the same way.
///
/// ```swift
/// var interceptors = ClientInterceptors()
/// interceptors.adapters = [TokenAdapter(store: store)]
/// let client = AttacheClient(connection: connection, interceptors: interceptors)
/// let result = try await client.upload(UploadRequest(url: "https://files.example/upload", body: body))
/// let receipt = try await client.download(DownloadRequest(url: fileURL, destination: "out.bin"))
/// let answer = try await client.requests().get("https://api.example/me")
/// ```
public final class AttacheClient: Sendable {
    /// Timeouts, retries, TLS, proxy, credentials and headers of every request.
    public let connection: ConnectionConfiguration
    /// What sends the requests.
    package let transport: any HTTPTransport
    /// Which answers and failures are tried again, and how `Retry-After` is read: the one rule of
    /// every operation of this client.
    public let retry: RetryClassifier
    /// Adapters, retriers and logging for every request of every operation.
    public let interceptors: ClientInterceptors
    /// Where the standard metrics and spans go (swift-metrics, swift-distributed-tracing): what the
    /// process bootstrapped when the client was made, or nothing.
    package let telemetry: Telemetry
    /// Waits between attempts; tests replace it so that no real time passes.
    let sleep: @Sendable (Duration) async throws -> Void

    /// Creates a client over libcurl: the transport shared by every client with the same connection
    /// settings (one event loop, one connection pool).
    ///
    /// - Parameters:
    ///   - connection: the settings of every request: timeouts, the retry policy, TLS, headers.
    ///   - retry: which answers and failures are tried again; ``RetryClassifier/standard`` unless a
    ///     server needs another rule.
    ///   - interceptors: adapters, retriers and logging applied to every request of every operation.
    public convenience init(
        connection: ConnectionConfiguration = .init(), retry: RetryClassifier = .standard,
        interceptors: ClientInterceptors = .init()
    ) {
        self.init(connection: connection, transport: nil, retry: retry, interceptors: interceptors)
    }

    /// Creates a client over `transport`.
    ///
    /// - Parameter transport: what sends the requests; the shared ``CurlTransport`` for `connection`
    ///   when nil.
    package convenience init(
        connection: ConnectionConfiguration = .init(), transport: (any HTTPTransport)?,
        retry: RetryClassifier = .standard, interceptors: ClientInterceptors = .init()
    ) {
        self.init(
            connection: connection, transport: transport, retry: retry, interceptors: interceptors,
            telemetry: .bootstrapped, sleep: { try await Task.sleep(for: $0) })
    }

    /// Creates a client whose metrics and spans go to `telemetry` rather than to what the process
    /// bootstrapped.
    package convenience init(
        connection: ConnectionConfiguration, transport: (any HTTPTransport)? = nil, telemetry: Telemetry
    ) {
        self.init(
            connection: connection, transport: transport, telemetry: telemetry, sleep: { try await Task.sleep(for: $0) })
    }

    /// Creates a client whose waits between attempts go through `sleep` (tests).
    init(
        connection: ConnectionConfiguration, transport: (any HTTPTransport)?, retry: RetryClassifier = .standard,
        interceptors: ClientInterceptors = .init(), telemetry: Telemetry = .bootstrapped,
        sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.connection = connection
        self.transport = transport ?? CurlTransport.shared(for: connection)
        self.retry = retry
        self.interceptors = interceptors
        self.telemetry = telemetry
        self.sleep = sleep
    }

    // MARK: What every operation shares

    /// Sends one attempt of an operation through the transport (inside its span when tracing is on);
    /// the metrics and the log hear how it ended.
    ///
    /// - Throws: ``AttacheCore/AttacheError`` of the operation's stage: a transport failure attributed to it, or the
    ///   sink's or the body's own error as it is.
    func exchange(
        _ request: PreparedRequest, sink: (any ResponseSink)?, operation: ClientOperation, attempt: Int
    ) async throws -> ServerResponse {
        if telemetry.tracer != nil {
            return try await tracedExchange(request, sink: sink, operation: operation, attempt: attempt)
        }
        return try await measuredExchange(request, sink: sink, operation: operation, attempt: attempt)
    }

    /// Sends one attempt as it is; the hooks, the metrics and the log hear how it ended.
    func measuredExchange(
        _ request: PreparedRequest, sink: (any ResponseSink)?, operation: ClientOperation, attempt: Int
    ) async throws -> ServerResponse {
        guard interceptors.logger != nil || telemetry.metrics != nil else {
            return try await transport.send(request, sink: sink, stage: operation.stage)
        }
        let clock = ContinuousClock()
        let start = clock.now
        do {
            let response = try await transport.send(request, sink: sink, stage: operation.stage)
            finished(
                request, operation: operation, attempt: attempt, status: response.status, failure: nil,
                duration: clock.now - start, timings: response.timings)
            return response
        } catch {
            finished(
                request, operation: operation, attempt: attempt, status: nil,
                failure: (error as? AttacheError)?.code ?? .internalError, duration: clock.now - start, timings: nil)
            throw error
        }
    }

    private func finished(
        _ request: PreparedRequest, operation: ClientOperation, attempt: Int, status: Int?,
        failure: AttacheError.Code?, duration: Duration, timings: TransferTimings?
    ) {
        recordAttempt(request, operation: operation, status: status, failure: failure, duration: duration)
        guard let logger = interceptors.logger else { return }
        let url = interceptors.redaction.url(request.url)
        logger.debug(
            "\(operation) \(request.method) \(url): \(status.map { "HTTP \($0)" } ?? "failed (\(failure?.rawValue ?? "-"))")",
            metadata: ["attempt": "\(attempt)", "ms": "\(duration.milliseconds)"])
    }

    /// `request` as the adapters leave it; re-checked only when they changed it. Only its method, URL and
    /// headers are theirs: the body, the connection and the limits stay the operation's, so an adapter that
    /// moves a request with a streamed body to another URL (a presigned one) sends the same body there.
    func adapted(_ request: PreparedRequest, operation: ClientOperation) async throws -> PreparedRequest {
        guard !interceptors.adapters.isEmpty else { return request }
        let view = try await view(of: request).adapted(by: interceptors.adapters, stage: operation.stage)
        guard view.method.rawValue != request.method || view.url != request.url || view.headers != request.headers
        else { return request }
        var changed = request.request
        changed.method = view.method.rawValue
        changed.url = view.url
        changed.headers = view.headers
        return try changed.prepared(for: operation.stage)
    }

    /// What adapters and retriers see of an operation's request: method, URL and headers.
    private func view(of request: PreparedRequest) -> ClientRequest {
        ClientRequest(method: RequestMethod(rawValue: request.method), url: request.url, headers: request.headers)
    }

    /// The retriers' decision about an attempt of an operation (`first`, the operation's own, then
    /// the client's): the first that is not ``RetryDecision/useDefault``.
    func retryDecision(
        _ request: PreparedRequest, response: ServerResponse?, error: AttacheError?, attempt: Int,
        first: [any RequestRetrier] = []
    ) async -> RetryDecision {
        guard !interceptors.retriers.isEmpty || !first.isEmpty else { return .useDefault }
        let view = view(of: request)
        for retrier in first + interceptors.retriers {
            let decision = await retrier.retry(view, response: response, error: error, attempt: attempt)
            if decision != .useDefault { return decision }
        }
        return .useDefault
    }
}
