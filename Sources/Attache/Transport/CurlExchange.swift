internal import AttacheCore
internal import CCurl
import Glibc

///
/// Everything but ``continuation`` is touched only on the loop's thread, once the exchange is submitted.
final class CurlExchange: @unchecked Sendable {
    let request: TransportRequest
    let headerLines: [String]
    let sink: any ResponseSink
    let pump: BodyPump?
    let continuation = LockedValue<CheckedContinuation<ServerResponse, any Error>?>(nil)

    var easy: CurlEasy?
    /// What the transfer has seen; its decisions (loop thread).
    private var state: StateMachine
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
        self.state = StateMachine(swallowsRedirects: swallowRedirects)
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
        try easy.setHeaders(Self.withoutCurlsContentType(headerLines))
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
        if let certificate = connection.clientCertificate { try easy.set(CURLOPT_SSLCERT, certificate) }
        if let key = connection.clientKey { try easy.set(CURLOPT_SSLKEY, key) }
        if let proxy = connection.proxy { try easy.set(CURLOPT_PROXY, proxy) }
        if connection.preferHTTP2 {
            try easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
            // Over TLS, wait for a connection that may multiplex rather than open another one (plain
            // http is HTTP/1.1, where there is nothing to wait for).
            if request.url.hasPrefixIgnoringASCIICase("https:") {
                try easy.set(CURLOPT_PIPEWAIT, true)
            }
        } else {
            try easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        }
    }

    /// Bodies up to this size that were read ahead are handed to curl whole (``configure(_:)``).
    static let inlineBodyLimit = 64 * 1024

    /// `lines`, with `Content-Type:` added when they name no type: a request body handed to curl as post
    /// fields, or any `POST`, otherwise goes with curl's `Content-Type: application/x-www-form-urlencoded`,
    /// a type nobody asked for. A server that believes it parses the body as a form: moto stored a 1,000-byte
    /// multipart part sent that way as an empty one (its form parser took the bytes), so the object lost its
    /// last part. The empty value tells curl to send no such field.
    static func withoutCurlsContentType(_ lines: [String]) -> [String] {
        let named = lines.contains { $0.hasPrefixIgnoringASCIICase("content-type:") }
        return named ? lines : lines + ["Content-Type:"]
    }

    /// Turns curl's result into the answer or the error the caller gets.
    func result(code: CURLcode, text: String, easy: CurlEasy) -> Result<ServerResponse, any Error> {
        if let bodyFailure = state.bodyFailure { return .failure(bodyFailure) }
        if let failure = sink.failure { return .failure(failure) }
        if state.headDueAtEnd(code: code) {
            _ = sink.begin(status: state.status, headers: state.headers)
        }
        switch state.outcome(code: code, bodyExceededCap: sink.bodyExceededCap, sendsBody: pump != nil) {
        case .answer(let bodyIncomplete):
            return .success(
                ServerResponse(
                    status: state.status, headers: state.headers, body: sink.collectedBody,
                    bodyExceededCap: sink.bodyExceededCap, bodyIncomplete: bodyIncomplete, timings: easy.timings()))
        case .failure:
            return .failure(
                TransportError.classify(
                    code: code, text: text, bodySent: max(state.bodySent, easy.info(size: CURLINFO_SIZE_UPLOAD_T)),
                    total: pump?.source.byteCount ?? 0))
        }
    }

    // MARK: Callback bodies (loop thread): feed the state machine, do what it says.

    fileprivate func fillUploadBuffer(_ buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let pump else { return 0 }
        switch state.bodyRead(pump.read(into: buffer)) {
        case .deliver(let count): return count
        case .pause: return attache_curl_readfunc_pause()
        case .end: return 0
        case .abort: return attache_curl_readfunc_abort()
        }
    }

    fileprivate func rewindBody(to offset: Int64) -> Int32 {
        guard offset == 0, let pump, pump.rewind() else { return CURL_SEEKFUNC_CANTSEEK }
        state.bodyRewound()
        return CURL_SEEKFUNC_OK
    }

    fileprivate func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        switch state.headerLine(HeaderLine(bytes)) {
        case .none: break
        case .informational(let status, let headers): sink.informational(status: status, headers: headers)
        }
    }

    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        switch state.bodyArrived() {
        case .discard:
            return bytes.count
        case .beginThenDeliver:
            guard sink.begin(status: state.status, headers: state.headers) else { return 0 }
            return sink.receive(bytes) ? bytes.count : 0
        case .deliver:
            return sink.receive(bytes) ? bytes.count : 0
        }
    }

    fileprivate func progress(sent: Int64, received: Int64, expected: Int64) -> Int32 {
        if state.progressed(sent: sent, received: received) {
            sink.progress(sent: sent, received: received, expectedReceive: expected > 0 ? expected : nil)
        }
        return 0
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

