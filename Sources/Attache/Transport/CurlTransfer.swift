internal import CCurl
import Foundation
import Synchronization

/// A flag set from any thread to stop a running transfer at its next callback.
final class CancellationFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// How one attempt ended.
enum AttemptResult: Sendable {
    /// The server answered (possibly an error status or a partial body).
    case response(HTTPResponse)
    /// No usable answer: the transport failed, the source failed, or the attempt was cancelled.
    case failure(AttacheError)
}

/// Everything one attempt needs, fixed before it starts.
struct AttemptPlan: Sendable {
    var url: String
    var headerLines: [String]
    var body: any ByteSource
    var configuration: ConnectionConfiguration
    var maximumResponseSize: Int
    /// Remaining time budget for the whole attempt, if any.
    var timeout: Duration?
}

/// One POST through a curl easy handle, run on a blocking thread.
///
/// The body is pulled from its ``ByteReader`` inside curl's read callback, straight into curl's upload
/// buffer: the only copy of the payload in memory is that buffer (`uploadBufferSize`).
final class CurlTransfer {
    private let plan: AttemptPlan
    private let cancellation: CancellationFlag
    private let onProgress: @Sendable (Int64, Int64) -> Void

    private var reader: (any ByteReader)?
    private var readError: AttacheError?
    private var responseBody: [UInt8] = []
    private var responseExceededCap = false
    private var responseHeaders: [(name: String, value: String)] = []
    private var lastReportedBytes: Int64 = -1
    private var bodySent: Int64 = 0

    init(
        plan: AttemptPlan, cancellation: CancellationFlag,
        onProgress: @escaping @Sendable (_ sent: Int64, _ total: Int64) -> Void
    ) {
        self.plan = plan
        self.cancellation = cancellation
        self.onProgress = onProgress
    }

    /// Runs the attempt to its end. Blocks the calling thread.
    func run() -> AttemptResult {
        let easy: CurlEasy
        do {
            easy = try CurlHandleCache.shared.take()
        } catch let error as AttacheError {
            return .failure(error)
        } catch {
            return .failure(AttacheError(.internalError, stage: .upload, "\(error)"))
        }
        do {
            reader = try plan.body.makeReader()
        } catch let error as AttacheError {
            CurlHandleCache.shared.give(easy)
            return .failure(error)
        } catch {
            CurlHandleCache.shared.give(easy)
            return .failure(AttacheError(.fileUnreadable, stage: .read, "\(error)"))
        }
        let result = perform(on: easy)
        reader = nil
        // A handle whose transfer broke may hold a dead connection; curl discards those itself, so
        // it is safe to keep the handle either way.
        CurlHandleCache.shared.give(easy)
        return result
    }

