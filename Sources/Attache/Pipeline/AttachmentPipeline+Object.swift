internal import AttacheCore
import FoundationEssentials

extension AttachmentPipeline {
    /// send, for objects: AttachmentForms → SentAttachment. The sealed payload goes alone as the body of a
    /// `PUT`: to the presigned URL (``PipelineConfiguration/method`` `.put`), or signed to its key in
    /// ``PipelineConfiguration/objectStore``; there each separate thumbnail becomes an object of its own. A
    /// refusal is an error, mapped in one place as for other uploads.
    func sendObject(
        _ forms: AttachmentForms, progress: (@Sendable (PipelineProgress) -> Void)?
    ) async throws -> SentAttachment {
        let sealed = forms.sealed
        let attachment = sealed.prepared.attachment
        let idempotencyKey = attachment.idempotencyKey ?? Uploader.makeIdempotencyKey()
        let store = configuration.objectStore
        // A bucket's answers are S3's. A raw body to the URL is read as its profile says; the default one
        // (errorcode, an envelope no object store or media API writes) reads as s3-put for a PUT, as status
        // for a POST.
        var answers = configuration.answers
        if answers.profile == .errorCode {
            let pointer = answers.idPointer
            answers = ResponseInterpreter.Configuration(profile: configuration.method == .put ? .s3Put : .status)
            answers.idPointer = pointer
        }
        let requester = ObjectRequester(
            client: uploader.client, signer: store?.signer, connection: configuration.connection,
            answers: store == nil ? answers : nil, logger: logger)
        let kind = sealed.transformed.detected.detection.kind
        let filename = forms.attachment.file.filename

        let multipart = MultipartJournal(journalled: await journal?.multipartRecord(), sink: multipartRecordSink)
        let (result, object) = try await putObject(
            sealed.payload, contentType: sealed.contentType, key: store.map {
                $0.keyTemplate.key(prefix: $0.location.prefix, idempotencyKey: idempotencyKey, filename: filename, kind: kind)
            }, idempotencyKey: idempotencyKey, requester: requester,
            journal: multipart
        ) { update in progress?(.upload(update)) }
        let stored = try Self.storedObject(result, refused: "the object store refused the upload", file: attachment.path)

        var thumbnails: [SentAttachment.SentThumbnail] = []
        if let store {
            let stem = PathText.deletingExtension(filename)
            for (thumbnail, form) in forms.separateThumbnails {
                let thumbnailKey = idempotencyKey + "." + thumbnail.thumbnail.name
                let key = store.keyTemplate.key(
                    prefix: store.location.prefix, idempotencyKey: thumbnailKey,
                    filename: (stem.isEmpty ? filename : stem) + "." + thumbnail.thumbnail.filename, kind: kind)
                let (thumbnailResult, _) = try await putObject(
                    thumbnail.payload, contentType: thumbnail.contentType, key: key, idempotencyKey: thumbnailKey,
                    requester: requester, progress: nil)
                var thumbnailStored = try Self.storedObject(
                    thumbnailResult,
                    refused: "the attachment was stored, but the object store refused its \(thumbnail.thumbnail.name)",
                    file: attachment.path)
                thumbnailStored.fileId = key
                thumbnailStored.url = "s3://\(store.location.bucket)/\(key)"
                thumbnails.append(
                    SentAttachment.SentThumbnail(
                        sealed: thumbnail, filename: form.file.filename, result: thumbnailResult, stored: thumbnailStored))
            }
        }
        var sent = SentAttachment(forms: forms, result: result, stored: stored, resumed: nil, thumbnails: thumbnails)
        sent.object = object.checksumWarning == nil ? object.merging(stored) : object
        if let warning = object.checksumWarning {
            logger.warning(
                "stored and kept, but the store's checksum of the object could not be explained",
                metadata: ["file": "\(attachment.path)", "object": "\(object.url)", "reason": "\(warning)"])
        }
        return sent
    }

