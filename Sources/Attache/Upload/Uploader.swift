import FoundationEssentials
import Glibc
public import Logging

/// One multipart POST, ready to send.
public struct UploadRequest: Sendable {
    /// The endpoint, `http://` or `https://`.
    package var url: String
    /// The body.
    package var body: MultipartBody
    /// Extra headers for this request only.
    package var headers: [HeaderField]
    /// Sent as `Idempotency-Key` on every attempt, so that the server can tell a retry from a new upload.
    package var idempotencyKey: String

    /// Creates a request; a random idempotency key is made when none is given.
    public init(
        url: String, body: MultipartBody, headers: [HeaderField] = [],
        idempotencyKey: String? = nil
    ) {
        self.url = url
        self.body = body
        self.headers = headers
        self.idempotencyKey = idempotencyKey ?? Uploader.makeIdempotencyKey()
    }
}

/// A progress report for one upload.
public struct UploadProgress: Sendable, Hashable, Codable {
    /// Body bytes handed to the network in the current attempt.
    public var bytesSent: Int64
    /// The body's length.
    public var totalBytes: Int64
    /// The attempt, from 1.
    public var attempt: Int
    /// Completed share from 0 to 1. Never goes down, also across retries: a retry shows the same
    /// share until it has passed where the previous attempt got to.
    public var fractionCompleted: Double
    /// Bytes a resumable upload found already on the server (sent by an earlier process) and did not
    /// send again; included in ``bytesSent``. 0 for other uploads.
    public var resumedBytes: Int64 = 0
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
    /// From the first attempt's start to the final answer, the waits between attempts included.
    public var duration: Duration
    /// Why each earlier attempt failed, in order (a transport error's or a retryable answer's message):
    /// empty when the first attempt reached the answer.
    public var retryReasons: [String]
}

