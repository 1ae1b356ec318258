import Foundation
public import Logging
import Synchronization

/// One multipart POST, ready to send.
public struct UploadRequest: Sendable {
    /// The endpoint, `http://` or `https://`.
    public var url: String
    /// The body.
    public var body: MultipartBody
    /// Extra headers for this request only.
    public var headers: [(name: String, value: String)]
    /// Sent as `Idempotency-Key` on every attempt, so that the server can tell a retry from a new upload.
    public var idempotencyKey: String

    /// Creates a request; a random idempotency key is made when none is given.
    public init(
        url: String, body: MultipartBody, headers: [(name: String, value: String)] = [],
        idempotencyKey: String? = nil
    ) {
        self.url = url
        self.body = body
        self.headers = headers
        self.idempotencyKey = idempotencyKey ?? Uploader.makeIdempotencyKey()
    }
}

/// A progress report for one upload.
public struct UploadProgress: Sendable, Hashable {
    /// Body bytes handed to the network in the current attempt.
    public var bytesSent: Int64
    /// The body's length.
    public var totalBytes: Int64
    /// The attempt, from 1.
    public var attempt: Int
    /// Completed share from 0 to 1. Never goes down, also across retries: a retry shows the same
    /// share until it has passed where the previous attempt got to.
    public var fractionCompleted: Double
}

/// The end of an upload that reached the server.
public struct UploadResult: Sendable {
    /// What the server decided.
    public enum Outcome: Sendable {
        /// Stored; the server's receipt.
        case stored(ServerReceipt)
        /// Refused; retrying will not help.
        case rejected(Rejection)
    }

    /// What the server decided.
    public var outcome: Outcome
    /// The key sent as `Idempotency-Key`.
    public var idempotencyKey: String
    /// Attempts made, the successful one included.
    public var attempts: Int
    /// The body length in bytes (what one attempt sends).
    public var bodyByteCount: Int64
    /// From the first attempt's start to the final answer.
    public var duration: Duration
    /// Why each earlier attempt failed, in order.
    public var retryReasons: [String]
}

/// Sends multipart bodies with libcurl, streaming them from their sources, retrying what can be retried.
///
/// Each attempt runs `curl_easy_perform` on a ``BlockingPool`` thread; uploads started concurrently run
/// on separate threads and so on separate cores. Cancelling the calling task stops the running attempt
/// at curl's next callback (within about a second) and throws ``AttacheError/Code/cancelled``.
///
/// ```swift
/// var body = MultipartBody()
/// try body.addFile(name: "file", filename: "a.pdf", contentType: "application/pdf",
///                  source: try FileSource(path: "a.pdf"))
/// let result = try await Uploader().upload(UploadRequest(url: "https://files.example/upload", body: body))
/// if case .stored(let receipt) = result.outcome { print(receipt.fileId ?? "") }
/// ```
public struct Uploader: Sendable {
    /// Timeouts, retries, TLS, headers and credentials.
    public var connection: ConnectionConfiguration
    /// How the server's answers are read.
    public var answers: ResponseInterpreter.Configuration
    /// Where request and response summaries are logged (at `.debug`; failures at `.notice`).
    public var logger: Logger
    private let pool: BlockingPool

    /// Creates an uploader.
    public init(
        connection: ConnectionConfiguration = .init(),
        answers: ResponseInterpreter.Configuration = .init(),
        logger: Logger = Logger(label: "attache.upload"),
        pool: BlockingPool = .shared
    ) {
        self.connection = connection
        self.answers = answers
        self.logger = logger
        self.pool = pool
    }

