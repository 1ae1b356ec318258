internal import AttacheCore
import Logging

/// The one client: it owns the transport and the connection settings, the retry rule, the
/// interceptors and the instrumentation hooks, and every way Attache talks HTTP is an operation on it.
///
/// - ``upload(_:answers:progress:)``: a multipart `POST` (``Uploader``);
/// - resumable uploads (tus 1.0, the IETF resumable upload draft), which a pipeline uses through
///   ``PipelineConfiguration/resumable``;
/// - ``download(_:progress:)`` and ``downloadManager(configuration:journal:)``: downloads;
/// - ``requests(_:)``: the request layer (``RequestClient``).
///
/// Each operation prepares its request once (``PreparedRequest``), sends every attempt through
/// ``exchange(_:sink:operation:attempt:)`` (adapters, transport, hooks, and the stage of its errors),
/// and retries by ``RetryClassifier`` within the connection's ``RetryPolicy``. The clients made on their
/// own (`Uploader()`, `RequestClient()`, ...) make a client of their own the same way.
///
/// ```swift
/// let client = AttacheClient(connection: connection, interceptors: interceptors)
/// let result = try await client.upload(UploadRequest(url: "https://files.example/upload", body: body))
/// let receipt = try await client.download(DownloadRequest(url: fileURL, destination: "out.bin"))
/// let answer = try await client.requests().get("https://api.example/me")
/// ```
package final class AttacheClient: Sendable {
    /// Timeouts, retries, TLS, proxy, credentials and headers of every request.
    package let connection: ConnectionConfiguration
    /// What sends the requests.
    package let transport: any HTTPTransport
    /// Which answers and failures are tried again, and how `Retry-After` is read.
    package let retry: RetryClassifier
    /// Adapters, retriers and logging for every request.
    package let interceptors: ClientInterceptors
    /// Where operations report their requests, attempts and retries.
    package let instrumentation: (any ClientInstrumentation)?
    /// Where the standard metrics and spans go (swift-metrics, swift-distributed-tracing): what the
    /// process bootstrapped when the client was made, or nothing.
    package let telemetry: Telemetry
    /// Waits between attempts; tests replace it so that no real time passes.
    let sleep: @Sendable (Duration) async throws -> Void

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - connection: the settings of every request.
    ///   - transport: what sends the requests; the shared ``CurlTransport`` for `connection` when nil.
    ///   - retry: the retry rule; ``RetryClassifier/standard`` unless a caller must differ.
    ///   - interceptors: adapters, retriers and logging applied to every request.
    ///   - instrumentation: hooks for metrics and traces.
    package convenience init(
        connection: ConnectionConfiguration = .init(), transport: (any HTTPTransport)? = nil,
        retry: RetryClassifier = .standard, interceptors: ClientInterceptors = .init(),
        instrumentation: (any ClientInstrumentation)? = nil
    ) {
        self.init(
            connection: connection, transport: transport, retry: retry, interceptors: interceptors,
            instrumentation: instrumentation, telemetry: .bootstrapped, sleep: { try await Task.sleep(for: $0) })
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
        interceptors: ClientInterceptors = .init(), instrumentation: (any ClientInstrumentation)? = nil,
        telemetry: Telemetry = .bootstrapped, sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.connection = connection
        self.transport = transport ?? CurlTransport.shared(for: connection)
        self.retry = retry
        self.interceptors = interceptors
        self.instrumentation = instrumentation
        self.telemetry = telemetry
        self.sleep = sleep
    }

    // MARK: What every operation shares

    /// Reports that an operation starts with `request`.
    func started(_ operation: ClientOperation, _ request: PreparedRequest) {
        started(operation, method: request.method, url: request.url)
    }

    /// Reports that an operation starts with a `method` request to `url`.
    func started(_ operation: ClientOperation, method: String, url: String) {
        guard let instrumentation else { return }
        instrumentation.requestStarted(
            ClientRequestStart(operation: operation, method: method, url: interceptors.redaction.url(url)))
    }

    /// Sends one attempt of an operation: the interceptors' adapters first, then the transport; the
    /// hooks and the log hear how it ended.
    ///
    /// - Throws: ``AttacheCore/AttacheError`` of the operation's stage: a transport failure attributed to it, an
    ///   adapter's failure, or the sink's or the body's own error as it is.
    func exchange(
        _ request: PreparedRequest, sink: (any ResponseSink)?, operation: ClientOperation, attempt: Int
    ) async throws -> ServerResponse {
        let request = try await adapted(request, operation: operation)
        if telemetry.tracer != nil {
            return try await tracedExchange(request, sink: sink, operation: operation, attempt: attempt)
        }
        return try await measuredExchange(request, sink: sink, operation: operation, attempt: attempt)
    }

    /// Sends one attempt as it is; the hooks, the metrics and the log hear how it ended.
    func measuredExchange(
        _ request: PreparedRequest, sink: (any ResponseSink)?, operation: ClientOperation, attempt: Int
    ) async throws -> ServerResponse {
        guard instrumentation != nil || interceptors.logger != nil || telemetry.metrics != nil else {
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
        guard instrumentation != nil || interceptors.logger != nil else { return }
        let url = interceptors.redaction.url(request.url)
        instrumentation?.attemptFinished(
            ClientAttempt(
                operation: operation, method: request.method, url: url, attempt: attempt, status: status,
                failure: failure, duration: duration, timings: timings))
        interceptors.logger?.debug(
            "\(operation) \(request.method) \(url): \(status.map { "HTTP \($0)" } ?? "failed (\(failure?.rawValue ?? "-"))")",
            metadata: ["attempt": "\(attempt)", "ms": "\(duration.milliseconds)"])
    }

    /// `request` as the adapters leave it; re-checked only when they changed it.
    private func adapted(_ request: PreparedRequest, operation: ClientOperation) async throws -> PreparedRequest {
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

    /// The retriers' decision about an attempt of an operation: the first that is not
    /// ``RetryDecision/useDefault``.
    func retryDecision(
        _ request: PreparedRequest, response: ServerResponse?, error: AttacheError?, attempt: Int
    ) async -> RetryDecision {
        guard !interceptors.retriers.isEmpty else { return .useDefault }
        let view = view(of: request)
        for retrier in interceptors.retriers {
            let decision = await retrier.retry(view, response: response, error: error, attempt: attempt)
            if decision != .useDefault { return decision }
        }
        return .useDefault
    }

    /// A retry driver for an operation: the connection's policy (or `policy`), this client's sleep,
    /// and the hooks told of every retry.
    func retryDriver(
        _ operation: ClientOperation, policy: RetryPolicy? = nil, answerStage: AttacheError.Stage, logger: Logger
    ) -> RetryDriver {
        var driver = RetryDriver(
            policy: policy ?? connection.retry, answerStage: answerStage, transportStage: operation.stage, logger: logger,
            sleep: sleep)
        if instrumentation != nil || telemetry.metrics != nil {
            driver.onRetry = { [instrumentation] attempt, advice, failure, delay in
                self.recordRetry(operation, cause: Self.retryCause(status: advice.status, failure: failure))
                instrumentation?.retrying(
                    ClientRetry(operation: operation, attempt: attempt, reason: advice.reason, delay: delay))
            }
        }
        return driver
    }

    /// Tells the hooks that `operation` waits `delay` after failed attempt `attempt` (operations with a
    /// loop of their own).
    func retrying(_ operation: ClientOperation, attempt: Int, reason: String, cause: String, delay: Duration) {
        recordRetry(operation, cause: cause)
        instrumentation?.retrying(ClientRetry(operation: operation, attempt: attempt, reason: reason, delay: delay))
    }
}