    /// One `PUT` of `payload`: to `key` of the object store, or to the presigned URL when `key` is nil.
    private func putObject(
        _ payload: SealedPayload, contentType: String, key: String?, idempotencyKey: String,
        requester: ObjectRequester, journal: MultipartJournal? = nil, progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> (UploadResult, ObjectReceipt) {
        if let key, let store = configuration.objectStore, payload.byteCount >= store.multipart.threshold {
            return try await putInParts(payload, contentType: contentType, key: key, store: store,
                idempotencyKey: idempotencyKey, requester: requester, journal: journal, progress: progress)
        }
        let target: ObjectRequest.Target
        let object: ObjectReceipt
        if let key, let store = configuration.objectStore {
            target = .signed(try store.address(forKey: key))
            object = ObjectReceipt(
                bucket: store.location.bucket, key: key, etag: nil, versionId: nil, byteCount: payload.byteCount,
                url: "s3://\(store.location.bucket)/\(key)")
        } else {
            target = .presigned(configuration.url)
            object = ObjectReceipt(
                bucket: nil, key: nil, etag: nil, versionId: nil, byteCount: payload.byteCount,
                url: String(configuration.url.prefix { $0 != "?" && $0 != "#" }))
        }
        // A presigned URL may have signed the Content-Type: a caller's own header wins over ours.
        let callerType = configuration.connection.headers.contains { $0.name.equalsIgnoringASCIICase("content-type") }
        let request = ObjectRequest(
            method: key == nil ? configuration.method.rawValue : "PUT", target: target,
            headers: callerType ? [] : [HeaderField(name: "Content-Type", value: contentType)], body: payload,
            payloadHash: SigV4Signer.unsignedPayload)
        let tracker = ProgressTracker(total: payload.byteCount, sink: progress)
        let answer = try await requester.send(request) { sent, attempt in tracker.report(sent: sent, attempt: attempt) }
        if case .stored = answer.outcome { tracker.finish(attempt: answer.attempts) }
        let result = UploadResult(
            outcome: answer.outcome, idempotencyKey: idempotencyKey, attempts: answer.attempts,
            bodyByteCount: payload.byteCount, duration: answer.duration, retryReasons: answer.reasons)
        return (result, object)
    }

    /// A multipart upload of `payload` to `key`, continuing the earlier upload under that key when there is
    /// one (the one `journal` recorded, else the store's newest).
    private func putInParts(
        _ payload: SealedPayload, contentType: String, key: String, store: ObjectStoreEndpoint, idempotencyKey: String,
        requester: ObjectRequester, journal: MultipartJournal?, progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> (UploadResult, ObjectReceipt) {
        let clock = ContinuousClock()
        let start = clock.now
        let tracker = ProgressTracker(total: payload.byteCount, sink: progress)
        let upload = MultipartObjectUpload(
            requester: requester, store: store, key: key, payload: payload, contentType: contentType, journal: journal)
        let outcome = try await upload.run { bytes in tracker.report(sent: bytes, attempt: 1) }
        tracker.finish(attempt: 1)
        let result = UploadResult(
            outcome: .stored(outcome.stored), idempotencyKey: idempotencyKey, attempts: 1 + outcome.retries,
            bodyByteCount: payload.byteCount, duration: clock.now - start, retryReasons: [])
        var object = ObjectReceipt(
            bucket: store.location.bucket, key: key, etag: nil, versionId: nil, byteCount: payload.byteCount,
            url: "s3://\(store.location.bucket)/\(key)", parts: outcome.parts)
        object.resumedBytes = outcome.resumedBytes
        object.bytesSent = outcome.bytesSent
        object = object.merging(outcome.stored)
        if object.checksum == nil { object.checksum = outcome.checksum }
        if let warning = outcome.checksumWarning {
            // The store's value describes no bytes: the receipt keeps the one of the bytes sent, and says why.
            object.checksum = outcome.checksum ?? object.checksum
            object.checksumWarning = warning
        }
        return (result, object)
    }

    /// The store's receipt, or the error its refusal maps to.
    static func storedObject(_ result: UploadResult, refused message: String, file: String) throws -> ServerReceipt {
        switch result.outcome {
        case .stored(let receipt): return receipt
        case .rejected(let rejection): throw AttacheError(refusal: rejection, message, file: file)
        }
    }
}

extension ObjectReceipt {
    /// This receipt with what the store's answer said: ETag, version id, checksum.
    func merging(_ stored: ServerReceipt) -> ObjectReceipt {
        var receipt = self
        receipt.etag = Self.unquoted(stored.data["ETag"]?.stringValue) ?? etag
        receipt.versionId = stored.data["VersionId"]?.stringValue ?? versionId
        if let crc = stored.data["ChecksumCRC32C"]?.stringValue {
            receipt.checksum = "crc32c:" + crc
        } else if let sha = stored.data["ChecksumSHA256"]?.stringValue {
            receipt.checksum = "sha256:" + sha
        }
        return receipt
    }
}
