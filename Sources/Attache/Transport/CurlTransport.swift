internal import AttacheCore
internal import CCurl
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The transport: the one place that drives libcurl.
///
/// Every transfer runs on one event loop — a thread of the transport's own running curl's multi
/// interface (`curl_multi_poll`) — so a transfer waiting on the network holds no thread, and
/// thousands can wait at once. Request bodies are read ahead on the ``BlockingPool`` by a
/// ``BodyPump``; answers go to a ``ResponseSink`` on the loop's thread.
///
/// All transfers of one transport share curl's connection cache, DNS cache and TLS sessions:
/// consecutive requests to one host reuse a connection, and over TLS, when the server offers HTTP/2
/// (ALPN), concurrent transfers to one host are multiplexed on one connection.
///
/// Redirects are followed here, not by curl, so that the policy is Attache's
/// (``RedirectPolicy``): a body is sent again only on 307 and 308; a 303 after a body becomes a
/// `GET`; 301 and 302 after a body are answers, not hops; `https` never leads to `http`; and credentials
/// (`Authorization`, `Cookie`) go only to the host they were given for.
public final class CurlTransport: HTTPTransport {
    /// The transport used unless one is given: one loop thread per process.
    public static let shared = CurlTransport()

    private static let registry = LockedValue<[Int: CurlTransport]>([:])

    /// The shared transport for `connection`: one per distinct ``ConnectionConfiguration/maximumConnectionsPerHost``.
    public static func shared(for connection: ConnectionConfiguration) -> CurlTransport {
        guard let limit = connection.maximumConnectionsPerHost else { return shared }
        return registry.withLock { transports in
            if let transport = transports[limit] { return transport }
            let transport = CurlTransport(maximumConnectionsPerHost: limit)
            transports[limit] = transport
            return transport
        }
    }

    /// Starts loading libcurl (and running `curl_global_init`) on a thread of its own, and returns at once.
    ///
    /// libcurl is loaded on first use; loading it maps some thirty libraries, which costs a
    /// command-line process about as long as parsing its arguments and building its request. A process
    /// that knows it will transfer can call this early, so the two overlap on a second core. The first
    /// transfer then waits for the load to finish, and reports its failure if it failed, exactly as
    /// without this call. Only the first call does anything. Optional: an embedding backend has no
    /// need for it.
    ///
    /// Call it once the threads the process needs soon exist (from a task, say, rather than at the top
    /// of `main`): glibc's `dlopen` holds a lock that every `pthread_create` waits on, so a thread
    /// started during the load, the concurrency runtime's first worker included, starts only after it.
    /// Set any environment variables libcurl's libraries read at load time before calling this.
    public static func preloadLibrary() {
        attache_curl_preload()
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
    public init(maximumConnectionsPerHost: Int? = nil, pool: BlockingPool? = nil) {
        self.loop = CurlMultiLoop(maximumConnectionsPerHost: maximumConnectionsPerHost)
        self.pool = pool ?? BodyPump.readers
    }

    /// Transfers on this transport's loop right now (started and not yet finished).
    public var activeTransfers: Int { loop.activeCount }

    public func send(_ request: TransportRequest, sink: (any ResponseSink)?) async throws -> ServerResponse {
        let originHost = try request.validatedHost ?? request.validate()
        try CurlGlobal.ensureInitialized()
        var hop = request
        var hops = 0
        while true {
            // The first hop is the origin; only a redirect's target needs parsing.
            let sameHost = hops == 0 || URLComponents(string: hop.url)?.host?.lowercased() == originHost
            let redirectable = hops < request.connection.redirects.maximumHops
            let response = try await sendOnce(
                hop, sink: sink, withCredentials: sameHost, swallowRedirects: redirectable)
            guard redirectable, let next = try redirect(after: response, of: hop) else { return response }
            hops += 1
            hop = next
        }
    }

    /// The request a redirect answer leads to, or nil when it is the answer.
    func redirect(after response: ServerResponse, of request: TransportRequest) throws -> TransportRequest? {
        guard Self.followableStatuses.contains(response.status), let location = response.header("Location"),
            let base = URL(string: request.url), let target = URL(string: location, relativeTo: base)?.absoluteURL,
            let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return nil }
        if base.scheme?.lowercased() == "https", scheme == "http" {
            throw AttacheError(
                .rejected, stage: .upload,
                "the server redirected from https to http (\(TransportRequest.redirect(url: target.absoluteString))); not followed")
        }
        var next = request
        next.url = target.absoluteString
        if request.body != nil || !["GET", "HEAD"].contains(request.method) {
            switch response.status {
            case 307, 308:
                guard request.connection.redirects.followsBodyRedirects else { return nil }
            case 303:
                next.method = request.method == "HEAD" ? "HEAD" : "GET"
                next.body = nil
                next.headers.removeAll { ["content-type", "content-length", "idempotency-key"].contains($0.name.lowercased()) }
            default:
                return nil
            }
        }
        return next
    }

