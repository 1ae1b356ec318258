internal import AttacheCore
import FoundationEssentials
import Logging

/// One request to an object store, as the object storage operation sends it.
struct ObjectRequest: Sendable {
    /// Where it goes.
    enum Target: Sendable {
        /// A URL presigned by whoever holds the credentials (sent as it is, unsigned).
        case presigned(String)
        /// An object (or, with an empty key, a bucket) by its address, to be signed with SigV4 for each
        /// attempt: by the requester's ``ObjectRequester/signer``, or, without one, by the client's adapters
        /// (``ObjectStoreSigning/adapters``).
        case signed(S3ObjectAddress)
    }

    var method: String
    var target: Target
    /// Headers of this request (`Content-Type`, `If-None-Match`, checksums); signed with the request.
    var headers: [HeaderField] = []
    /// The body, streamed; nil for none.
    var body: (any ByteSource)?
    /// The body's SHA-256 in hex for a small body in memory; ``SigV4Signer/unsignedPayload`` for a streamed
    /// one (never read twice to sign it); the empty hash without a body.
    var payloadHash: String = SigV4Signer.emptyPayloadHash
}

/// Sends ``ObjectRequest``s on an ``AttacheClient``'s attempt loop: a signed request signed again for
/// each attempt (its date is part of the signature), answers read as S3 writes them (the `s3-put`
/// profile: S3's XML `Error` is a refusal, whatever the status, also on a 200).
///
/// Without a signer, a request to a ``ObjectRequest/Target/signed(_:)`` target goes as it is, and the
/// client's adapters, which run before every attempt of every request, sign it (a presigned URL in place
/// of the object's): the endpoint's ``ObjectStoreSigning/adapters``.
struct ObjectRequester: Sendable {
    /// What an attempt series ended with.
    struct Answer: Sendable {
        var outcome: UploadResult.Outcome
        /// The final answer's headers.
        var headers: [HeaderField] = []
        var attempts: Int
        var reasons: [String]
        var duration: Duration
    }

    let client: AttacheClient
    /// Signs requests to ``ObjectRequest/Target/signed(_:)`` targets; nil leaves them to the client's adapters.
    let signer: SigV4Signer?
    let answers: ResponseInterpreter.Configuration
    let logger: Logger
    /// The connection's settings, with any per-send headers.
    var connection: ConnectionConfiguration

    /// - Parameter answers: how answers are read; nil: as S3 writes them (`s3-put`, 4 MiB at most).
    init(
        client: AttacheClient, signer: SigV4Signer?, connection: ConnectionConfiguration? = nil,
        answers: ResponseInterpreter.Configuration? = nil, logger: Logger
    ) {
        self.client = client
        self.signer = signer
        var s3 = ResponseInterpreter.Configuration(profile: .s3Put)
        s3.maximumBodySize = 4 << 20
        self.answers = answers ?? s3
        self.logger = logger
        self.connection = connection ?? client.connection
    }

    /// Sends `request` until it is settled or the connection's retry policy gives up.
    ///
    /// - Parameters:
    ///   - progress: body bytes handed to the network in the current attempt, and the attempt.
    ///   - waitsOut: asked about an answer the client would try again after a wait: true when it waited
    ///     for what the answer asks itself (a Matrix send waits for one of its pipeline's reservations to
    ///     end), so that the next attempt goes at once and counts as progress; false leaves the wait to the
    ///     policy.
    /// - Throws: ``AttacheCore/AttacheError`` of stage `upload` (or `download` for `GET`): transport failures that are
    ///   not retried, `.connectionFailed`/`.retriesExhausted` when the policy gives up, `.cancelled`.
    func send(
        _ request: ObjectRequest, policy: RetryPolicy? = nil,
        progress: (@Sendable (_ sent: Int64, _ attempt: Int) -> Void)? = nil,
        waitsOut: (@Sendable (RetryAdvice) async -> Bool)? = nil
    ) async throws -> Answer {
        let operation: ClientOperation = .objectUpload
        let url: String
        switch request.target {
        case .presigned(let presigned): url = presigned
        case .signed(let address): url = address.url
        }
        let base = try TransportRequest(
            method: request.method, url: url,
            headers: request.headers + [HeaderField(name: "Expect", value: "")], body: request.body,
            connection: connection, maximumResponseBodySize: answers.maximumBodySize
        ).prepared(for: operation.stage)
        let client = client
        let interpreter = ResponseInterpreter(configuration: answers, classifier: client.retry)
        var requestLogger = logger
        requestLogger[metadataKey: "url"] = "\(URLRedaction.redacting(url))"
        let answers = answers
        var headers: [HeaderField] = []
        let outcome = try await client.execute(
            operation, policy: policy ?? connection.retry, logger: requestLogger
        ) { attempt in
            var onProgress: (@Sendable (Int64, Int64) -> Void)?
            if let progress { onProgress = { sent, _ in progress(sent, attempt) } }
            return (try signed(base, request), CollectingSink(limit: answers.maximumBodySize, onProgress: onProgress))
        } settle: { answer -> Settlement<UploadResult.Outcome> in
            headers = answer.response.headers
            let settlement = interpreter.interpret(answer.response).settlement(of: answer)
            if case .retry(let advice, _) = settlement, let waitsOut, await waitsOut(advice) { return .progressed }
            return settlement
        }
        return Answer(
            outcome: outcome.value, headers: headers, attempts: outcome.attempts, reasons: outcome.reasons,
            duration: outcome.duration)
    }

    /// `base` with this attempt's signature, for a signed target when there is a signer; `base` as it is
    /// otherwise (presigned, or for the adapters to sign).
    private func signed(_ base: PreparedRequest, _ request: ObjectRequest) throws -> PreparedRequest {
        guard case .signed(let address) = request.target, let signer else { return base }
        let headers = try signer.signS3(
            method: request.method, address: address, headers: request.headers, payloadHash: request.payloadHash)
        return try base.replacingHeaders(headers + [HeaderField(name: "Expect", value: "")])
    }
}
