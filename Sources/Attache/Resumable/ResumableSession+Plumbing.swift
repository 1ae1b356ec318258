import AttacheCore
import FoundationEssentials
import Logging

extension ResumableSession {
    // MARK: Plumbing

    func outcome(_ response: ServerResponse) -> UploadResult.Outcome {
        interpreter.interpret(response).final(for: response)
    }

    func result(_ outcome: UploadResult.Outcome) -> ResumableUploadResult {
        if case .stored = outcome { tracker.finish(attempt: series.attempt) }
        let upload = UploadResult(
            outcome: outcome, idempotencyKey: request.idempotencyKey, attempts: series.reasons.count + 1,
            bodyByteCount: total, duration: clock.now - start, retryReasons: series.reasons)
        return ResumableUploadResult(
            upload: upload, protocolName: state?.protocolName ?? .ietf, uploadURL: state?.uploadURL ?? request.url,
            resumedFrom: resumedFrom, bytesSent: sent.value, requests: series.requests)
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

    /// Sends one request on the client's attempt loop; body bytes handed to the network are counted
    /// and reported as progress from `progressBase`.
    ///
    /// - Parameters:
    ///   - resendsFailures: whether the loop sends the request again after a failure without an
    ///     answer; false for an append, whose failure needs the server's offset first.
    ///   - retryAnswer: which answers the loop sends the request again for, and how; nil for those
    ///     the client's rule retries.
    ///   - failed: sees a failure before the loop judges it.
    mutating func send(
        _ method: String, _ url: String, headers: [(String, String)], body: (any ByteSource)? = nil,
        progressBase: Int64? = nil, onInformational: (@Sendable (Int, [HeaderField]) -> Void)? = nil,
        resendsFailures: Bool = true, retryAnswer: ((ServerResponse) -> RetryAdvice?)? = nil,
        failed: (AttacheError) throws -> AttacheError = { $0 }
    ) async throws -> ServerResponse {
        var all = headers.map { HeaderField(name: $0.0, value: $0.1) }
        if body != nil { all.append(HeaderField(name: "Expect", value: "")) }
        var request = TransportRequest(
            method: method, url: url, headers: all, body: body, connection: uploader.connection,
            maximumResponseBodySize: uploader.answers.maximumBodySize)
        request.isResendable = resendsFailures
        let exchange = try request.prepared(for: .upload)
        let tracker = self.tracker
        let counter = self.sent
        let resumed = resumedFrom
        let limit = uploader.answers.maximumBodySize
        let logger = logger
        logger.debug("\(method) \(URLRedaction.redacting(url))", metadata: ["bytes": "\(body?.byteCount ?? 0)"])
        return try await uploader.client.execute(&series, logger: logger) { attempt in
            let lastSent = LockedValue<Int64>(0)
            let sink = CollectingSink(
                limit: limit,
                onProgress: { sentNow, _ in
                    let delta = lastSent.withLock { last -> Int64 in
                        defer { last = max(last, sentNow) }
                        return max(0, sentNow - last)
                    }
                    if delta > 0 { counter.add(delta) }
                    if let progressBase { tracker.report(sent: progressBase + sentNow, attempt: attempt, resumed: resumed) }
                }, onInformational: onInformational)
            return (exchange, sink)
        } failed: { error, _ in
            try failed(error)
        } settle: { answer -> Settlement<ServerResponse> in
            let advice = retryAnswer.map { $0(answer.response) } ?? answer.retryAdvice
            if let advice, !answer.isFinal { return .retry(advice, failure: nil) }
            return .done(answer.response)
        }
    }
}

/// A failed IETF creation whose `104` had already named the upload: it is continued, not created again.
struct CreatedBeforeFailure: Error {
    let location: String
    let failure: AttacheError
}