    static let followableStatuses: Set<Int> = [301, 302, 303, 307, 308]

    private func sendOnce(
        _ request: TransportRequest, sink: (any ResponseSink)?, withCredentials: Bool, swallowRedirects: Bool
    ) async throws -> ServerResponse {
        let pump = request.body.map {
            // Chunks of curl's upload buffer, three deep: against two chunks of half that size four deep,
            // a sealed 1 GiB upload to nginx took 0.71 s instead of 0.77 s (medians of 9, docs/BENCHMARKS.md)
            // for 0.4 MB more memory.
            BodyPump(source: $0, chunkSize: max(64 * 1024, request.connection.uploadBufferSize), depth: 3, pool: pool)
        }
        if let pump { await pump.prime() }
        let exchange = CurlExchange(
            request: request, headerLines: request.headerLines(withCredentials: withCredentials),
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
                    exchange.finish(.failure(AttacheError(.cancelled, stage: .upload, "the transfer was cancelled")))
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

extension TransportRequest {
    /// A redirect target for messages: scheme, host and path only.
    static func redirect(url: String) -> String { redact(url: url) }
}

/// One curl easy transfer on the loop: its options, callbacks and result.
///
/// Everything but ``continuation`` is touched only on the loop's thread, once the exchange is submitted.
final class CurlExchange: @unchecked Sendable {
    let request: TransportRequest
    let headerLines: [String]
    let sink: any ResponseSink
    let pump: BodyPump?
    let swallowRedirects: Bool
    let continuation = LockedValue<CheckedContinuation<ServerResponse, any Error>?>(nil)

    var easy: CurlEasy?
    private var status = 0
    /// Room for a usual answer's head without regrowing.
    private var headers: [HeaderField] = { var headers: [HeaderField] = []; headers.reserveCapacity(12); return headers }()
    private var headComplete = false
    private var begun = false
    private var swallowing = false
    private var bodyFailure: AttacheError?
    private(set) var bodySent: Int64 = 0
    private var lastSent: Int64 = -1
    private var lastReceived: Int64 = -1
    /// A cancel reached the loop before the transfer was added (loop thread): the add is refused.
    var cancelledBeforeAdd = false

    init(
        request: TransportRequest, headerLines: [String], sink: any ResponseSink, pump: BodyPump?,
        swallowRedirects: Bool
    ) {
        self.request = request
        self.headerLines = headerLines
        self.sink = sink
        self.pump = pump
        self.swallowRedirects = swallowRedirects
    }

    /// Resumes the caller once; later calls do nothing.
    func finish(_ result: Result<ServerResponse, any Error>) {
        let waiting = continuation.withLock { value -> CheckedContinuation<ServerResponse, any Error>? in
            defer { value = nil }
            return value
        }
        waiting?.resume(with: result)
    }

    /// Sets every option of the transfer on `easy` but `CURLOPT_SHARE` (set by the loop, whose thread
    /// uses the share).
    func configure(_ easy: CurlEasy) throws {
        let connection = request.connection
        let context = Unmanaged.passUnretained(self).toOpaque()
        try easy.captureErrorText()
        try easy.set(CURLOPT_URL, request.url)
        try easy.set(CURLOPT_NOSIGNAL, true)
        let method = request.method.uppercased()
        if let pump, let whole = pump.wholeBody, !whole.isEmpty, whole.count <= Self.inlineBodyLimit {
            // A small body read ahead goes to curl as post fields: curl then sends the head and the
            // body in one write (with a read callback they are two, and a small request costs the
            // server and the client an extra segment each). curl keeps its own copy and can resend it
            // on a reused connection the server had closed.
            try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, size: Int64(whole.count))
            try whole.withUnsafeBytes { bytes in
                try easy.set(CURLOPT_COPYPOSTFIELDS, pointer: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            }
            if method != "POST" { try easy.set(CURLOPT_CUSTOMREQUEST, method) }
        } else if let body = pump?.source {
            if method == "POST" {
                try easy.set(CURLOPT_POST, true)
                try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, size: body.byteCount)
            } else {
                try easy.set(CURLOPT_UPLOAD, true)
                try easy.set(CURLOPT_INFILESIZE_LARGE, size: body.byteCount)
                if method != "PUT" { try easy.set(CURLOPT_CUSTOMREQUEST, method) }
            }
            try easy.setReadFunction(transportReadCallback)
            try easy.set(CURLOPT_READDATA, pointer: context)
            // curl rewinds the body when it must send the request again on a new connection (a reused
            // connection the server had closed).
            try easy.setSeekFunction(transportSeekCallback)
            try easy.set(CURLOPT_SEEKDATA, pointer: context)
            try easy.set(CURLOPT_UPLOAD_BUFFERSIZE, connection.uploadBufferSize)
        } else {
            switch method {
            case "GET": try easy.set(CURLOPT_HTTPGET, true)
            case "HEAD": try easy.set(CURLOPT_NOBODY, true)
            case "POST":
                try easy.set(CURLOPT_POST, true)
                try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, size: 0)
            default: try easy.set(CURLOPT_CUSTOMREQUEST, method)
            }
        }
        try easy.setWriteFunction(transportWriteCallback)
        try easy.set(CURLOPT_WRITEDATA, pointer: context)
        try easy.setHeaderFunction(transportHeaderCallback)
        try easy.set(CURLOPT_HEADERDATA, pointer: context)
        if sink.wantsProgress {
            try easy.set(CURLOPT_NOPROGRESS, false)
            try easy.setProgressFunction(transportProgressCallback)
            try easy.set(CURLOPT_XFERINFODATA, pointer: context)
        }
        if let size = request.receiveBufferSize {
            try easy.set(CURLOPT_BUFFERSIZE, size)
            easy.receiveBufferSet = true
        }
        try easy.setHeaders(headerLines)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, max(1, Int(connection.connectTimeout.milliseconds)))
        // Stall detection: fewer than 1 byte/s in either direction for the stall timeout.
        try easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
        try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(connection.stallTimeout.seconds.rounded(.up))))
        if let timeout = request.timeout {
            try easy.set(CURLOPT_TIMEOUT_MS, max(1, Int(timeout.milliseconds)))
        }
        if let acceptEncoding = request.acceptEncoding { try easy.set(CURLOPT_ACCEPT_ENCODING, acceptEncoding) }
        try easy.set(CURLOPT_TCP_KEEPALIVE, true)
        try easy.set(CURLOPT_TCP_NODELAY, true)
        try easy.set(CURLOPT_FOLLOWLOCATION, false)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_SSL_VERIFYPEER, true)
        try easy.set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile = connection.caFile { try easy.set(CURLOPT_CAINFO, caFile) }
        if let pin = connection.pinnedPublicKey { try easy.set(CURLOPT_PINNEDPUBLICKEY, pin) }
        if let proxy = connection.proxy { try easy.set(CURLOPT_PROXY, proxy) }
        if connection.preferHTTP2 {
            try easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
            // Over TLS, wait for a connection that may multiplex rather than open another one (plain
            // http is HTTP/1.1, where there is nothing to wait for).
            if request.url.lowercased().hasPrefix("https:") { try easy.set(CURLOPT_PIPEWAIT, true) }
        } else {
            try easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        }
    }

    /// Bodies up to this size that were read ahead are handed to curl whole (``configure(_:)``).
    static let inlineBodyLimit = 64 * 1024

    /// Turns curl's result into the answer or the error the caller gets.
    func result(code: CURLcode, text: String, easy: CurlEasy) -> Result<ServerResponse, any Error> {
        if let bodyFailure { return .failure(bodyFailure) }
        if let failure = sink.failure { return .failure(failure) }
        if code == CURLE_OK || code == CURLE_WRITE_ERROR || code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR
            || code == CURLE_SEND_ERROR || code == CURLE_GOT_NOTHING
        {
            if !begun, headComplete, status > 0, !swallowing {
                begun = true
                _ = sink.begin(status: status, headers: headers)
            }
        }
        let response = ServerResponse(
            status: status, headers: headers, body: sink.collectedBody, bodyExceededCap: sink.bodyExceededCap,
            bodyIncomplete: code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR, timings: easy.timings())
        if code == CURLE_OK || (code == CURLE_WRITE_ERROR && sink.bodyExceededCap) {
            return .success(response)
        }
        let brokenTransport =
            code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR || code == CURLE_SEND_ERROR
            || code == CURLE_GOT_NOTHING
        if brokenTransport, status >= 400, headComplete {
            // The server answered an error before it had all of the body (an early 413, say) and
            // closed the connection: its answer counts, not the broken send.
            return .success(response)
        }
        if code == CURLE_PARTIAL_FILE, status > 0, pump != nil {
            return .success(response)
        }
        return .failure(
            TransportErrors.classify(
                code: code, text: text, bodySent: max(bodySent, easy.info(size: CURLINFO_SIZE_UPLOAD_T)),
                total: pump?.source.byteCount ?? 0))
    }

    // MARK: Callback bodies (loop thread)

    fileprivate func fillUploadBuffer(_ buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let pump else { return 0 }
        switch pump.read(into: buffer) {
        case .bytes(let n):
            bodySent += Int64(n)
            return n
        case .pause:
            return attache_curl_readfunc_pause()
        case .end:
            return 0
        case .failed(let error):
            bodyFailure = error
            return attache_curl_readfunc_abort()
        }
    }

    fileprivate func rewindBody(to offset: Int64) -> Int32 {
        guard offset == 0, let pump, pump.rewind() else { return CURL_SEEKFUNC_CANTSEEK }
        bodySent = 0
        return CURL_SEEKFUNC_OK
    }

    fileprivate func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        switch HeaderLine(bytes) {
        case .status(let code):
            // A new answer (after a 1xx): forget the previous head.
            status = code
            headers.removeAll()
            headComplete = false
        case .field(let name, let value):
            headers.append(HeaderField(name: name, value: value))
        case .other:
            guard status > 0, !headComplete else { return }
            if (100..<200).contains(status) {
                sink.informational(status: status, headers: headers)
                headers.removeAll()
            } else {
                headComplete = true
                swallowing =
                    swallowRedirects && CurlTransport.followableStatuses.contains(status)
                    && headers.contains { $0.name.equalsIgnoringASCIICase("Location") }
            }
        }
    }

    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        if swallowing { return bytes.count }
        if !begun {
            begun = true
            guard sink.begin(status: status, headers: headers) else { return 0 }
        }
        return sink.receive(bytes) ? bytes.count : 0
    }

    fileprivate func progress(sent: Int64, received: Int64, expected: Int64) -> Int32 {
        if sent != lastSent || received != lastReceived {
            lastSent = sent
            lastReceived = received
            sink.progress(sent: sent, received: received, expectedReceive: expected > 0 ? expected : nil)
        }
        return 0
    }

    /// The answer's status so far, for the loop's bookkeeping.
    var currentStatus: Int { status }
}

