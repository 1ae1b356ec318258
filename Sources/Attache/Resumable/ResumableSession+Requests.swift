import AttacheCore
import FoundationEssentials
import Logging

extension ResumableSession {
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
            _ = try await discoverTus()
            return try await createTus()
        case .ietf:
            return try await createIETF(probe: false)
        case .auto, .off:
            if try await discoverTus() { return try await createTus() }
            return try await createIETF(probe: true)
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
        let interpreter = interpreter
        // A failure tells nothing of where the resource is: the loop creates another one after the
        // policy's wait, as it does for an answer the profile retries.
        let response = try await send(
            "POST", request.url, headers: headers, body: body, progressBase: 0,
            retryAnswer: { response in
                guard response.status != 201, response.status != 460 || response.header("Location") == nil,
                    case .retry(let advice) = interpreter.interpret(response)
                else { return nil }
                return advice
            })
        if response.status == 460, let location = response.header("Location") {
            // Created, but the first chunk did not arrive intact: resend it with PATCH.
            let created = ResumableState(protocolName: .tus, uploadURL: resolve(location), offset: 0)
            state = created
            await onState?(created)
            try await failed("460 checksum mismatch", retryAfter: .zero, cause: nil)
            return .created(offset: try await recover(created))
        }
        guard response.status == 201, let location = response.header("Location") else {
            // An answer to retry gets here only as a retrier's final word.
            guard case .success = interpreter.interpret(response) else { return .finished(outcome(response)) }
            return .finished(
                .rejected(Rejection(reason: .badResponse, status: response.status, message: "tus creation without 201 and Location")))
        }
        let url = resolve(location)
        let offset = response.header("Upload-Offset").flatMap { Int64($0.trimmingWhiteSpace) } ?? 0
        let created = ResumableState(protocolName: .tus, uploadURL: url, offset: offset)
        state = created
        await onState?(created)
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
        let classifier = uploader.client.retry
        do {
            // A failure before the 104 is sent again by the loop (nothing was created); after it, the
            // upload exists and is continued from the server's offset. Every answer is the protocol's.
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
                },
                retryAnswer: { _ in nil },
                failed: { error in
                    guard classifier.isRetryable(error), let location = interim.withLock({ $0 }) else { return error }
                    throw CreatedBeforeFailure(location: location, failure: error)
                })
        } catch let created as CreatedBeforeFailure {
            let continued = ResumableState(protocolName: .ietf, uploadURL: resolve(created.location), offset: 0)
            state = continued
            await onState?(continued)
            try await failed(created.failure.message, retryAfter: nil, cause: created.failure)
            return .created(offset: try await recover(continued))
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
        await onState?(created)
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
                .badResponse, stage: .upload, "HEAD on the upload answered \(response.status) without Upload-Offset")
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
        // Neither a failure nor an answer is sent again as it is: the server may hold part of it, so
        // the next append starts from the offset it confirms.
        let response = try await send(
            "PATCH", current.uploadURL, headers: headers, body: ByteSourceSlice(request.body, offset: offset, count: count),
            progressBase: offset, resendsFailures: false, retryAnswer: { _ in nil })
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
}