/// Sends multipart bodies through the transport, streaming them from their sources, retrying what
/// can be retried: the multipart upload operation of an `AttacheClient`.
///
/// Attempts go through the client's `HTTPTransport` (`CurlTransport` unless told otherwise): a
/// transfer waiting on the network holds no thread. Cancelling the calling task stops the running attempt and
/// throws ``AttacheCore/AttacheError/Code/cancelled``.
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
    /// Where request and response summaries are logged (at `.debug`).
    package var logger: Logger
    /// The client whose transport, interceptors and hooks every attempt goes through.
    let client: AttacheClient

    /// Creates an uploader over the shared libcurl transport for `connection`.
    ///
    /// - Parameters:
    ///   - connection: timeouts, TLS, proxy, headers and the retry policy of every attempt.
    ///   - answers: how the server's answers are read (the answer profile and its settings).
    ///   - logger: where the uploader logs, at `debug`.
    public init(
        connection: ConnectionConfiguration = .init(),
        answers: ResponseInterpreter.Configuration = .init(),
        logger: Logger = Logger(label: "attache.upload")
    ) {
        self.init(client: AttacheClient(connection: connection, transport: nil), answers: answers, logger: logger)
    }

    /// Creates an uploader.
    ///
    /// - Parameter transport: what sends the requests; the shared `CurlTransport` for `connection`
    ///   when nil.
    package init(
        connection: ConnectionConfiguration = .init(),
        answers: ResponseInterpreter.Configuration = .init(),
        logger: Logger = Logger(label: "attache.upload"),
        transport: (any HTTPTransport)?
    ) {
        self.init(client: AttacheClient(connection: connection, transport: transport), answers: answers, logger: logger)
    }

    /// Creates the upload operation of `client`, with the client's connection settings.
    public init(
        client: AttacheClient, answers: ResponseInterpreter.Configuration = .init(),
        logger: Logger = Logger(label: "attache.upload")
    ) {
        self.connection = client.connection
        self.answers = answers
        self.logger = logger
        self.client = client
    }

    /// Creates an uploader whose waits between attempts go through `sleep` (tests).
    init(
        connection: ConnectionConfiguration, answers: ResponseInterpreter.Configuration, logger: Logger,
        transport: any HTTPTransport, sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.init(
            client: AttacheClient(connection: connection, transport: transport, sleep: sleep), answers: answers,
            logger: logger)
    }

    /// Sends `request`, retrying per the policy, and returns the server's decision.
    ///
    /// - Parameters:
    ///   - request: the URL, body, headers and idempotency key to send.
    ///   - progress: called from the transport's thread with non-decreasing fractions: 0 first, 1 last
    ///     (1 only when the server stored the upload).
    /// - Throws: ``AttacheCore/AttacheError`` — `.cancelled`; `.connectionFailed` when no attempt could
    ///   connect (refused, unresolvable; the last one is the `cause`); `.retriesExhausted` when every
    ///   attempt failed with another retryable error (the last one is the `cause`); a non-retryable transport
    ///   or source error (`.tlsFailure`, `.invalidArgument`, `.fileChanged`, …) as it happened.
    public func upload(
        _ request: UploadRequest,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> UploadResult {
        let client = client
        let interpreter = ResponseInterpreter(configuration: answers, classifier: client.retry)
        let tracker = ProgressTracker(total: request.body.byteCount, sink: progress)
        var logger = logger
        logger[metadataKey: "idempotency-key"] = "\(request.idempotencyKey)"
        logger[metadataKey: "url"] = "\(URLRedaction.redacting(request.url))"
        let exchange = try TransportRequest(
            method: "POST", url: request.url,
            headers: [
                HeaderField(name: "Content-Type", value: request.body.contentType),
                HeaderField(name: "Idempotency-Key", value: request.idempotencyKey),
                HeaderField(name: "Accept", value: "application/json"),
                // No `Expect: 100-continue`: most servers never answer it and curl would wait a second
                // before every large body.
                HeaderField(name: "Expect", value: ""),
            ] + request.headers,
            body: request.body, connection: connection, maximumResponseBodySize: answers.maximumBodySize
        ).prepared(for: .upload)
        let answers = answers
        let outcome = try await client.execute(.upload, policy: connection.retry, logger: logger) { attempt in
            logger.debug(
                "POST attempt \(attempt)", metadata: ["bytes": "\(request.body.byteCount)", "boundary": "\(request.body.boundary)"])
            tracker.report(sent: 0, attempt: attempt)
            let sink = CollectingSink(limit: answers.maximumBodySize) { sent, _ in tracker.report(sent: sent, attempt: attempt) }
            return (exchange, sink)
        } settle: { answer -> Settlement<UploadResult.Outcome> in
            let response = answer.response
            logger.debug(
                "answer \(response.status)",
                metadata: ["attempt": "\(answer.attempt)", "bytes": "\(response.body.count)", "content-type": "\(response.mediaType ?? "-")"])
            let settlement = client.telemetry.stage("interpret", { interpreter.interpret(response) }).settlement(of: answer)
            switch settlement {
            case .done(.stored): tracker.finish(attempt: answer.attempt)
            case .done(.rejected(let rejection)): logger.debug("rejected: \(rejection)", metadata: ["attempt": "\(answer.attempt)"])
            case .retry, .progressed: break
            }
            return settlement
        }
        return UploadResult(
            outcome: outcome.value, idempotencyKey: request.idempotencyKey, attempts: outcome.attempts,
            bodyByteCount: request.body.byteCount, duration: outcome.duration, retryReasons: outcome.reasons)
    }

    /// A fresh idempotency key: 32 random hex digits.
    package static func makeIdempotencyKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
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
    private let state = LockedValue(State())

    init(total: Int64, sink: (@Sendable (UploadProgress) -> Void)?) {
        self.total = total
        self.sink = sink
    }

    func report(sent: Int64, attempt: Int, resumed: Int64 = 0) {
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
            sink(
                UploadProgress(
                    bytesSent: sent, totalBytes: total, attempt: attempt, fractionCompleted: emit, resumedBytes: resumed))
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