/// What curl's result codes mean for Attache.
enum TransportErrors {
    static func classify(code: CURLcode, text: String, bodySent: Int64, total: Int64) -> AttacheError {
        let cause = NativeError(library: "curl", code: Int(code.rawValue), text: text)
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            return AttacheError(
                .connectionFailed, stage: .upload, "cannot connect: \(text)", isRetryable: true, cause: cause)
        case CURLE_OPERATION_TIMEDOUT:
            return AttacheError(.timedOut, stage: .upload, "timed out: \(text)", isRetryable: true, cause: cause)
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE,
            CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_HTTP3, CURLE_SEND_FAIL_REWIND:
            let progress = total > 0 ? "after \(bodySent) of \(total) bytes" : "mid-answer"
            return AttacheError(
                .connectionLost, stage: .upload, "connection lost \(progress): \(text)", isRetryable: true,
                cause: cause)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_CERTPROBLEM, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE:
            return AttacheError(.tlsFailure, stage: .upload, "TLS verification failed: \(text)", cause: cause)
        case CURLE_SSL_CONNECT_ERROR:
            return AttacheError(
                .tlsFailure, stage: .upload, "TLS handshake failed: \(text)", isRetryable: true, cause: cause)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return AttacheError(.invalidArgument, stage: .upload, "bad URL: \(text)", cause: cause)
        case CURLE_ABORTED_BY_CALLBACK:
            return AttacheError(.cancelled, stage: .upload, "the transfer was cancelled", cause: cause)
        default:
            return AttacheError(.nativeLibrary, stage: .upload, text, isRetryable: true, cause: cause)
        }
    }
}

