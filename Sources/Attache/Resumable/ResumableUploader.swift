import FoundationEssentials
public import Logging

/// One body to send as a resumable upload.
public struct ResumableUploadRequest: Sendable {
    /// The creation endpoint (the multipart endpoint of the same server, for the reference server).
    public var url: String
    /// The bytes: the sealed payload. Chunks are opened with ``ByteSource/makeReader(startingAt:)``.
    public var body: any ByteSource
    /// The body's content type (tus `filetype`, the IETF creation request's `Content-Type`).
    public var contentType: String
    /// The filename (tus `filename`).
    public var filename: String
    /// Form fields, sent as `Upload-Metadata` (`key base64(value)`, comma-separated). Names must be
    /// tokens without spaces or commas.
    public var fields: [UploadField]
    /// Sent as `Idempotency-Key` with the creation request.
    public var idempotencyKey: String
    /// An upload an earlier process started (the batch journal's): continued from the server's
    /// offset when the server still has it, started over when not.
    public var resumeFrom: ResumableState?

    /// Creates a request.
    public init(
        url: String, body: any ByteSource, contentType: String = "application/octet-stream", filename: String,
        fields: [UploadField] = [], idempotencyKey: String? = nil, resumeFrom: ResumableState? = nil
    ) {
        self.url = url
        self.body = body
        self.contentType = contentType
        self.filename = filename
        self.fields = fields
        self.idempotencyKey = idempotencyKey ?? Uploader.makeIdempotencyKey()
        self.resumeFrom = resumeFrom
    }
}

/// What a resumable upload came to.
public struct ResumableUploadResult: Sendable {
    /// The server's decision, as for a multipart upload.
    public var upload: UploadResult
    /// The protocol used.
    public var protocolName: ResumableProtocol
    /// The upload resource.
    public var uploadURL: String
    /// Bytes the server already had when this call started (from ``ResumableUploadRequest/resumeFrom``).
    public var resumedFrom: Int64
    /// Body bytes handed to the network by this call, every request counted.
    public var bytesSent: Int64
    /// Requests made (creation, appends, offset checks, the receipt).
    public var requests: Int
}

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
public struct ResumableUploader: Sendable {
    /// Timeouts, retries, TLS, headers and credentials.
    public var connection: ConnectionConfiguration
    /// How the server's final answers are read.
    public var answers: ResponseInterpreter.Configuration
    /// Protocol and append sizes.
    public var configuration: ResumableConfiguration
    /// Where requests are logged (at `.debug`).
    public var logger: Logger
    private let transport: any HTTPTransport
    private let sleep: @Sendable (Duration) async throws -> Void

