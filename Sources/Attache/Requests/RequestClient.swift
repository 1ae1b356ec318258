import Dispatch
import FoundationEssentials
import Logging

/// A general HTTP client on Attache's transport: the request layer the old networking libraries had
/// (AFNetworking's serializers, XZNetworking's system parameters and logs), with Swift concurrency.
///
/// Every request gets the client's defaults (`Configuration`): `User-Agent`, `Accept-Language`,
/// `Accept-Encoding` with transparent decompression, Basic or Bearer credentials, the connection's
/// headers and the system parameters; then the adapters run; then the transport sends it, reusing
/// connections. Idempotent methods (and requests carrying an `Idempotency-Key`) are retried on what
/// `RetryClassifier` retries, per the connection's ``RetryPolicy``, honouring `Retry-After`; retriers
/// can decide otherwise. An HTTP answer, whatever its status, is the
/// returned value (check it with ``ServerResponse/validate(statusCodes:contentTypes:)``); only failures to
/// get one throw: an ``AttacheCore/AttacheError`` with stage `request`, `.invalidArgument` for a URL or
/// header that cannot be sent, `.connectionFailed`, `.connectionLost`, `.timedOut` or `.tlsFailure` when
/// there was no answer (after retries, `.retriesExhausted` with the last one as cause), `.cancelled`, or
/// an adapter's error. Cancelling the calling task stops the transfer.
///
/// ```swift
/// let client = RequestClient()
/// let response = try await client.get("https://api.example/users", query: ["page": 2])
/// let users = try response.validate(contentTypes: ["application/json"]).decode([User].self)
/// ```
public final class RequestClient: Sendable {
    /// The defaults every request gets.
    public let configuration: Configuration
    /// The client whose transport, interceptors and hooks every attempt goes through.
    let client: AttacheClient

    /// Creates a client over the shared libcurl transport for the configuration's connection.
    ///
    /// - Parameter configuration: the defaults every request gets, and the connection's settings.
    public convenience init(configuration: Configuration = .init()) {
        self.init(client: AttacheClient(connection: configuration.connection, transport: nil), configuration)
    }

    /// Creates a client.
    /// - Parameter transport: what sends the requests; the shared `CurlTransport` for the
    ///   configuration's connection when nil.
    package convenience init(configuration: Configuration = .init(), transport: (any HTTPTransport)?) {
        self.init(client: AttacheClient(connection: configuration.connection, transport: transport), configuration)
    }

    /// Creates the request layer of `client`: `configuration`'s defaults, adapters and retriers, then
    /// the client's; the client's connection settings in place of `configuration`'s.
    public convenience init(client: AttacheClient, configuration: Configuration = .init()) {
        var configuration = configuration
        configuration.connection = client.connection
        self.init(client: client, configuration)
    }

    /// Creates a client whose waits between attempts go through `sleep` (tests).
    convenience init(
        configuration: Configuration, transport: any HTTPTransport,
        sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.init(client: AttacheClient(connection: configuration.connection, transport: transport, sleep: sleep), configuration)
    }

    private init(client: AttacheClient, _ configuration: Configuration) {
        self.configuration = configuration
        self.client = client
    }

    // MARK: Verbs

    /// `GET url`, with `query` added to the URL's query.
    /// - Throws: ``AttacheCore/AttacheError`` (stage `request`) when no answer came: see ``RequestClient``.
    public func get(
        _ url: String, query: Parameters = [:], headers: [HeaderField] = []
    ) async throws -> ServerResponse {
        try await send(ClientRequest(method: .get, url: url, query: query, headers: headers))
    }

    /// `HEAD url`.
    /// - Throws: ``AttacheCore/AttacheError`` (stage `request`) when no answer came: see ``RequestClient``.
    public func head(
        _ url: String, query: Parameters = [:], headers: [HeaderField] = []
    ) async throws -> ServerResponse {
        try await send(ClientRequest(method: .head, url: url, query: query, headers: headers))
    }

    /// `DELETE url`, with an optional body.
    /// - Throws: ``AttacheCore/AttacheError`` (stage `request`) when no answer came: see ``RequestClient``.
    public func delete(
        _ url: String, query: Parameters = [:], headers: [HeaderField] = [],
        body: RequestBody? = nil
    ) async throws -> ServerResponse {
        try await send(ClientRequest(method: .delete, url: url, query: query, headers: headers, body: body))
    }

    /// `POST url` with `body`, or with `parameters` as a form body (system parameters merged in).
    /// - Throws: ``AttacheCore/AttacheError`` (stage `request`) when no answer came: see ``RequestClient``.
    public func post(
        _ url: String, query: Parameters = [:], parameters: Parameters = [:],
        headers: [HeaderField] = [], body: RequestBody? = nil
    ) async throws -> ServerResponse {
        try await send(
            ClientRequest(method: .post, url: url, query: query, parameters: parameters, headers: headers, body: body))
    }