/// The event loop: one thread running curl's multi interface for every transfer of a transport.
///
/// Other threads talk to it only through ``submit(_:)``, which queues a command and wakes the loop
/// (`curl_multi_wakeup`). The thread starts with the first transfer and ends after a while without
/// any; the multi handle, and with it the idle connections, stays.
final class CurlMultiLoop: @unchecked Sendable {
    enum Command {
        /// A transfer and the handle ``prepare(_:)`` set up for it.
        case add(CurlExchange, CurlEasy)
        case cancel(CurlExchange)
        case unpause(CurlExchange)
    }

    private struct Inbox {
        var commands: [Command] = []
        var threadRunning = false
        /// The loop is in (or about to enter) `curl_multi_poll` with no command waiting: a new command
        /// must wake it. While it is busy it picks commands up on its next turn without a wake-up, which
        /// saves a write and a wake per request when many small ones are in flight.
        var sleeping = false
    }

    private let maximumConnectionsPerHost: Int?
    private let inbox = LockedValue(Inbox())
    /// Created on the loop's first start; then owned by the loop thread (and by `submit` only for
    /// `curl_multi_wakeup`, which is thread-safe).
    private let handles = LockedValue(Handles())

    /// The multi and share handles: plain pointers, used on the loop thread (and `curl_multi_wakeup`,
    /// which is thread-safe, from any).
    private struct Handles: @unchecked Sendable {
        var multi: UnsafeMutableRawPointer?
        var share: OpaquePointer?
    }
    // Loop-thread state.
    private var active: [UnsafeMutableRawPointer: CurlExchange] = [:]
    /// Reset easy handles of finished transfers, for the next ones: making and freeing a handle per
    /// request was a tenth of a small request's cost. Taken by ``prepare(_:)`` on callers' threads,
    /// given back by the loop.
    private let idle = LockedValue<[CurlEasy]>([])
    private static let idleLimit = 32
    /// How long the thread waits with nothing to do before it ends.
    private let idleLifetime: Duration = .seconds(5)

