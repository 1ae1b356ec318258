import AttacheCore
import FoundationEssentials
import Logging

extension ResumableSession {
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
        uploader.answers.retry.retryAfter(in: response)
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
        let exchange = try TransportRequest(
            method: method, url: url, headers: all, body: body, connection: uploader.connection,
            maximumResponseBodySize: uploader.answers.maximumBodySize
        ).prepared(for: .upload)
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
        return try await uploader.client.exchange(exchange, sink: sink, operation: .resumableUpload, attempt: attempt)
    }
}