    /// Sends `request`, retrying per the policy, and returns the server's decision.
    ///
    /// - Parameter progress: called from a transfer thread with non-decreasing fractions: 0 first, 1 last
    ///   (1 only when the server stored the upload).
    /// - Throws: ``AttacheError`` — `.cancelled`; `.connectionFailed` when no attempt could connect
    ///   (refused, unresolvable; the last one is the `cause`); `.retriesExhausted` when every attempt
    ///   failed with another retryable error (the last one is the `cause`); a non-retryable transport or source error
    ///   (`.tlsFailure`, `.invalidArgument`, `.fileChanged`, …) as it happened.
    public func upload(
        _ request: UploadRequest,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> UploadResult {
        try validate(request)
        let interpreter = ResponseInterpreter(configuration: answers)
        let policy = connection.retry
        let clock = ContinuousClock()
        let start = clock.now
        let tracker = ProgressTracker(total: request.body.byteCount, sink: progress)
        var reasons: [String] = []
        var attempt = 0
        // A server that was never reached is unavailable (exit 69), not a temporary failure that
        // retrying has used up.
        var neverConnected = true
        let headerLines = makeHeaderLines(for: request)
        var requestLogger = logger
        requestLogger[metadataKey: "idempotency-key"] = "\(request.idempotencyKey)"
        requestLogger[metadataKey: "url"] = "\(Self.redact(url: request.url))"

        while true {
            attempt += 1
            try Task.checkCancellation()
            let plan = AttemptPlan(
                url: request.url, headerLines: headerLines, body: request.body,
                configuration: connection, maximumResponseSize: answers.maximumBodySize,
                timeout: nil)
            requestLogger.debug(
                "POST attempt \(attempt)",
                metadata: ["bytes": "\(request.body.byteCount)", "boundary": "\(request.body.boundary)"])
            let attemptStart = clock.now
            let result = try await perform(plan, attempt: attempt, tracker: tracker)

            let advice: RetryAdvice
            let failure: AttacheError?
            switch result {
            case .response(let response):
                requestLogger.debug(
                    "answer \(response.status)",
                    metadata: [
                        "attempt": "\(attempt)", "bytes": "\(response.body.count)",
                        "content-type": "\(response.mediaType ?? "-")",
                        "ms": "\((clock.now - attemptStart).milliseconds)",
                    ])
                switch interpreter.interpret(response) {
                case .success(let receipt):
                    tracker.finish(attempt: attempt)
                    return UploadResult(
                        outcome: .stored(receipt), idempotencyKey: request.idempotencyKey, attempts: attempt,
                        bodyByteCount: request.body.byteCount, duration: clock.now - start, retryReasons: reasons)
                case .rejection(let rejection):
                    requestLogger.notice("rejected: \(rejection)", metadata: ["attempt": "\(attempt)"])
                    return UploadResult(
                        outcome: .rejected(rejection), idempotencyKey: request.idempotencyKey,
                        attempts: attempt, bodyByteCount: request.body.byteCount, duration: clock.now - start,
                        retryReasons: reasons)
                case .retry(let retryAdvice):
                    advice = retryAdvice
                    failure = nil
                }
            case .failure(let error):
                guard error.isRetryable, error.code != .fileChanged else { throw error }
                advice = RetryAdvice(reason: error.message)
                failure = error
            }

            reasons.append(advice.reason)
            if failure?.code != .connectionFailed { neverConnected = false }
            let delay = policy.delay(afterAttempt: attempt, retryAfter: advice.retryAfter)
            let elapsed = clock.now - start
            if attempt >= policy.maximumAttempts || elapsed + delay > policy.budget {
                let why =
                    attempt >= policy.maximumAttempts
                    ? "gave up after \(attempt) attempts" : "gave up after \(attempt) attempts: time budget spent"
                requestLogger.notice("\(why): \(advice.reason)")
                throw AttacheError(
                    neverConnected ? .connectionFailed : .retriesExhausted, stage: failure == nil ? .interpret : .upload,
                    "\(why); last: \(advice.reason)", isRetryable: true, cause: failure)
            }
            requestLogger.notice(
                "attempt \(attempt) failed, retrying",
                metadata: ["reason": "\(advice.reason)", "delay-ms": "\(delay.milliseconds)"])
            try await Task.sleep(for: delay)
        }
    }

    private func perform(_ plan: AttemptPlan, attempt: Int, tracker: ProgressTracker) async throws -> AttemptResult {
        let cancellation = CancellationFlag()
        let result = try await withTaskCancellationHandler {
            try await pool.run {
                CurlTransfer(plan: plan, cancellation: cancellation) { sent, total in
                    tracker.report(sent: sent, attempt: attempt)
                }.run()
            }
        } onCancel: {
            cancellation.set()
        }
        if case .failure(let error) = result, error.code == .cancelled {
            throw error
        }
        return result
    }

    private func validate(_ request: UploadRequest) throws {
        guard let components = URLComponents(string: request.url),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            components.host?.isEmpty == false
        else {
            throw AttacheError(
                .invalidArgument, stage: .upload, "the URL must be http:// or https:// with a host: \(Self.redact(url: request.url))")
        }
        for (name, value) in request.headers + connection.headers {
            let forbidden = { (c: Unicode.Scalar) in c.value < 0x20 || c.value == 0x7F }
            guard !name.isEmpty, !name.unicodeScalars.contains(where: { forbidden($0) || $0 == ":" || $0 == " " }),
                !value.unicodeScalars.contains(where: { forbidden($0) && $0 != "\t" })
            else {
                throw AttacheError(.invalidArgument, stage: .upload, "invalid header \"\(name)\"")
            }
        }
    }

    private func makeHeaderLines(for request: UploadRequest) -> [String] {
        var lines = [
            "Content-Type: \(request.body.contentType)",
            "Idempotency-Key: \(request.idempotencyKey)",
            "User-Agent: \(connection.userAgent)",
            "Accept: application/json",
            // No `Expect: 100-continue`: most servers never answer it and curl would wait a second
            // before every large body.
            "Expect:",
        ]
        if let authorization = connection.authorization {
            lines.append("Authorization: \(authorization.headerValue)")
        }
        for (name, value) in connection.headers + request.headers {
            lines.append("\(name): \(value)")
        }
        return lines
    }

    /// A fresh idempotency key: 32 random hex digits.
    public static func makeIdempotencyKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
    }