    init(maximumConnectionsPerHost: Int?) {
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
    }

    /// Queues `command` for the loop and wakes it, starting its thread when it is not running.
    func submit(_ command: Command) {
        enum Action { case start, wake, none }
        let action = inbox.withLock { inbox -> Action in
            inbox.commands.append(command)
            if !inbox.threadRunning {
                inbox.threadRunning = true
                return .start
            }
            guard inbox.sleeping else { return .none }
            inbox.sleeping = false
            return .wake
        }
        switch action {
        case .start: startDetachedThread(name: "attache-transport", stackSize: 1 << 20) { [self] in run() }
        case .wake:
            // curl_multi_wakeup is sticky: sent before the loop reaches curl_multi_poll, it makes that
            // poll return at once.
            if let multi = handles.withLock({ $0 }).multi { _ = attache_curl_multi_wakeup(multi) }
        case .none: break
        }
    }

    /// Transfers running now (loop thread; for tests through ``activeCount``).
    private let activeGauge = Atomic<Int>(0)
    var activeCount: Int { activeGauge.load(ordering: .relaxed) }

    /// A handle with every option of `exchange` set (any thread): a reset one of an earlier transfer
    /// when there is one, else a new one.
    ///
    /// Connections live in the multi handle, not in easy handles, so a reused handle serves as well as a
    /// new one; except that curl refuses `CURLOPT_BUFFERSIZE` on a handle that has been used, so a
    /// transfer with a receive buffer of its own size gets a new handle (and it is not kept after).
    func prepare(_ exchange: CurlExchange) throws -> CurlEasy {
        let reused = exchange.request.receiveBufferSize == nil ? idle.withLock { $0.popLast() } : nil
        let easy = try reused ?? CurlEasy()
        try exchange.configure(easy)
        return easy
    }