    /// `PUT url` with `body`, or with `parameters` as a form body.
    /// - Throws: ``AttacheCore/AttacheError`` (stage `request`) when no answer came: see ``RequestClient``.
    public func put(
        _ url: String, query: Parameters = [:], parameters: Parameters = [:],
        headers: [HeaderField] = [], body: RequestBody? = nil
    ) async throws -> ServerResponse {
        try await send(
            ClientRequest(method: .put, url: url, query: query, parameters: parameters, headers: headers, body: body))
    }

    /// `PATCH url` with `body`, or with `parameters` as a form body.
    /// - Throws: ``AttacheCore/AttacheError`` (stage `request`) when no answer came: see ``RequestClient``.
    public func patch(
        _ url: String, query: Parameters = [:], parameters: Parameters = [:],
        headers: [HeaderField] = [], body: RequestBody? = nil
    ) async throws -> ServerResponse {
        try await send(
            ClientRequest(method: .patch, url: url, query: query, parameters: parameters, headers: headers, body: body))
    }

    // MARK: Sending

    /// Sends `request` with the client's defaults, adapters and retries, and returns the final answer.
    ///
    /// - Parameters:
    ///   - request: the method, URL, parameters, headers and body to send.
    ///   - progress: called from the transport's thread as body bytes leave and answer bytes arrive.
    ///   - destination: a file path to stream the answer body into (created or truncated, mode 0644;
    ///     truncated again for each attempt); the response's ``ServerResponse/body`` is then empty.
    ///     nil keeps the body in memory up to the size cap.
    /// - Returns: the last attempt's answer, whatever its status: a 503 the retries could not get past
    ///   is returned, not thrown.
    /// - Throws: ``AttacheCore/AttacheError`` (stage `request`): `.invalidArgument` for a URL or header that cannot
    ///   be sent; `.connectionFailed`, `.connectionLost`, `.timedOut`, `.tlsFailure` when there was no
    ///   answer (after retries, `.retriesExhausted` with the last one as cause); `.cancelled`;
    ///   `.fileUnwritable` for a `destination` that cannot be written; an adapter's error.
    public func send(
        _ request: ClientRequest, writingBodyTo destination: String? = nil,
        progress: (@Sendable (Progress) -> Void)? = nil
    ) async throws -> ServerResponse {
        let prepared = prepare(request)
        let configuration = configuration
        let client = client
        var lastResponse: ServerResponse?
        var log: RequestLog?
        var adapted = prepared
        var series = client.series(.request, policy: configuration.connection.retry, answerStage: .request)
        do {
            return try await client.execute(
                &series, logger: configuration.logger, retriers: configuration.retriers
            ) { attempt in
                adapted = try await self.adapt(prepared)
                // An answer streamed to a file may be large: fewer, larger writes.
                let exchange = try self.exchange(
                    for: adapted, receiveBufferSize: destination == nil ? nil : TransportRequest.streamingReceiveBufferSize)
                // Every line of the log is at debug or trace: below those, no attempt makes one (it copies the
                // configuration and the request, and scans the request for secrets).
                if configuration.logger.logLevel <= .debug {
                    let attemptLog = RequestLog(
                        configuration: configuration, request: adapted, exchange: exchange.request, attempt: attempt)
                    attemptLog.sending()
                    log = attemptLog
                }
                let sink = RequestSink(
                    limit: exchange.maximumResponseBodySize, destination: destination, attempt: attempt,
                    bytesToSend: exchange.body?.byteCount ?? 0, progress: progress)
                return (exchange, sink)
            } failed: { error, _ in
                log?.failed(error)
                if error.code == .cancelled || Task.isCancelled {
                    throw AttacheError(.cancelled, stage: .request, "the request was cancelled")
                }
                return error
            } settle: { answer -> Settlement<ServerResponse> in
                var response = answer.response
                response.retryableByClient = answer.classifier.isRetryable(response)
                if let log, let sink = answer.sink as? RequestSink { log.received(response, sink: sink) }
                lastResponse = response
                guard Self.mayRetry(adapted), let advice = answer.retryAdvice else { return .done(response) }
                return .retry(advice, failure: nil)
            }
        } catch let error as AttacheError where error.code == .retriesExhausted && (error.cause == nil || error.cause is RejectionError) {
            // The retries ran out on answers: the last one is the value, as for any status.
            guard let lastResponse else { throw error }
            return lastResponse
        }
    }

