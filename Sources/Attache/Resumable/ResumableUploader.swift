import FoundationEssentials
package import Logging

/// Sends bodies with tus 1.0 or the IETF resumable upload draft through the transport: an upload
/// that loses its connection, or whose process dies, continues at the server's offset.
///
/// tus: `OPTIONS` for the server's extensions and limits, `POST` creation (with `Upload-Length` and
/// `Upload-Metadata`; the whole body in it when `creation-with-upload` is listed and it fits one append), `PATCH`
/// appends with `Upload-Checksum` (a `460` sends that chunk again), `HEAD` after a failure or a `409`,
/// a new upload when the old one expired (404/410). IETF: the creation `POST` with
/// `Upload-Complete`, whose `104` interim answer's `Location` is kept as soon as it arrives; appends by
/// `PATCH` with `application/partial-upload`; `Upload-Limit` respected; a `413` halves the append size.
/// Appends adapt their size to take about ``ResumableConfiguration/targetAppendDuration``.
///
/// ```swift
/// let uploader = ResumableUploader(configuration: ResumableConfiguration(mode: .tus))
/// let sealed = try Sealer(scheme: .streamGCM, key: key).seal(try FileSource(path: "video.mp4"))
/// if let result = try await uploader.upload(
///     ResumableUploadRequest(url: "https://files.example/upload", body: sealed, filename: "video.mp4")) {
///     print(result.uploadURL, result.bytesSent)
/// }
/// ```
package struct ResumableUploader: Sendable {
    /// Timeouts, retries, TLS, headers and credentials.
    package var connection: ConnectionConfiguration
    /// How the server's final answers are read.
    package var answers: ResponseInterpreter.Configuration
    /// Protocol and append sizes.
    package var configuration: ResumableConfiguration
    /// Where requests are logged (at `.debug`).
    package var logger: Logger
    /// The client whose transport, interceptors and hooks every request goes through.
    let client: AttacheClient

    /// Creates an uploader.
    /// - Parameter transport: the shared ``CurlTransport`` for `connection` when nil.
    package init(
        connection: ConnectionConfiguration = .init(), answers: ResponseInterpreter.Configuration = .init(),
        configuration: ResumableConfiguration = .init(mode: .auto), logger: Logger = Logger(label: "attache.resumable"),
        transport: (any HTTPTransport)? = nil
    ) {
        self.init(
            client: AttacheClient(connection: connection, transport: transport), answers: answers,
            configuration: configuration, logger: logger)
    }

    /// Creates the resumable upload operation of `client`, with the client's connection settings.
    package init(
        client: AttacheClient, answers: ResponseInterpreter.Configuration = .init(),
        configuration: ResumableConfiguration = .init(mode: .auto), logger: Logger = Logger(label: "attache.resumable")
    ) {
        self.connection = client.connection
        self.answers = answers
        self.configuration = configuration
        self.logger = logger
        self.client = client
    }

    /// Sends `request` resumably.
    ///
    /// - Parameters:
    ///   - onState: called with the upload's resource and each offset the server confirms (to make them
    ///     durable), with nil when an upload is abandoned (expired) and started over, and with nil once
    ///     the server stored it.
    ///   - progress: non-decreasing fractions, as ``Uploader/upload(_:progress:)`` reports them, with
    ///     ``UploadProgress/resumedBytes`` set to what the server already had.
    /// - Returns: nil when the server speaks neither protocol (`.auto`: no `Tus-Resumable`, no upload
    ///   resource; `.ietf`: no `104` and a refusal of the raw body) and nothing was stored: send a
    ///   multipart upload instead.
    /// - Throws: ``AttacheCore/AttacheError`` — `.cancelled`; `.retriesExhausted` or `.connectionFailed` when appends
    ///   kept failing without progress (per ``ConnectionConfiguration/retry``); `.invalidArgument` for a
    ///   field name that cannot go in `Upload-Metadata`; source errors.
    package func upload(
        _ request: ResumableUploadRequest,
        onState: (@Sendable (ResumableState?) async -> Void)? = nil,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> ResumableUploadResult? {
        var session = try ResumableSession(uploader: self, request: request, onState: onState, progress: progress)
        let result = try await session.run()
        // Stored: nothing is left to resume.
        if let result, case .stored = result.upload.outcome { await onState?(nil) }
        return result
    }
}

extension ResumableUploader {
    /// Deletes an unfinished upload on the server (tus termination, IETF cancellation): `DELETE` on its
    /// resource. Returns true when the server removed it (2xx) or no longer had it (404, 410).
    /// - Throws: ``AttacheCore/AttacheError`` from the transport.
    package func terminate(_ state: ResumableState) async throws -> Bool {
        var headers: [HeaderField] = []
        if state.protocolName == .tus { headers.append(HeaderField(name: "Tus-Resumable", value: "1.0.0")) }
        let exchange = try TransportRequest(
            method: "DELETE", url: state.uploadURL, headers: headers, connection: connection,
            maximumResponseBodySize: answers.maximumBodySize
        ).prepared(for: .upload)
        // Once: what is left of an upload nobody continues expires on the server anyway.
        let answer = try await client.execute(.resumableUpload, policy: RetryPolicy(maximumAttempts: 1), answerStage: .upload) { _ in
            (exchange, nil)
        } settle: { answer -> Settlement<ServerResponse> in
            .done(answer.response)
        }
        let response = answer.value
        return (200..<300).contains(response.status) || response.status == 404 || response.status == 410
    }
}