    /// Gives a finished transfer's handle back for later transfers (loop thread).
    private func recycle(_ easy: CurlEasy) {
        guard !easy.receiveBufferSet else { return }
        easy.reset()
        idle.withLock { idle in
            if idle.count < Self.idleLimit { idle.append(easy) }
        }
    }

    private func makeHandles() -> UnsafeMutableRawPointer? {
        handles.withLock { handles -> UnsafeMutableRawPointer? in
            if let multi = handles.multi { return multi }
            guard (try? CurlGlobal.ensureInitialized()) != nil, let multi = attache_curl_multi_init() else { return nil }
            if let limit = maximumConnectionsPerHost {
                _ = attache_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, limit)
            }
            _ = attache_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
            // Keep idle connections for later transfers: curl's default cache is four per transfer in
            // the handle, so a batch whose transfers dip for a moment closed connections it needed again.
            _ = attache_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 64)
            if let share = attache_curl_share_init() {
                _ = attache_curl_share_data(share, CURL_LOCK_DATA_SSL_SESSION)
                _ = attache_curl_share_data(share, CURL_LOCK_DATA_DNS)
                handles.share = OpaquePointer(share)
            }
            handles.multi = multi
            return multi
        }
    }

    private func run() {
        guard let multi = makeHandles() else {
            failEverything(AttacheError(.nativeLibrary, stage: .upload, "cannot start curl's multi interface"))
            return
        }
        let share = handles.withLock { $0 }.share
        let clock = ContinuousClock()
        var idleSince = clock.now
        while true {
            let commands = inbox.withLock { inbox -> [Command]? in
                if inbox.commands.isEmpty, active.isEmpty, clock.now - idleSince > idleLifetime {
                    inbox.threadRunning = false
                    return nil
                }
                defer { inbox.commands.removeAll(keepingCapacity: true) }
                return inbox.commands
            }
            guard let commands else { return }
            for command in commands { handle(command, multi: multi, share: share) }

            var running: Int32 = 0
            _ = attache_curl_multi_perform(multi, &running)
            var code = CURLE_OK
            while let done = attache_curl_multi_next_done(multi, &code) {
                complete(done, code: code, multi: multi)
            }
            activeGauge.store(active.count, ordering: .relaxed)
            if !active.isEmpty { idleSince = clock.now }
            // Sleep only when no command came in during this turn (checked under the inbox's lock, the
            // same one submit takes, so a command is either seen here or followed by a wake-up).
            let mayPoll = inbox.withLock { inbox -> Bool in
                guard inbox.commands.isEmpty else { return false }
                inbox.sleeping = true
                return true
            }
            if mayPoll {
                _ = attache_curl_multi_poll(multi, 1000)
                inbox.withLock { $0.sleeping = false }
            }
        }
    }

    private func handle(_ command: Command, multi: UnsafeMutableRawPointer, share: OpaquePointer?) {
        switch command {
        case .add(let exchange, let easy):
            if exchange.cancelledBeforeAdd {
                recycle(easy)
                return
            }
            if let share {
                do {
                    try easy.set(CURLOPT_SHARE, pointer: UnsafeMutableRawPointer(share))
                } catch {
                    exchange.finish(.failure(error))
                    return
                }
            }
            exchange.easy = easy
            let added = attache_curl_multi_add_handle(multi, easy.handle)
            guard added == CURLM_OK else {
                exchange.easy = nil
                exchange.finish(
                    .failure(
                        AttacheError(
                            .nativeLibrary, stage: .upload,
                            "curl_multi_add_handle failed: \(String(cString: attache_curl_multi_strerror(added)))")))
                return
            }
            active[easy.handle] = exchange
        case .cancel(let exchange):
            guard let easy = exchange.easy, active.removeValue(forKey: easy.handle) != nil else {
                // Not added yet (or finished already, when marking it changes nothing): its add is refused.
                exchange.cancelledBeforeAdd = true
                exchange.finish(.failure(AttacheError(.cancelled, stage: .upload, "the transfer was cancelled")))
                return
            }
            _ = attache_curl_multi_remove_handle(multi, easy.handle)
            exchange.easy = nil
            exchange.finish(.failure(AttacheError(.cancelled, stage: .upload, "the transfer was cancelled")))
        case .unpause(let exchange):
            guard let easy = exchange.easy, active[easy.handle] != nil else { return }
            _ = attache_curl_easy_pause(easy.handle, attache_curl_pause_cont())
        }
    }

    private func complete(_ handle: UnsafeMutableRawPointer, code: CURLcode, multi: UnsafeMutableRawPointer) {
        guard let exchange = active.removeValue(forKey: handle), let easy = exchange.easy else {
            _ = attache_curl_multi_remove_handle(multi, handle)
            return
        }
        let text = easy.errorText(for: code)
        let result = exchange.result(code: code, text: text, easy: easy)
        _ = attache_curl_multi_remove_handle(multi, handle)
        exchange.easy = nil
        exchange.finish(result)
        // Only a handle whose transfer ended cleanly is kept: one that failed (a refused connection, a
        // cut) may carry state of that failure that `curl_easy_reset` does not clear.
        if code == CURLE_OK { recycle(easy) }
    }

    private func failEverything(_ error: AttacheError) {
        let commands = inbox.withLock { inbox -> [Command] in
            inbox.threadRunning = false
            defer { inbox.commands.removeAll() }
            return inbox.commands
        }
        for case .add(let exchange, _) in commands { exchange.finish(.failure(error)) }
    }
}