    /// Sends `request` and waits for the answer on the calling thread: for scripts and code that is
    /// not async.
    ///
    /// The request runs on the transport's thread and a task of its own while the calling thread
    /// blocks, so it must not be called from inside an async task (that would block a thread of the
    /// cooperative pool the request itself may need); called from a task, it throws instead of
    /// risking that deadlock.
    ///
    /// ```swift
    /// let response = try client.sendBlocking(ClientRequest(method: .get, url: "http://127.0.0.1:8080/health"))
    /// ```
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` when called from an async task; otherwise as
    ///   ``send(_:writingBodyTo:progress:)``.
    package func sendBlocking(_ request: ClientRequest, writingBodyTo destination: String? = nil) throws -> ServerResponse {
        let inTask = withUnsafeCurrentTask { $0 != nil }
        guard !inTask else {
            throw AttacheError(
                .invalidArgument, stage: .request,
                "sendBlocking was called from an async task; use `await send(_:)` there")
        }
        let result = LockedValue<Result<ServerResponse, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let outcome: Result<ServerResponse, any Error>
            do {
                outcome = .success(try await self.send(request, writingBodyTo: destination))
            } catch {
                outcome = .failure(error)
            }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        guard let outcome = result.withLock({ $0 }) else {
            throw AttacheError(.internalError, stage: .request, "the blocking request ended without a result")
        }
        return try outcome.get()
    }

    // MARK: Steps

    /// Whether the client's own rule may send `request` twice.
    static func mayRetry(_ request: ClientRequest) -> Bool {
        request.method.isIdempotent || request.header("Idempotency-Key") != nil
    }

    /// The request with the client's defaults and system parameters applied; adapters see this.
    func prepare(_ request: ClientRequest) -> ClientRequest {
        var prepared = request
        var defaults: [HeaderField] = []
        if let acceptLanguage = configuration.acceptLanguage, !acceptLanguage.isEmpty {
            defaults.append(HeaderField(name: "Accept-Language", value: acceptLanguage))
        }
        if !defaults.isEmpty {
            let own = request.headers
            prepared.headers =
                defaults.filter { field in !own.contains { $0.name.equalsIgnoringASCIICase(field.name) } } + own
        }
        let system = configuration.systemParameters
        guard !system.isEmpty else { return prepared }
        // The caller's value wins, wherever the caller put it (query or parameters).
        let named = Set(request.query.keys).union(request.parameters.keys)
        let added = system.filter { !named.contains($0.key) }
        if request.method.encodesParametersInQuery || request.body != nil {
            prepared.query.merge(added) { caller, _ in caller }
        } else {
            prepared.parameters.merge(added) { caller, _ in caller }
        }
        return prepared
    }

    private func adapt(_ request: ClientRequest) async throws -> ClientRequest {
        try await request.adapted(by: configuration.adapters, stage: .request)
    }

    /// The transport's request for `request`: the full URL, the headers with the connection's
    /// defaults that the request overrides taken out, and the body.
    func exchange(for request: ClientRequest, receiveBufferSize: Int? = nil) throws -> PreparedRequest {
        var connection = configuration.connection
        var headers = request.headers
        var queryParameters = request.query
        var body = request.body
        if request.method.encodesParametersInQuery || body != nil {
            queryParameters.merge(request.parameters) { query, _ in query }
        } else if !request.parameters.isEmpty {
            switch request.bodyParameterEncoding {
            case .form: body = .form(request.parameters, encoder: configuration.formEncoder)
            case .json: body = try .json(JSONValue.object(request.parameters.mapValues(JSONValue.init(parameter:))))
            }
        }
        // A header the request names replaces the connection's header of that name (User-Agent and
        // Authorization included) instead of going out twice.
        // A request has a handful of headers: a scan without case folding costs less than a set of
        // lower-cased names, and this runs for every request.
        let requestHeaders = headers
        func named(_ name: String) -> Bool { requestHeaders.contains { $0.name.equalsIgnoringASCIICase(name) } }
        if !requestHeaders.isEmpty {
            connection.headers.removeAll { named($0.name) }
            if named("Authorization") { connection.authorization = nil }
            if let agent = headers.last(where: { $0.name.equalsIgnoringASCIICase("User-Agent") }) {
                connection.userAgent = agent.value
                headers.removeAll { $0.name.equalsIgnoringASCIICase("User-Agent") }
            }
        }
        var source: (any ByteSource)?
        if let body {
            if let type = body.contentType, !named("Content-Type") { headers.append(HeaderField(name: "Content-Type", value: type)) }
            // No `Expect: 100-continue`: most servers never answer it and curl would wait a second.
            if !named("Expect") { headers.append(HeaderField(name: "Expect", value: "")) }
            source = body.source
        }
        let query = queryParameters.isEmpty ? "" : configuration.formEncoder.encode(queryParameters)
        var url = request.url
        // Searched as bytes: `firstIndex(of:)` on the String walks grapheme clusters.
        if let hash = url.utf8.firstIndex(of: UInt8(ascii: "#")) { url = String(url[..<hash]) }
        if !query.isEmpty { url += (url.contains("?") ? (url.hasSuffix("?") || url.hasSuffix("&") ? "" : "&") : "?") + query }
        var exchange = TransportRequest(
            method: request.method.rawValue, url: url, headers: headers, body: source, connection: connection,
            maximumResponseBodySize: request.maximumResponseBodySize ?? configuration.maximumResponseBodySize,
            timeout: request.timeout ?? configuration.timeout,
            acceptEncoding: configuration.acceptsCompressedResponses ? "" : nil, receiveBufferSize: receiveBufferSize)
        exchange.isResendable = Self.mayRetry(request)
        do {
            return try exchange.prepared()
        } catch let error as TransportError {
            var error = error.attributed(to: .request)
            error.message = error.message.replacing(URLRedaction.redacting(url), with: configuration.redaction.url(url))
            throw error
        }
    }
}

/// An adapter's own error, kept as the cause of the ``AttacheCore/AttacheError`` it becomes.
struct AdapterFailure: Error, Sendable, CustomStringConvertible {
    let description: String
}
