internal import AttacheCore
import FoundationEssentials

extension AttachmentPipeline {
    /// send, to a Matrix homeserver: AttachmentForms → SentAttachment. The attachment, then each separate
    /// thumbnail, as one media upload each: to an `mxc://` URI reserved first and kept in the journal when
    /// the homeserver reserves them (``MatrixEndpoint``), else posted. A file over the homeserver's limit is
    /// refused before any of it is sealed or sent.
    func sendMatrix(
        _ forms: AttachmentForms, media: MatrixMedia, progress: (@Sendable (PipelineProgress) -> Void)?
    ) async throws -> SentAttachment {
        let sealed = forms.sealed
        let attachment = sealed.prepared.attachment
        let idempotencyKey = attachment.idempotencyKey ?? Uploader.makeIdempotencyKey()
        var answers = ResponseInterpreter.Configuration(profile: .matrix)
        answers.maximumBodySize = 1 << 20
        let requester = ObjectRequester(
            client: uploader.client, signer: nil, connection: configuration.connection, answers: answers, logger: logger)
        let facts = try await media.facts(requester)
        if let limit = facts.uploadLimit {
            let largest = ([sealed.payload] + forms.separateThumbnails.map(\.thumbnail.payload)).map(\.byteCount).max() ?? 0
            if largest > limit {
                throw AttacheError(
                    .limitExceeded, stage: .upload,
                    "\(largest) bytes sealed, over the homeserver's upload limit of \(limit) bytes (m.upload.size): nothing was sent",
                    file: attachment.path)
            }
        }
        // The URIs an earlier run reserved for this attachment and its thumbnails, in that order.
        var reserved: [String] = []
        if let state = await journal?.resumableState(), state.protocolName == .matrix {
            reserved = state.uploadURL.split(separator: " ").map(String.init)
        }
        let journal = journal
        @Sendable func keep(_ uris: [String]) async {
            await journal?.record(ResumableState(protocolName: .matrix, uploadURL: uris.joined(separator: " "), offset: 0))
        }

        var pieces: [(payload: SealedPayload, contentType: String, filename: String)] = [
            (sealed.payload, sealed.contentType, forms.attachment.file.filename)
        ]
        for (thumbnail, form) in forms.separateThumbnails {
            pieces.append((thumbnail.payload, thumbnail.contentType, form.file.filename))
        }
        var results: [(UploadResult, ServerReceipt)] = []
        let uris = LockedValue(reserved)
        for (index, piece) in pieces.enumerated() {
            var sink: (@Sendable (UploadProgress) -> Void)?
            if index == 0, let progress { sink = { update in progress(.upload(update)) } }
            let tracker = ProgressTracker(total: piece.payload.byteCount, sink: sink)
            let earlier = uris.withLock { index < $0.count ? $0[index] : nil }
            let (result, uri) = try await uploadMedia(
                piece.payload, contentType: piece.contentType, filename: piece.filename, reserved: earlier,
                reserves: facts.reserves, media: media, requester: requester,
                idempotencyKey: index == 0 ? idempotencyKey : idempotencyKey + ".\(index)",
                tracker: tracker, path: attachment.path
            ) { uri in
                // Durable before the first byte goes: a run killed after this continues with the same URI.
                let list = uris.withLock { list -> [String] in
                    if index < list.count { list[index] = uri } else { list.append(uri) }
                    return list
                }
                await keep(list)
            }
            let stored = ServerReceipt(
                status: 200, fileId: uri, url: uri, data: .object(["content_uri": .string(uri)]), replayed: false)
            results.append((result, stored))
        }
        // The URIs stay in the journal: the caller records the receipt next, and a run killed before that
        // must find them, or it would reserve and store the file again beside the copy now stored. A
        // send run again under the same key puts the same bytes to the same ids, which the homeserver
        // refuses as stored (M_CANNOT_OVERWRITE_MEDIA): the same URIs come back.

        var thumbnails: [SentAttachment.SentThumbnail] = []
        for ((thumbnail, form), (result, stored)) in zip(forms.separateThumbnails, results.dropFirst()) {
            thumbnails.append(
                SentAttachment.SentThumbnail(sealed: thumbnail, filename: form.file.filename, result: result, stored: stored))
        }
        return SentAttachment(forms: forms, result: results[0].0, stored: results[0].1, resumed: nil, thumbnails: thumbnails)
    }

