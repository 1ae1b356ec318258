internal import AttacheCore
internal import CCurl

/// The transport: the one place that drives libcurl.
///
/// Every transfer runs on one event loop — a thread of the transport's own running curl's multi
/// interface (`curl_multi_poll`) — so a transfer waiting on the network holds no thread, and
/// thousands can wait at once. Request bodies are read ahead on the ``AttacheCore/BlockingPool`` by a
/// ``BodyPump``; answers go to a ``ResponseSink`` on the loop's thread.
///
/// All transfers of one transport share curl's connection cache, DNS cache and TLS sessions:
/// consecutive requests to one host reuse a connection, and over TLS, when the server offers HTTP/2
/// (ALPN), concurrent transfers to one host are multiplexed on one connection.
///
/// Redirects are followed here, not by curl, so that the policy is Attache's (``RedirectState``).
///
/// The parts: this façade runs an exchange's hops; ``CurlMultiLoop`` is the event loop;
/// ``CurlExchange`` is one transfer on it, its decisions made by ``CurlExchange/StateMachine``;
/// ``TransportError`` says what failed.
package final class CurlTransport: HTTPTransport {
    /// The transport used unless one is given: one loop thread per process.
    package static let shared = CurlTransport()

    private static let registry = LockedValue<[Int: CurlTransport]>([:])

    /// The shared transport for `connection`: one per distinct ``ConnectionConfiguration/maximumConnectionsPerHost``.
    package static func shared(for connection: ConnectionConfiguration) -> CurlTransport {
        guard let limit = connection.maximumConnectionsPerHost else { return shared }
        return registry.withLock { transports in
            if let transport = transports[limit] { return transport }
            let transport = CurlTransport(maximumConnectionsPerHost: limit)
            transports[limit] = transport
            return transport
        }
    }

    let loop: CurlMultiLoop
    private let pool: BlockingPool

    /// Creates a transport with a loop of its own.
    ///
    /// - Parameters:
    ///   - maximumConnectionsPerHost: connections open to one host at once; transfers beyond wait in
    ///     curl's queue for one to be free. nil: no limit.
    ///   - pool: where request bodies are read and sealed ahead of the network; by default a pool of
    ///     one thread per core.
    package init(maximumConnectionsPerHost: Int? = nil, pool: BlockingPool? = nil) {
        self.loop = CurlMultiLoop(maximumConnectionsPerHost: maximumConnectionsPerHost)
        self.pool = pool ?? BodyPump.readers
    }

    /// Transfers on this transport's loop right now (started and not yet finished).
    package var activeTransfers: Int { loop.activeCount }

    package func send(_ request: PreparedRequest, sink: (any ResponseSink)?) async throws -> ServerResponse {
        try CurlGlobal.ensureInitialized()
        var redirects = RedirectState(origin: request)
        var hop = request
        while true {
            let response = try await sendOnce(
                hop, sink: sink, withCredentials: redirects.sendsCredentials(to: hop),
                swallowRedirects: redirects.mayFollow)
            guard let next = try redirects.next(after: response, of: hop) else { return response }
            hop = next
        }
    }

    private func sendOnce(
        _ request: PreparedRequest, sink: (any ResponseSink)?, withCredentials: Bool, swallowRedirects: Bool
    ) async throws -> ServerResponse {
        let pump = request.body.map {
            // Chunks of curl's upload buffer, three deep: enough read ahead that curl never waits for the
            // body on a fast link, for a few hundred KB of memory (docs/BENCHMARKS.md, Upload).
            BodyPump(source: $0, chunkSize: max(64 * 1024, request.connection.uploadBufferSize), depth: 3, pool: pool)
        }
        if let pump { await pump.prime() }
        let exchange = CurlExchange(
            request: request.request, headerLines: request.request.headerLines(withCredentials: withCredentials),
            sink: sink ?? CollectingSink(limit: request.maximumResponseBodySize), pump: pump,
            swallowRedirects: swallowRedirects)
        let loop = loop
        pump?.onWake { [weak exchange] in
            if let exchange { loop.submit(.unpause(exchange)) }
        }
        defer {
            pump?.cancel()
            // The loop thread wrote the sink's state and then took this lock to resume us; taking it
            // here makes that order visible to a race detector, which cannot see through the
            // continuation (the concurrency runtime is not instrumented).
            exchange.continuation.withLock { _ in }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ServerResponse, any Error>) in
                exchange.continuation.withLock { $0 = continuation }
                // Cancelled before the transfer was handed over (onCancel has run already, and its
                // command may reach the loop before this one): do not start it.
                if Task.isCancelled {
                    exchange.finish(.failure(TransportError.cancelled))
                    return
                }
                // The handle is set up here, on the caller's thread, so that the loop's thread (which
                // every transfer's network work shares) only adds it.
                let easy: CurlEasy
                do {
                    easy = try loop.prepare(exchange)
                } catch {
                    exchange.finish(.failure(error))
                    return
                }
                loop.submit(.add(exchange, easy))
            }
        } onCancel: {
            loop.submit(.cancel(exchange))
        }
    }
}