    private func perform(on easy: CurlEasy) -> AttemptResult {
        let configuration = plan.configuration
        let context = Unmanaged.passUnretained(self).toOpaque()
        do {
            try easy.captureErrorText()
            try easy.set(CURLOPT_URL, plan.url)
            try easy.set(CURLOPT_NOSIGNAL, true)
            try easy.set(CURLOPT_POST, true)
            try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, size: plan.body.byteCount)
            try easy.setReadFunction(curlReadCallback)
            try easy.set(CURLOPT_READDATA, pointer: context)
            // curl rewinds the body when it must send the request again within one attempt (a reused
            // connection the server had closed, an auth round): the body is re-opened from its start.
            try easy.setSeekFunction(curlSeekCallback)
            try easy.set(CURLOPT_SEEKDATA, pointer: context)
            try easy.setWriteFunction(curlWriteCallback)
            try easy.set(CURLOPT_WRITEDATA, pointer: context)
            try easy.setHeaderFunction(curlHeaderCallback)
            try easy.set(CURLOPT_HEADERDATA, pointer: context)
            try easy.set(CURLOPT_NOPROGRESS, false)
            try easy.setProgressFunction(curlProgressCallback)
            try easy.set(CURLOPT_XFERINFODATA, pointer: context)
            try easy.set(CURLOPT_UPLOAD_BUFFERSIZE, configuration.uploadBufferSize)
            try easy.set(CURLOPT_BUFFERSIZE, 64 * 1024)
            try easy.setHeaders(plan.headerLines)
            try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout.milliseconds))
            // Stall detection: fewer than 1 byte/s in either direction for the stall timeout.
            try easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
            try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(configuration.stallTimeout.seconds.rounded(.up))))
            if let timeout = plan.timeout {
                try easy.set(CURLOPT_TIMEOUT_MS, max(1, Int(timeout.milliseconds)))
            }
            try easy.set(CURLOPT_TCP_KEEPALIVE, true)
            try easy.set(CURLOPT_TCP_NODELAY, true)
            try easy.set(CURLOPT_FOLLOWLOCATION, false)
            try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
            try easy.set(CURLOPT_SSL_VERIFYPEER, true)
            try easy.set(CURLOPT_SSL_VERIFYHOST, 2)
            if let caFile = configuration.caFile {
                try easy.set(CURLOPT_CAINFO, caFile)
            }
            if let pin = configuration.pinnedPublicKey {
                try easy.set(CURLOPT_PINNEDPUBLICKEY, pin)
            }
            if configuration.preferHTTP2 {
                try easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
            }
        } catch let error as AttacheError {
            return .failure(error)
        } catch {
            return .failure(AttacheError(.internalError, stage: .upload, "\(error)"))
        }

        onProgress(0, plan.body.byteCount)
        let (code, text) = easy.perform()
        let status = easy.info(long: CURLINFO_RESPONSE_CODE)

        if cancellation.isSet {
            return .failure(AttacheError(.cancelled, stage: .upload, "the upload was cancelled"))
        }
        if let readError {
            return .failure(readError)
        }
        let response = HTTPResponse(
            status: status, headers: responseHeaders, body: responseBody,
            bodyExceededCap: responseExceededCap,
            bodyIncomplete: code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR)
        let brokenTransport =
            code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR || code == CURLE_SEND_ERROR
            || code == CURLE_GOT_NOTHING
        if code == CURLE_OK || (code == CURLE_WRITE_ERROR && responseExceededCap) {
            return .response(response)
        }
        if brokenTransport, status >= 400, !responseHeaders.isEmpty {
            // The server answered an error before it had all of the body (an early 413, say) and
            // closed the connection: its answer counts, not the broken send.
            return .response(response)
        }
        if code == CURLE_PARTIAL_FILE, status > 0 {
            return .response(response)
        }
        return .failure(Self.classify(code: code, text: text, bodySent: bodySent, total: plan.body.byteCount))
    }

    static func classify(code: CURLcode, text: String, bodySent: Int64, total: Int64) -> AttacheError {
        let cause = NativeError(library: "curl", code: Int(code.rawValue), text: text)
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            return AttacheError(
                .connectionFailed, stage: .upload, "cannot connect: \(text)", isRetryable: true, cause: cause)
        case CURLE_OPERATION_TIMEDOUT:
            return AttacheError(.timedOut, stage: .upload, "timed out: \(text)", isRetryable: true, cause: cause)
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE,
            CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_HTTP3:
            return AttacheError(
                .connectionLost, stage: .upload,
                "connection lost after \(bodySent) of \(total) bytes: \(text)", isRetryable: true, cause: cause)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_CERTPROBLEM, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE:
            return AttacheError(.tlsFailure, stage: .upload, "TLS verification failed: \(text)", cause: cause)
        case CURLE_SSL_CONNECT_ERROR:
            return AttacheError(
                .tlsFailure, stage: .upload, "TLS handshake failed: \(text)", isRetryable: true, cause: cause)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return AttacheError(.invalidArgument, stage: .upload, "bad URL: \(text)", cause: cause)
        case CURLE_ABORTED_BY_CALLBACK:
            return AttacheError(.cancelled, stage: .upload, "the upload was cancelled", cause: cause)
        default:
            return AttacheError(.nativeLibrary, stage: .upload, text, isRetryable: true, cause: cause)
        }
    }

    // MARK: Callback bodies (called on the transfer's thread)

    fileprivate func fillUploadBuffer(_ buffer: UnsafeMutableRawBufferPointer) -> Int {
        if cancellation.isSet { return attache_curl_readfunc_abort() }
        guard let reader else { return 0 }
        do {
            let n = try reader.readFully(into: buffer)
            bodySent += Int64(n)
            return n
        } catch let error as AttacheError {
            readError = error
        } catch {
            readError = AttacheError(.fileUnreadable, stage: .read, "\(error)")
        }
        return attache_curl_readfunc_abort()
    }

    /// Starts the body again from its first byte; any other offset cannot be sought.
    fileprivate func rewindBody(to offset: Int64) -> Int32 {
        guard offset == 0 else { return CURL_SEEKFUNC_CANTSEEK }
        do {
            reader = try plan.body.makeReader()
            bodySent = 0
            return CURL_SEEKFUNC_OK
        } catch let error as AttacheError {
            readError = error
        } catch {
            readError = AttacheError(.fileUnreadable, stage: .read, "\(error)")
        }
        return CURL_SEEKFUNC_FAIL
    }

    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        if responseBody.count + bytes.count > plan.maximumResponseSize {
            responseBody.append(contentsOf: bytes.prefix(plan.maximumResponseSize - responseBody.count))
            responseExceededCap = true
            return 0  // makes curl stop with CURLE_WRITE_ERROR
        }
        responseBody.append(contentsOf: bytes)
        return bytes.count
    }

    fileprivate func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        switch HeaderLine(bytes) {
        case .status:
            // A new status line (after 100 Continue or a redirect): forget the previous headers.
            responseHeaders.removeAll()
            responseBody.removeAll()
        case .field(let name, let value):
            responseHeaders.append((name, value))
        case .other:
            break
        }
    }

    fileprivate func progress(uploaded: Int64) -> Int32 {
        if cancellation.isSet { return 1 }
        if uploaded != lastReportedBytes {
            lastReportedBytes = uploaded
            onProgress(uploaded, plan.body.byteCount)
        }
        return 0
    }
}

