import FoundationEssentials
import Logging

/// One upload's conversation with the server.
struct ResumableSession {
    let uploader: ResumableUploader
    let request: ResumableUploadRequest
    let onState: (@Sendable (ResumableState?) async -> Void)?
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
    let sent = ByteCounter()
    var resumedFrom: Int64 = 0
    var restarted = false
    /// Every request of the upload, its failures counted together on the client's attempt loop; an
    /// append the server accepts starts the count again.
    var series: AttemptSeries

    init(
        uploader: ResumableUploader, request: ResumableUploadRequest, onState: (@Sendable (ResumableState?) async -> Void)?,
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
        interpreter = ResponseInterpreter(configuration: uploader.answers, classifier: uploader.client.retry)
        tracker = ProgressTracker(total: request.body.byteCount, sink: progress)
        var logger = uploader.logger
        logger[metadataKey: "idempotency-key"] = "\(request.idempotencyKey)"
        self.logger = logger
        appendSize = uploader.configuration.initialAppendSize
        start = clock.now
        state = request.resumeFrom
        // At least two: a failed append is always worth one look at the server's offset.
        var policy = uploader.connection.retry
        policy.maximumAttempts = max(policy.maximumAttempts, 2)
        series = uploader.client.series(.resumableUpload, policy: policy, answerStage: .upload)
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
                await onState?(nil)
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
                guard uploader.client.retry.isRetryable(error) else { throw error }
                try await failed(error.message, retryAfter: nil, cause: error)
                offset = try await recover(current)
                continue
            }
            switch answer {
            case .accepted(let confirmed):
                series.progressed()
                adapt(count: confirmed - offset, elapsed: clock.now - began)
                offset = confirmed
                var updated = current
                updated.offset = confirmed
                state = updated
                await onState?(updated)
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
                await onState?(nil)
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
        switch try await checkOffset(current) {
        case .offset(let confirmed):
            var updated = current
            updated.offset = confirmed
            state = updated
            await onState?(updated)
            return confirmed
        case .complete:
            return total
        case .gone:
            // Let the append loop meet the 404/410 and start over.
            return current.offset
        }
    }

    /// Counts a failure the protocol found (a failed append, an offset conflict) on the client's
    /// attempt loop, and waits per the retry policy; throws when the policy gives up.
    mutating func failed(_ reason: String, retryAfter: Duration?, cause: AttacheError?) async throws {
        try await uploader.client.wait(&series, RetryAdvice(reason: reason, retryAfter: retryAfter), failure: cause, logger: logger)
    }

    /// Sizes the next append to take about the target duration at the rate this one reached.
    mutating func adapt(count: Int64, elapsed: Duration) {
        let configuration = uploader.configuration
        guard count > 0, elapsed > .milliseconds(1) else { return }
        let ideal = Int64(Double(count) / elapsed.seconds * configuration.targetAppendDuration.seconds)
        // At most 4× per step, so one fast burst does not make the next append huge.
        var next = min(max(ideal, configuration.minimumAppendSize), count * 4, configuration.maximumAppendSize)
        if let appendLimit { next = min(next, appendLimit) }
        if let maximum = tus.maximumSize { next = min(next, maximum) }
        appendSize = max(next, configuration.minimumAppendSize, appendFloor ?? 0)
    }
}