    /// Creates an uploader.
    /// - Parameter transport: the shared ``CurlTransport`` for `connection` when nil.
    public init(
        connection: ConnectionConfiguration = .init(), answers: ResponseInterpreter.Configuration = .init(),
        configuration: ResumableConfiguration = .init(mode: .auto), logger: Logger = Logger(label: "attache.resumable"),
        transport: (any HTTPTransport)? = nil
    ) {
        self.connection = connection
        self.answers = answers
        self.configuration = configuration
        self.logger = logger
        self.transport = transport ?? CurlTransport.shared(for: connection)
        self.sleep = { try await Task.sleep(for: $0) }
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
    /// - Throws: ``AttacheError`` — `.cancelled`; `.retriesExhausted` or `.connectionFailed` when appends
    ///   kept failing without progress (per ``ConnectionConfiguration/retry``); `.invalidArgument` for a
    ///   field name that cannot go in `Upload-Metadata`; source errors.
    public func upload(
        _ request: ResumableUploadRequest,
        onState: (@Sendable (ResumableState?) -> Void)? = nil,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> ResumableUploadResult? {
        var session = try Session(uploader: self, request: request, onState: onState, progress: progress)
        let result = try await session.run()
        // Stored: nothing is left to resume.
        if let result, case .stored = result.upload.outcome { onState?(nil) }
        return result
    }
}

extension ResumableUploader {
    /// Deletes an unfinished upload on the server (tus termination, IETF cancellation): `DELETE` on its
    /// resource. Returns true when the server removed it (2xx) or no longer had it (404, 410).
    /// - Throws: ``AttacheError`` from the transport.
    public func terminate(_ state: ResumableState) async throws -> Bool {
        var headers: [HeaderField] = []
        if state.protocolName == .tus { headers.append(HeaderField(name: "Tus-Resumable", value: "1.0.0")) }
        let exchange = TransportRequest(
            method: "DELETE", url: state.uploadURL, headers: headers, connection: connection,
            maximumResponseBodySize: answers.maximumBodySize)
        try exchange.validate()
        let response = try await transport.send(exchange)
        return (200..<300).contains(response.status) || response.status == 404 || response.status == 410
    }
}

/// The capabilities a tus server announced in its `OPTIONS` answer.
struct TusCapabilities: Sendable {
    var extensions: Set<String> = []
    var maximumSize: Int64?
    var checksumAlgorithms: [String] = []

    /// The checksum to send: `sha256` when listed, else `sha1`, else none.
    var checksumAlgorithm: String? {
        guard extensions.contains("checksum") else { return nil }
        if checksumAlgorithms.contains("sha256") { return "sha256" }
        if checksumAlgorithms.contains("sha1") { return "sha1" }
        return nil
    }
}

/// One upload's conversation with the server.
private struct Session {
    let uploader: ResumableUploader
    let request: ResumableUploadRequest
    let onState: (@Sendable (ResumableState?) -> Void)?
    let total: Int64
    let metadata: String
    let interpreter: ResponseInterpreter
    let tracker: ProgressTracker
    let logger: Logger
    let clock = ContinuousClock()
    let start: ContinuousClock.Instant

    var state: ResumableState?
    var tus = TusCapabilities()
    var appendLimit: Int64?
    /// The server's `min-append-size`, when it gave one.
    var appendFloor: Int64?
    /// The `HEAD` answer that said the upload is complete (it names the receipt).
    var completedHead: ServerResponse?
    var appendSize: Int64
    var requests = 0
    let sent = ByteCounter()
    var resumedFrom: Int64 = 0
    var failures = 0
    var reasons: [String] = []
    var restarted = false

    init(
        uploader: ResumableUploader, request: ResumableUploadRequest, onState: (@Sendable (ResumableState?) -> Void)?,
        progress: (@Sendable (UploadProgress) -> Void)?
    ) throws {
        self.uploader = uploader
        self.request = request
        self.onState = onState
        total = request.body.byteCount
        var pairs = [("filename", request.filename), ("filetype", request.contentType)]
        pairs += request.fields.map { ($0.name, $0.value) }
        for (name, _) in pairs where name.isEmpty || name.contains(" ") || name.contains(",") || !HeaderFieldSyntax.isValidValue(name) {
            throw AttacheError(
                .invalidArgument, stage: .upload, "the field name \"\(name)\" cannot be sent in Upload-Metadata")
        }
        metadata = pairs.map { $0.0 + " " + Base64.encode(Array($0.1.utf8)) }.joined(separator: ",")
        interpreter = ResponseInterpreter(configuration: uploader.answers)
        tracker = ProgressTracker(total: request.body.byteCount, sink: progress)
        var logger = uploader.logger
        logger[metadataKey: "idempotency-key"] = "\(request.idempotencyKey)"
        self.logger = logger
        appendSize = uploader.configuration.initialAppendSize
        start = clock.now
        state = request.resumeFrom
    }

    // MARK: The whole upload

    mutating func run() async throws -> ResumableUploadResult? {
        tracker.report(sent: 0, attempt: 1)
        var offset: Int64 = 0
        if let earlier = state {
            switch try await checkOffset(earlier) {
            case .offset(let confirmed):
                offset = confirmed
                resumedFrom = confirmed
                logger.debug("resuming", metadata: ["offset": "\(confirmed)", "upload": "\(earlier.uploadURL)"])
            case .complete:
                return try await finishCompleted()
            case .gone:
                logger.debug("the earlier upload is gone; starting over")
                state = nil
                onState?(nil)
            }
        }
        if state == nil {
            switch try await create() {
            case .created(let confirmed):
                offset = confirmed
            case .finished(let outcome):
                return result(outcome)
            case .unsupported:
                return nil
            }
        }
        return try await appendAll(from: offset)
    }

    /// Sends the rest, chunk by chunk, recovering from failures, until the server has everything.
    mutating func appendAll(from start: Int64) async throws -> ResumableUploadResult {
        var offset = start
        while true {
            guard let current = state else { throw internalError("no upload resource") }
            if offset >= total {
                // Everything is there, but the answer that completed it was lost: ask.
                switch try await checkOffset(current) {
                case .complete: return try await finishCompleted()
                case .offset(let confirmed) where confirmed < total:
                    offset = confirmed
                    continue
                default: break
                }
            }
            var count = min(appendSize, total - offset)
            if let appendLimit { count = min(count, appendLimit) }
            let last = offset + count == total
            let began = clock.now
            let answer: AppendAnswer
            do {
                answer = try await append(to: current, offset: offset, count: count, complete: last)
            } catch let error as AttacheError {
                guard error.isRetryable, error.code != .fileChanged else { throw error }
                try await failed(error.message, retryAfter: nil, cause: error)
                offset = try await recover(current)
                continue
            }
            switch answer {
            case .accepted(let confirmed):
                failures = 0
                adapt(count: confirmed - offset, elapsed: clock.now - began)
                offset = confirmed
                var updated = current
                updated.offset = confirmed
                state = updated
                onState?(updated)
            case .finished(let outcome):
                return result(outcome)
            case .completed:
                return try await finishCompleted()
            case .conflict(let serverOffset):
                logger.debug("offset conflict", metadata: ["ours": "\(offset)", "server": "\(serverOffset.map(String.init) ?? "?")"])
                try await failed("409 offset conflict", retryAfter: .zero, cause: nil)
                offset = try await recover(current)
            case .checksumMismatch:
                try await failed("460 checksum mismatch", retryAfter: .zero, cause: nil)
            case .tooLarge(let limit):
                let smaller = max(uploader.configuration.minimumAppendSize, min(count / 2, limit ?? count / 2))
                guard smaller < count else {
                    return result(.rejected(Rejection(reason: .status, status: 413, message: "the server refused an append of \(count) bytes")))
                }
                appendLimit = smaller
                appendSize = smaller
                logger.debug("413 on an append: smaller appends", metadata: ["size": "\(smaller)"])
            case .gone:
                guard !restarted else {
                    throw AttacheError(.rejected, stage: .upload, "the upload resource disappeared twice")
                }
                restarted = true
                logger.notice("the upload expired on the server; starting over", metadata: ["upload": "\(current.uploadURL)"])
                state = nil
                onState?(nil)
                switch try await create() {
                case .created(let confirmed): offset = confirmed
                case .finished(let outcome): return result(outcome)
                case .unsupported: throw AttacheError(.rejected, stage: .upload, "the server no longer takes resumable uploads")
                }
            case .retry(let advice):
                try await failed(advice.reason, retryAfter: advice.retryAfter, cause: nil)
                offset = try await recover(current)
            case .rejected(let outcome):
                return result(outcome)
            }
        }
    }

    /// After a failed append: the server's offset (starting over when the upload is gone).
    mutating func recover(_ current: ResumableState) async throws -> Int64 {
        while true {
            do {
                switch try await checkOffset(current) {
                case .offset(let confirmed):
                    var updated = current
                    updated.offset = confirmed
                    state = updated
                    onState?(updated)
                    return confirmed
                case .complete:
                    return total
                case .gone:
                    // Let the append loop meet the 404/410 and start over.
                    return current.offset
                }
            } catch let error as AttacheError where error.isRetryable && error.code != .fileChanged {
                try await failed(error.message, retryAfter: nil, cause: error)
            }
        }
    }

    /// Counts a failure without progress and waits per the retry policy; throws when the policy gives up.
    mutating func failed(_ reason: String, retryAfter: Duration?, cause: AttacheError?) async throws {
        try Task.checkCancellation()
        failures += 1
        reasons.append(reason)
        let policy = uploader.connection.retry
        let delay = retryAfter ?? policy.delay(afterAttempt: failures, retryAfter: nil)
        if failures >= max(policy.maximumAttempts, 2) || clock.now - start + delay > policy.budget {
            throw AttacheError(
                cause?.code == .connectionFailed && requests <= failures ? .connectionFailed : .retriesExhausted,
                stage: .upload, "gave up after \(failures) failed requests without progress; last: \(reason)",
                isRetryable: true, cause: cause)
        }
        logger.debug("resumable request failed, resuming", metadata: ["reason": "\(reason)", "delay-ms": "\(delay.milliseconds)"])
        do {
            if delay > .zero { try await uploader.sleepFunction(delay) }
        } catch {
            throw AttacheError(.cancelled, stage: .upload, "cancelled while waiting to resume")
        }
    }

    /// Sizes the next append to take about the target duration at the rate this one reached.
    mutating func adapt(count: Int64, elapsed: Duration) {
        let configuration = uploader.configuration
        guard count > 0, elapsed > .milliseconds(1) else { return }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let target = Double(configuration.targetAppendDuration.components.seconds)
            + Double(configuration.targetAppendDuration.components.attoseconds) / 1e18
        let ideal = Int64(Double(count) / seconds * target)
        // At most 4× per step, so one fast burst does not make the next append huge.
        var next = min(max(ideal, configuration.minimumAppendSize), count * 4, configuration.maximumAppendSize)
        if let appendLimit { next = min(next, appendLimit) }
        if let maximum = tus.maximumSize { next = min(next, maximum) }
        appendSize = max(next, configuration.minimumAppendSize, appendFloor ?? 0)
    }

    // MARK: Requests

    enum Creation {
        case created(offset: Int64)
        case finished(UploadResult.Outcome)
        case unsupported
    }

    /// Creates the upload resource (tus or IETF, per the mode and what the server says).
    mutating func create() async throws -> Creation {
        switch uploader.configuration.mode {
        case .tus:
            _ = try await discoverTusRetrying()
            return try await createTus()
        case .ietf:
            return try await createIETF(probe: false)
        case .auto, .off:
            if try await discoverTusRetrying() { return try await createTus() }
            return try await createIETF(probe: true)
        }
    }

    /// ``discoverTus()``, with a failed `OPTIONS` (connection refused, lost) retried per the policy.
    mutating func discoverTusRetrying() async throws -> Bool {
        while true {
            do {
                return try await discoverTus()
            } catch let error as AttacheError where error.isRetryable && error.code != .limitExceeded {
                try await failed(error.message, retryAfter: nil, cause: error)
            }
        }
    }

    /// `OPTIONS`: true when the server speaks tus 1.0.
    mutating func discoverTus() async throws -> Bool {
        let response = try await send("OPTIONS", request.url, headers: [("Tus-Resumable", "1.0.0")])
        guard (200..<300).contains(response.status),
            let versions = response.header("Tus-Version") ?? response.header("Tus-Resumable"),
            versions.split(separator: ",").contains(where: { $0.trimmingWhiteSpace == "1.0.0" })
        else { return false }
        tus.extensions = Set((response.header("Tus-Extension") ?? "").split(separator: ",").map { String($0.trimmingWhiteSpace) })
        tus.maximumSize = response.header("Tus-Max-Size").flatMap { Int64($0.trimmingWhiteSpace) }
        tus.checksumAlgorithms = (response.header("Tus-Checksum-Algorithm") ?? "").split(separator: ",").map {
            String($0.trimmingWhiteSpace).lowercased()
        }
        if !uploader.configuration.checksums { tus.checksumAlgorithms = [] }
        if let maximum = tus.maximumSize, maximum < total {
            throw AttacheError(
                .limitExceeded, stage: .upload, "the server takes uploads of at most \(maximum) bytes (Tus-Max-Size)")
        }
        return true
    }

    mutating func createTus() async throws -> Creation {
        var headers: [(String, String)] = [
            ("Tus-Resumable", "1.0.0"), ("Upload-Length", String(total)), ("Upload-Metadata", metadata),
            ("Idempotency-Key", request.idempotencyKey),
        ]
        var body: (any ByteSource)?
        var sentCount: Int64 = 0
        // creation-with-upload only when the whole body goes in that one request: a creation cut mid-body
        // never tells where its resource is, so the bytes it carried would be sent again.
        if tus.extensions.contains("creation-with-upload"), total > 0, total <= appendSize {
            sentCount = total
            body = ByteSourceSlice(request.body, offset: 0, count: sentCount)
            headers.append(("Content-Type", "application/offset+octet-stream"))
            if let algorithm = tus.checksumAlgorithm {
                headers.append(("Upload-Checksum", try checksumHeader(algorithm, offset: 0, count: sentCount)))
            }
        }
        let began = clock.now
        let response: ServerResponse
        do {
            response = try await send("POST", request.url, headers: headers, body: body, progressBase: 0)
        } catch let error as AttacheError where error.isRetryable && error.code != .fileChanged {
            // Nothing tells where the resource is: create another one after the policy's wait.
            try await failed(error.message, retryAfter: nil, cause: error)
            return try await createTus()
        }
        if response.status == 460, let location = response.header("Location") {
            // Created, but the first chunk did not arrive intact: resend it with PATCH.
            let created = ResumableState(protocolName: .tus, uploadURL: resolve(location), offset: 0)
            state = created
            onState?(created)
            try await failed("460 checksum mismatch", retryAfter: .zero, cause: nil)
            return .created(offset: try await recover(created))
        }
        guard response.status == 201, let location = response.header("Location") else {
            switch interpreter.interpret(response) {
            case .retry(let advice):
                try await failed(advice.reason, retryAfter: advice.retryAfter, cause: nil)
                return try await createTus()
            case .rejection(let rejection):
                return .finished(.rejected(rejection))
            case .success:
                return .finished(
                    .rejected(Rejection(reason: .badResponse, status: response.status, message: "tus creation without 201 and Location")))
            }
        }
        let url = resolve(location)
        let offset = response.header("Upload-Offset").flatMap { Int64($0.trimmingWhiteSpace) } ?? 0
        let created = ResumableState(protocolName: .tus, uploadURL: url, offset: offset)
        state = created
        onState?(created)
        if sentCount > 0, offset > 0 { adapt(count: offset, elapsed: clock.now - began) }
        if offset >= total, total > 0 || response.header("Attache-Receipt") != nil {
            return .finished(try await tusReceipt(response, uploadURL: url))
        }
        return .created(offset: offset)
    }

    /// IETF creation: the whole body (`probe` false; `Upload-Complete: ?1`) or an empty probe
    /// (`Upload-Complete: ?0`). The `104`'s `Location` is kept the moment it arrives.
    mutating func createIETF(probe: Bool) async throws -> Creation {
        let interim = LockedValue<String?>(nil)
        let interimLimit = LockedValue<String?>(nil)
        var headers: [(String, String)] = [
            ("Upload-Complete", probe ? "?0" : "?1"), ("Upload-Metadata", metadata),
            ("Idempotency-Key", request.idempotencyKey), ("Content-Type", request.contentType),
        ]
        if !probe { headers.append(("Upload-Length", String(total))) }
        let body: any ByteSource = probe ? DataSource([]) : request.body
        let response: ServerResponse
        do {
            response = try await send(
                "POST", request.url, headers: headers, body: body, progressBase: 0,
                onInformational: { status, fields in
                    guard status == 104 else { return }
                    if let location = fields.last(where: { $0.name.lowercased() == "location" })?.value {
                        interim.withLock { $0 = location }
                    }
                    if let limit = fields.last(where: { $0.name.lowercased() == "upload-limit" })?.value {
                        interimLimit.withLock { $0 = limit }
                    }
                })
        } catch let error as AttacheError where error.isRetryable && error.code != .fileChanged {
            guard let location = interim.withLock({ $0 }) else {
                try await failed(error.message, retryAfter: nil, cause: error)
                return try await createIETF(probe: probe)
            }
            // The 104 came: the upload exists, continue it from the server's offset.
            let created = ResumableState(protocolName: .ietf, uploadURL: resolve(location), offset: 0)
            state = created
            onState?(created)
            try await failed(error.message, retryAfter: nil, cause: error)
            return .created(offset: try await recover(created))
        }
        let location = interim.withLock { $0 } ?? (response.status == 201 ? response.header("Location") : nil)
        guard let location else {
            // No 104 and no resource: the server does not speak the draft. A refusal of the raw body
            // (or an empty probe) stored nothing, so a multipart upload can follow.
            if probe || (400..<500).contains(response.status) {
                logger.debug("no resumable upload support", metadata: ["status": "\(response.status)"])
                return .unsupported
            }
            return .finished(outcome(response))
        }
        let created = ResumableState(protocolName: .ietf, uploadURL: resolve(location), offset: 0)
        state = created
        onState?(created)
        try applyLimits(interimLimit.withLock { $0 } ?? response.header("Upload-Limit"))
        if Self.isComplete(response) || (!probe && (200..<300).contains(response.status) && response.status != 201) {
            return .finished(outcome(response))
        }
        if response.status == 413 {
            appendLimit = Self.limit(response.header("Upload-Limit"), "max-append-size") ?? max(
                uploader.configuration.minimumAppendSize, total / 2)
            appendSize = min(appendSize, appendLimit ?? appendSize)
            return .created(offset: try await recover(created))
        }
        if let limit = Self.limit(response.header("Upload-Limit"), "max-append-size") { appendLimit = limit }
        if (200..<300).contains(response.status) {
            let offset = response.header("Upload-Offset").flatMap { Int64($0.trimmingWhiteSpace) } ?? 0
            return .created(offset: offset)
        }
        return .created(offset: try await recover(created))
    }

    enum OffsetCheck {
        case offset(Int64)
        case complete
        case gone
    }

    /// `HEAD` on the upload resource.
    mutating func checkOffset(_ current: ResumableState) async throws -> OffsetCheck {
        var headers: [(String, String)] = []
        if current.protocolName == .tus { headers.append(("Tus-Resumable", "1.0.0")) }
        let response = try await send("HEAD", current.uploadURL, headers: headers)
        if response.status == 404 || response.status == 410 { return .gone }
        guard (200..<300).contains(response.status),
            let offset = response.header("Upload-Offset").flatMap({ Int64($0.trimmingWhiteSpace) })
        else {
            throw AttacheError(
                .badResponse, stage: .upload, "HEAD on the upload answered \(response.status) without Upload-Offset",
                isRetryable: response.status >= 500 || response.status == 429 || response.status == 423)
        }
        try applyLimits(response.header("Upload-Limit"))
        if (current.protocolName == .ietf && Self.isComplete(response)) || (current.protocolName == .tus && offset >= total) {
            completedHead = response
            return .complete
        }
        return .offset(offset)
    }

    enum AppendAnswer {
        case accepted(offset: Int64)
        case finished(UploadResult.Outcome)
        case completed
        case conflict(serverOffset: Int64?)
        case checksumMismatch
        case tooLarge(limit: Int64?)
        case gone
        case retry(RetryAdvice)
        case rejected(UploadResult.Outcome)
    }

    /// One `PATCH` of `count` bytes at `offset`.
    mutating func append(to current: ResumableState, offset: Int64, count: Int64, complete: Bool) async throws -> AppendAnswer {
        var headers: [(String, String)] = [("Upload-Offset", String(offset))]
        if current.protocolName == .tus {
            headers += [("Tus-Resumable", "1.0.0"), ("Content-Type", "application/offset+octet-stream")]
            if let algorithm = tus.checksumAlgorithm {
                headers.append(("Upload-Checksum", try checksumHeader(algorithm, offset: offset, count: count)))
            }
        } else {
            headers += [("Content-Type", "application/partial-upload"), ("Upload-Complete", complete ? "?1" : "?0")]
        }
        let response = try await send(
            "PATCH", current.uploadURL, headers: headers, body: ByteSourceSlice(request.body, offset: offset, count: count),
            progressBase: offset)
        let serverOffset = response.header("Upload-Offset").flatMap { Int64($0.trimmingWhiteSpace) }
        switch response.status {
        case 200..<300:
            if current.protocolName == .ietf {
                if complete || Self.isComplete(response) { return .finished(outcome(response)) }
                return .accepted(offset: serverOffset ?? offset + count)
            }
            let confirmed = serverOffset ?? offset + count
            if confirmed >= total { return .finished(try await tusReceipt(response, uploadURL: current.uploadURL)) }
            return .accepted(offset: confirmed)
        case 409:
            if current.protocolName == .ietf, Self.isComplete(response) { return .completed }
            return .conflict(serverOffset: serverOffset)
        case 460: return .checksumMismatch
        case 413: return .tooLarge(limit: Self.limit(response.header("Upload-Limit"), "max-append-size"))
        case 404, 410: return .gone
        case 423: return .retry(RetryAdvice(reason: "423 locked", status: 423, retryAfter: retryAfter(response)))
        default:
            switch interpreter.interpret(response) {
            case .retry(let advice): return .retry(advice)
            case .rejection(let rejection): return .rejected(.rejected(rejection))
            case .success(let receipt): return .finished(.stored(receipt))
            }
        }
    }

    /// The receipt of a completed tus upload: `GET` of the server's `Attache-Receipt` when it names
    /// one; otherwise one made from the upload resource (a tus server has no receipt of its own).
    mutating func tusReceipt(_ response: ServerResponse, uploadURL: String) async throws -> UploadResult.Outcome {
        if let path = response.header("Attache-Receipt") {
            let answer = try await send("GET", resolve(path), headers: [("Accept", "application/json")])
            return outcome(answer)
        }
        let id = uploadURL.split(separator: "/").last.map(String.init) ?? uploadURL
        return .stored(
            ServerReceipt(
                status: response.status, fileId: id, url: uploadURL,
                data: .object([
                    "fileId": .string(id), "url": .string(uploadURL), "size": .number(Double(total)),
                ])))
    }

    /// The upload was already complete on the server (its answer was lost): fetch the receipt.
    mutating func finishCompleted() async throws -> ResumableUploadResult {
        guard let current = state else { throw internalError("no upload resource") }
        var headers: [(String, String)] = []
        if current.protocolName == .tus { headers.append(("Tus-Resumable", "1.0.0")) }
        let head: ServerResponse
        if let known = completedHead {
            head = known
        } else {
            head = try await send("HEAD", current.uploadURL, headers: headers)
        }
        if let path = head.header("Attache-Receipt") {
            let answer = try await send("GET", resolve(path), headers: [("Accept", "application/json")])
            return result(outcome(answer))
        }
        return result(try await tusReceipt(head, uploadURL: current.uploadURL))
    }

    // MARK: Plumbing

    func outcome(_ response: ServerResponse) -> UploadResult.Outcome {
        switch interpreter.interpret(response) {
        case .success(let receipt): return .stored(receipt)
        case .rejection(let rejection): return .rejected(rejection)
        case .retry(let advice):
            return .rejected(Rejection(reason: .status, status: response.status, message: advice.reason))
        }
    }

    func result(_ outcome: UploadResult.Outcome) -> ResumableUploadResult {
        if case .stored = outcome { tracker.finish(attempt: failures + 1) }
        let upload = UploadResult(
            outcome: outcome, idempotencyKey: request.idempotencyKey, attempts: reasons.count + 1, bodyByteCount: total,
            duration: clock.now - start, retryReasons: reasons)
        return ResumableUploadResult(
            upload: upload, protocolName: state?.protocolName ?? .ietf, uploadURL: state?.uploadURL ?? request.url,
            resumedFrom: resumedFrom, bytesSent: sent.value, requests: requests)
    }

    func checksumHeader(_ algorithm: String, offset: Int64, count: Int64) throws -> String {
        let digest = try ChecksumDigest(algorithm: algorithm)
        let reader = try ByteSourceSlice(request.body, offset: offset, count: count).makeReader()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 18, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = try reader.read(into: buffer)
            if n == 0 { break }
            try digest.update(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
        }
        return algorithm + " " + Base64.encode(try digest.finish())
    }

    func resolve(_ location: String) -> String {
        let trimmed = location.trimmingWhiteSpace
        guard let base = URL(string: request.url), let resolved = URL(string: String(trimmed), relativeTo: base) else {
            return String(trimmed)
        }
        return resolved.absoluteString
    }

    func retryAfter(_ response: ServerResponse) -> Duration? {
        response.header("Retry-After").flatMap { Int($0.trimmingWhiteSpace) }.map { .seconds($0) }
    }

    func internalError(_ message: String) -> AttacheError {
        AttacheError(.internalError, stage: .upload, message)
    }

    /// Respects an `Upload-Limit`: appends no larger than `max-append-size` (and no smaller than
    /// `min-append-size`, but for the last); a body over `max-size` cannot be sent.
    mutating func applyLimits(_ header: String?) throws {
        guard let header else { return }
        if let maximum = Self.limit(header, "max-size"), maximum < total {
            throw AttacheError(
                .limitExceeded, stage: .upload, "the server takes uploads of at most \(maximum) bytes (Upload-Limit)")
        }
        if let limit = Self.limit(header, "max-append-size") { appendLimit = limit }
        if let minimum = Self.limit(header, "min-append-size") {
            appendFloor = minimum
            appendSize = max(appendSize, minimum)
        }
    }

    static func isComplete(_ response: ServerResponse) -> Bool {
        response.header("Upload-Complete")?.trimmingWhiteSpace == "?1"
    }

    /// One member of an `Upload-Limit` dictionary (`max-append-size=…, expires=…`).
    static func limit(_ header: String?, _ key: String) -> Int64? {
        guard let header else { return nil }
        for item in header.split(separator: ",") {
            let pair = item.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].trimmingWhiteSpace == key { return Int64(pair[1].trimmingWhiteSpace) }
        }
        return nil
    }

    /// Sends one request; body bytes handed to the network are counted and reported as progress from
    /// `progressBase`.
    mutating func send(
        _ method: String, _ url: String, headers: [(String, String)], body: (any ByteSource)? = nil,
        progressBase: Int64? = nil, onInformational: (@Sendable (Int, [HeaderField]) -> Void)? = nil
    ) async throws -> ServerResponse {
        requests += 1
        var all = headers.map { HeaderField(name: $0.0, value: $0.1) }
        if body != nil { all.append(HeaderField(name: "Expect", value: "")) }
        let exchange = TransportRequest(
            method: method, url: url, headers: all, body: body, connection: uploader.connection,
            maximumResponseBodySize: uploader.answers.maximumBodySize)
        try exchange.validate()
        let tracker = self.tracker
        let counter = self.sent
        let attempt = failures + 1
        let resumed = resumedFrom
        let lastSent = LockedValue<Int64>(0)
        let sink = CollectingSink(
            limit: uploader.answers.maximumBodySize,
            onProgress: { sentNow, _ in
                let delta = lastSent.withLock { last -> Int64 in
                    defer { last = max(last, sentNow) }
                    return max(0, sentNow - last)
                }
                if delta > 0 { counter.add(delta) }
                if let progressBase { tracker.report(sent: progressBase + sentNow, attempt: attempt, resumed: resumed) }
            }, onInformational: onInformational)
        logger.debug("\(method) \(TransportRequest.redact(url: url))", metadata: ["bytes": "\(body?.byteCount ?? 0)"])
        return try await uploader.transportForSession.send(exchange, sink: sink)
    }
}

extension ResumableUploader {
    fileprivate var transportForSession: any HTTPTransport { transport }
    fileprivate var sleepFunction: @Sendable (Duration) async throws -> Void { sleep }
}

/// Body bytes handed to the network, summed over a session's requests from the transport's thread.
final class ByteCounter: Sendable {
    private let total = LockedValue<Int64>(0)
    func add(_ count: Int64) { total.withLock { $0 += count } }
    var value: Int64 { total.withLock { $0 } }
}