    /// One media upload: to `reserved` (an earlier run's URI), to a URI reserved now, or posted. The URI
    /// stored.
    private func uploadMedia(
        _ payload: SealedPayload, contentType: String, filename: String, reserved: String?, reserves: Bool,
        media: MatrixMedia, requester: ObjectRequester, idempotencyKey: String, tracker: ProgressTracker,
        path: String, onReserve: @Sendable (String) async -> Void
    ) async throws -> (UploadResult, String) {
        let home = media.endpoint.homeserver
        let query = "?filename=" + PercentEncoding.escape(filename)
        let headers = [HeaderField(name: "Content-Type", value: contentType)]
        @Sendable func post() async throws -> (UploadResult, String) {
            let answer = try await requester.send(
                ObjectRequest(
                    method: "POST", target: .presigned(home + "/_matrix/media/v3/upload" + query), headers: headers,
                    body: payload)
            ) { sent, attempt in tracker.report(sent: sent, attempt: attempt) }
            let receipt = try Self.storedObject(result(answer, payload, idempotencyKey), refused: "the homeserver refused the upload", file: path)
            guard let uri = receipt.data["content_uri"]?.stringValue, MatrixEndpoint.mediaID(of: uri) != nil else {
                throw AttacheError(.badResponse, stage: .interpret, "the homeserver stored the file but named no mxc:// URI", file: path)
            }
            tracker.finish(attempt: answer.attempts)
            return (result(answer, payload, idempotencyKey), uri)
        }
        guard reserves || reserved != nil else { return try await post() }
        return try await media.pending.run {
            // A reservation is held (``MatrixMedia/hold()``) from the moment it is made or continued until its
            // bytes are stored or the send fails.
            var holding = false
            defer { if holding { media.release() } }
            var uri: String
            if let reserved {
                media.hold()
                uri = reserved
            } else {
                uri = try await reserveMedia(media: media, requester: requester, path: path, onReserve: onReserve)
            }
            holding = true
            var answer = try await putMedia(
                payload, to: uri, home: home, query: query, headers: headers, requester: requester, tracker: tracker, path: path)
            if uri == reserved, case .rejected(let rejection) = answer.outcome, rejection.businessCode == "M_NOT_FOUND" {
                // The earlier run's reservation expired unused (a day, on Synapse): reserve again, once. Ours
                // is let go first, or a refusal at the limit would wait for it.
                media.release()
                holding = false
                uri = try await reserveMedia(media: media, requester: requester, path: path, onReserve: onReserve)
                holding = true
                answer = try await putMedia(
                    payload, to: uri, home: home, query: query, headers: headers, requester: requester, tracker: tracker, path: path)
            }
            let outcome = result(answer, payload, idempotencyKey)
            // Only this user can put to the id, and every attempt puts the same sealed bytes (the journalled
            // material): an id that refuses to be overwritten holds them from an earlier attempt.
            if case .rejected(let rejection) = answer.outcome, rejection.businessCode != "M_CANNOT_OVERWRITE_MEDIA" {
                _ = try Self.storedObject(outcome, refused: "the homeserver refused the upload", file: path)
            }
            tracker.finish(attempt: answer.attempts)
            return (outcome, uri)
        }
    }

    /// Reserves a media id (`POST /_matrix/media/v1/create`), holds it (``MatrixMedia/hold()``; the
    /// caller releases it) and keeps it (`onReserve`) before any byte goes to it. At the homeserver's
    /// limit of ids without content, the client waits for one of this pipeline's reservations to end
    /// (``MatrixMedia/waitsOutPendingLimit(_:)``).
    private func reserveMedia(
        media: MatrixMedia, requester: ObjectRequester, path: String, onReserve: @Sendable (String) async -> Void
    ) async throws -> String {
        let created: ObjectRequester.Answer
        do {
            created = try await requester.send(
                ObjectRequest(method: "POST", target: .presigned(media.endpoint.homeserver + "/_matrix/media/v1/create")),
                policy: MatrixMedia.reservationPolicy, waitsOut: media.waitsOutPendingLimit)
        } catch let error as AttacheError
            where error.code == .retriesExhausted && error.rejection?.businessCode == "M_LIMIT_EXCEEDED"
        {
            // With none of ours in flight, the ids are an earlier run's, left by a kill between a reservation
            // and its journal entry; they stay until they expire, and posting instead would break the promise
            // of one copy per file (a kill mid-post leaves no trace).
            throw AttacheError(
                .retriesExhausted, stage: .upload,
                "the homeserver takes no more media reservations from this user (\(error.rejection.map { "\($0)" } ?? "M_LIMIT_EXCEEDED")): "
                    + "ids reserved without content count against its limit until they expire, and runs killed mid-way "
                    + "leave some. Nothing was sent; run again later, or pass --matrix-no-reserve to post files "
                    + "(then a run killed mid-post may store a file twice)",
                file: path, isRetryable: true, cause: error)
        }
        let receipt: ServerReceipt
        switch created.outcome {
        case .stored(let stored): receipt = stored
        case .rejected(let rejection): throw AttacheError(refusal: rejection, "the homeserver refused to reserve a media id", file: path)
        }
        guard let made = receipt.data["content_uri"]?.stringValue, MatrixEndpoint.mediaID(of: made) != nil else {
            throw AttacheError(.badResponse, stage: .interpret, "the homeserver reserved no mxc:// URI", file: path)
        }
        // Counted before the journal is written: a send refused meanwhile waits for this one rather than give up.
        media.hold()
        await onReserve(made)
        return made
    }