// MARK: C callbacks: recover the transfer from the user pointer and forward.

private func curlReadCallback(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?
) -> Int {
    guard let buffer, let user else { return attache_curl_readfunc_abort() }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    return transfer.fillUploadBuffer(UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
}

private func curlSeekCallback(_ user: UnsafeMutableRawPointer?, _ offset: curl_off_t, _ origin: Int32) -> Int32 {
    guard let user, origin == SEEK_SET else { return CURL_SEEKFUNC_CANTSEEK }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    return transfer.rewindBody(to: Int64(offset))
}

private func curlWriteCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let user else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
}

private func curlHeaderCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let user else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}

private func curlProgressCallback(
    _ user: UnsafeMutableRawPointer?, _ downloadTotal: curl_off_t, _ downloaded: curl_off_t,
    _ uploadTotal: curl_off_t, _ uploaded: curl_off_t
) -> Int32 {
    guard let user else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    return transfer.progress(uploaded: Int64(uploaded))
}

extension Duration {
    /// The duration in whole milliseconds, rounded down.
    var milliseconds: Int64 {
        let parts = components
        return parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000
    }
}

/// One line of a response head as curl's header callback hands it over.
enum HeaderLine: Equatable {
    /// `HTTP/1.1 206 Partial Content`: a new response begins (after a redirect or 100 Continue).
    case status(Int)
    case field(name: String, value: String)
    /// The empty line that ends the head, or anything unparseable.
    case other

    init(_ bytes: UnsafeRawBufferPointer) {
        let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if line.hasPrefix("HTTP/") {
            let parts = line.split(separator: " ")
            self = .status(parts.count > 1 ? Int(parts[1]) ?? 0 : 0)
        } else if let colon = line.firstIndex(of: ":") {
            self = .field(
                name: String(line[..<colon]).trimmingCharacters(in: .whitespaces),
                value: String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        } else {
            self = .other
        }
    }
}