    /// The URL without user info or query, for logs and errors.
    static func redact(url: String) -> String {
        guard var components = URLComponents(string: url) else { return "<invalid URL>" }
        if components.user != nil || components.password != nil {
            components.user = "***"
            components.password = nil
        }
        if components.query != nil { components.query = "…" }
        return components.string ?? "<invalid URL>"
    }
}

/// Turns per-attempt byte counts into a non-decreasing fraction, shared by the transfer threads.
final class ProgressTracker: Sendable {
    private struct State {
        var highWater: Double = -1
        var finished = false
    }

    private let total: Int64
    private let sink: (@Sendable (UploadProgress) -> Void)?
    private let state = Mutex(State())

    init(total: Int64, sink: (@Sendable (UploadProgress) -> Void)?) {
        self.total = total
        self.sink = sink
    }

    func report(sent: Int64, attempt: Int) {
        guard let sink else { return }
        // 100 % is reserved for the server's acceptance: bytes on the wire are not a stored file.
        let raw = total > 0 ? Double(sent) / Double(total) : 0
        let fraction = min(raw, 0.999)
        let emit = state.withLock { state -> Double? in
            guard !state.finished else { return nil }
            if fraction > state.highWater || state.highWater < 0 {
                state.highWater = max(fraction, state.highWater)
                return state.highWater
            }
            return nil
        }
        if let emit {
            sink(UploadProgress(bytesSent: sent, totalBytes: total, attempt: attempt, fractionCompleted: emit))
        }
    }

    func finish(attempt: Int) {
        guard let sink else { return }
        let first = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        if first {
            sink(UploadProgress(bytesSent: total, totalBytes: total, attempt: attempt, fractionCompleted: 1))
        }
    }
}