    /// Puts `payload` to the reserved `uri` (`PUT /_matrix/media/v3/upload/{server}/{id}`).
    private func putMedia(
        _ payload: SealedPayload, to uri: String, home: String, query: String, headers: [HeaderField],
        requester: ObjectRequester, tracker: ProgressTracker, path: String
    ) async throws -> ObjectRequester.Answer {
        guard let (server, id) = MatrixEndpoint.mediaID(of: uri) else {
            throw AttacheError(.badResponse, stage: .interpret, "not an mxc:// URI: \(uri)", file: path)
        }
        return try await requester.send(
            ObjectRequest(
                method: "PUT",
                target: .presigned(
                    home + "/_matrix/media/v3/upload/" + PercentEncoding.escape(server) + "/" + PercentEncoding.escape(id) + query),
                headers: headers, body: payload)
        ) { sent, attempt in tracker.report(sent: sent, attempt: attempt) }
    }

    private func result(_ answer: ObjectRequester.Answer, _ payload: SealedPayload, _ idempotencyKey: String) -> UploadResult {
        UploadResult(
            outcome: answer.outcome, idempotencyKey: idempotencyKey, attempts: answer.attempts,
            bodyByteCount: payload.byteCount, duration: answer.duration, retryReasons: answer.reasons)
    }
}

extension AttachmentPipeline {
    /// The event a Matrix client sends for `sent` (``MatrixReceipt``).
    func matrixReceipt(_ sent: SentAttachment, receipt: UploadReceipt) -> MatrixReceipt {
        let sealed = sent.sealed
        let output = sealed.transformed.output
        let metadata = receipt.detection.metadata
        let uri = sent.stored.fileId ?? ""
        var info: [String: JSONValue] = [
            "mimetype": .string(receipt.mimeType), "size": .number(Double(sealed.payload.plaintextByteCount)),
        ]
        if let width = receipt.transform.width ?? metadata.width, let height = receipt.transform.height ?? metadata.height {
            info["w"] = .number(Double(width))
            info["h"] = .number(Double(height))
        }
        let seconds = receipt.transform.media?.duration ?? metadata.duration
        let milliseconds = seconds.map { Int(($0 * 1000).rounded()) }
        if let milliseconds, receipt.kind == .video || receipt.kind == .voice { info["duration"] = .number(Double(milliseconds)) }
        if let thumbnail = sent.thumbnails.first, let thumbnailURI = thumbnail.stored.fileId {
            let image = thumbnail.sealed.thumbnail
            info["thumbnail_info"] = .object([
                "w": .number(Double(image.width)), "h": .number(Double(image.height)), "mimetype": .string(image.mimeType),
                "size": .number(Double(image.bytes.count)),
            ])
            if let file = Self.json(thumbnail.sealed.payload.matrixFile(url: thumbnailURI, key: thumbnail.sealed.key ?? sealed.receiptKey)) {
                info["thumbnail_file"] = file
            } else {
                info["thumbnail_url"] = .string(thumbnailURI)
            }
        }
        if let blurhash = receipt.placeholders?.blurhash { info["xyz.amorgan.blurhash"] = .string(blurhash) }

        var content: [String: JSONValue] = ["body": .string(receipt.filename), "info": .object(info)]
        if let file = Self.json(sealed.payload.matrixFile(url: uri, key: sealed.receiptKey)) {
            content["file"] = file
        } else {
            content["url"] = .string(uri)
        }
        switch receipt.kind {
        case .sticker:
            return MatrixReceipt(eventType: "m.sticker", content: .object(content))
        case .image: content["msgtype"] = .string("m.image")
        case .video: content["msgtype"] = .string("m.video")
        case .voice:
            content["msgtype"] = .string("m.audio")
            content["org.matrix.msc3245.voice"] = .object([:])
            var audio: [String: JSONValue] = [:]
            if let milliseconds { audio["duration"] = .number(Double(milliseconds)) }
            if let packed = output.waveform {
                // Telegram's five-bit levels (0–31), on MSC3246's scale of 0–1024.
                audio["waveform"] = .array(VoiceWaveform.unpack(packed).map { .number(Double(Int($0) * 1024 / 31)) })
            }
            content["org.matrix.msc1767.audio"] = .object(audio)
        default: content["msgtype"] = .string("m.file")
        }
        return MatrixReceipt(eventType: "m.room.message", content: .object(content))
    }

    /// `file` as a JSON value (nil for nil).
    private static func json(_ file: MatrixEncryptedFile?) -> JSONValue? {
        guard let file, let data = try? JSONEncoder().encode(file) else { return nil }
        return try? JSONValue.parse(Array(data))
    }
}