// MARK: C callbacks: recover the exchange from the user pointer and forward.

private func transportReadCallback(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?
) -> Int {
    guard let buffer, let user else { return attache_curl_readfunc_abort() }
    let exchange = Unmanaged<CurlExchange>.fromOpaque(user).takeUnretainedValue()
    return exchange.fillUploadBuffer(UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
}

private func transportSeekCallback(_ user: UnsafeMutableRawPointer?, _ offset: curl_off_t, _ origin: Int32) -> Int32 {
    guard let user, origin == SEEK_SET else { return CURL_SEEKFUNC_CANTSEEK }
    let exchange = Unmanaged<CurlExchange>.fromOpaque(user).takeUnretainedValue()
    return exchange.rewindBody(to: Int64(offset))
}

private func transportWriteCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let user else { return 0 }
    let exchange = Unmanaged<CurlExchange>.fromOpaque(user).takeUnretainedValue()
    return exchange.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
}

private func transportHeaderCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let user else { return 0 }
    let exchange = Unmanaged<CurlExchange>.fromOpaque(user).takeUnretainedValue()
    exchange.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}

private func transportProgressCallback(
    _ user: UnsafeMutableRawPointer?, _ downloadTotal: curl_off_t, _ downloaded: curl_off_t,
    _ uploadTotal: curl_off_t, _ uploaded: curl_off_t
) -> Int32 {
    guard let user else { return 0 }
    let exchange = Unmanaged<CurlExchange>.fromOpaque(user).takeUnretainedValue()
    return exchange.progress(sent: Int64(uploaded), received: Int64(downloaded), expected: Int64(downloadTotal))
}
