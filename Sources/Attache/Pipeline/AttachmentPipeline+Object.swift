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

        let address = sealed.contentAddress
        let objectKey = store.map {
            $0.keyTemplate.key(
                prefix: $0.location.prefix, idempotencyKey: idempotencyKey, filename: filename, kind: kind,
                sha256: address?.sha256)
        }
        // A content-addressed object already there: nothing to send.
        if let address, let store, let objectKey,
            let head = try await existingContent(
                key: objectKey, store: store, requester: requester, address: address,
                byteCount: sealed.payload.byteCount, file: attachment.path)
        {
            progress?(.upload(UploadProgress(bytesSent: sealed.payload.byteCount, totalBytes: sealed.payload.byteCount, attempt: 1, fractionCompleted: 1)))
            let result = UploadResult(
                outcome: .stored(head), idempotencyKey: idempotencyKey, attempts: 0,
                bodyByteCount: sealed.payload.byteCount, duration: .zero, retryReasons: [])
            var sent = SentAttachment(forms: forms, result: result, stored: head, resumed: nil, thumbnails: [])
            sent.object = ObjectReceipt(
                bucket: store.location.bucket, key: objectKey, etag: nil, versionId: nil,
                byteCount: sealed.payload.byteCount, url: "s3://\(store.location.bucket)/\(objectKey)"
            ).merging(head)
            sent.dedup = DedupReceipt(reusedFrom: "s3://\(store.location.bucket)/\(objectKey)", sha256: address.sha256)
            return sent
        }
        let multipart = MultipartJournal(journalled: await journal?.multipartRecord(), sink: multipartRecordSink)
        var (result, object) = try await putObject(
            sealed.payload, contentType: sealed.contentType, key: objectKey, idempotencyKey: idempotencyKey,
            requester: requester, journal: multipart, address: address
        ) { update in progress?(.upload(update)) }
        // Another sender wrote the same content between the HEAD and the PUT: its object stands.
        if let address, let store, let objectKey, case .rejected(let rejection) = result.outcome, rejection.status == 412,
            let head = try await existingContent(
                key: objectKey, store: store, requester: requester, address: address,
                byteCount: sealed.payload.byteCount, file: attachment.path)
        {
            result = UploadResult(
                outcome: .stored(head), idempotencyKey: idempotencyKey, attempts: result.attempts,
                bodyByteCount: result.bodyByteCount, duration: result.duration, retryReasons: result.retryReasons)
            object = object.merging(head)
        }
        let stored = try Self.storedObject(result, refused: "the object store refused the upload", file: attachment.path)

        var thumbnails: [SentAttachment.SentThumbnail] = []
        if let store {
            let stem = PathText.deletingExtension(filename)
            for (thumbnail, form) in forms.separateThumbnails {
                let thumbnailKey = idempotencyKey + "." + thumbnail.thumbnail.name
                let key = store.keyTemplate.key(
                    prefix: store.location.prefix, idempotencyKey: thumbnailKey,
                    filename: (stem.isEmpty ? filename : stem) + "." + thumbnail.thumbnail.filename, kind: kind,
                    sha256: address.map { $0.sha256 + "." + thumbnail.thumbnail.name })
                var (thumbnailResult, _) = try await putObject(
                    thumbnail.payload, contentType: thumbnail.contentType, key: key, idempotencyKey: thumbnailKey,
                    requester: requester, address: address, progress: nil)
                if let address, case .rejected(let rejection) = thumbnailResult.outcome, rejection.status == 412,
                    let head = try await existingContent(
                        key: key, store: store, requester: requester, address: address,
                        byteCount: thumbnail.payload.byteCount, file: attachment.path)
                {
                    thumbnailResult = UploadResult(
                        outcome: .stored(head), idempotencyKey: thumbnailKey, attempts: thumbnailResult.attempts,
                        bodyByteCount: thumbnailResult.bodyByteCount, duration: thumbnailResult.duration,
                        retryReasons: thumbnailResult.retryReasons)
                }
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

    /// The object under a content-addressed `key` (`HEAD`), when it is there with the size and key check
    /// this content sealed under these settings gives; nil when there is none.
    /// - Throws: ``AttacheCore/AttacheError`` `.replayMismatch` when an object of other bytes is there (it is
    ///   left as it is), or the store's refusal of the `HEAD`.
    private func existingContent(
        key: String, store: ObjectStoreEndpoint, requester: ObjectRequester, address: ContentAddress, byteCount: Int64,
        file: String
    ) async throws -> ServerReceipt? {
        let answer = try await requester.send(ObjectRequest(method: "HEAD", target: .signed(try store.address(forKey: key))))
        let head: ServerReceipt
        switch answer.outcome {
        case .rejected(let rejection) where rejection.status == 404:
            return nil
        case .rejected(let rejection):
            throw AttacheError(refusal: rejection, "the object store would not say whether it holds this content", file: file)
        case .stored(let receipt):
            head = receipt
        }
        func header(_ name: String) -> String? {
            answer.headers.first { $0.name.equalsIgnoringASCIICase(name) }?.value
        }
        let length = header("content-length").flatMap { Int64($0) }
        let check = header("x-amz-meta-attache-key-check")
        guard length == byteCount, check == address.keyCheck else {
            throw AttacheError(
                .replayMismatch, stage: .upload,
                "s3://\(store.location.bucket)/\(key) holds an object that is not this content sealed under these settings "
                    + "(\(length.map { "\($0)" } ?? "?") bytes against \(byteCount), key check \(check ?? "none")): it is left as it is",
                file: file)
        }
        return head
    }

    /// One `PUT` of `payload`: to `key` of the object store, or to the presigned URL when `key` is nil. A
    /// content-addressed object (`address`) carries its key check and is written only if absent.
    private func putObject(
        _ payload: SealedPayload, contentType: String, key: String?, idempotencyKey: String,
        requester: ObjectRequester, journal: MultipartJournal? = nil, address: ContentAddress? = nil,
        progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> (UploadResult, ObjectReceipt) {
        let metadata = address.map { [HeaderField(name: "x-amz-meta-attache-key-check", value: $0.keyCheck)] } ?? []
        if let key, let store = configuration.objectStore, payload.byteCount >= store.multipart.threshold {
            return try await putInParts(payload, contentType: contentType, key: key, store: store,
                idempotencyKey: idempotencyKey, requester: requester, journal: journal, metadata: metadata,
                progress: progress)
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
        var headers = callerType ? [] : [HeaderField(name: "Content-Type", value: contentType)]
        if address != nil, key != nil { headers += metadata + [HeaderField(name: "If-None-Match", value: "*")] }
        let request = ObjectRequest(
            method: key == nil ? configuration.method.rawValue : "PUT", target: target, headers: headers, body: payload,
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
        requester: ObjectRequester, journal: MultipartJournal?, metadata: [HeaderField],
        progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> (UploadResult, ObjectReceipt) {
        let clock = ContinuousClock()
        let start = clock.now
        let tracker = ProgressTracker(total: payload.byteCount, sink: progress)
        var upload = MultipartObjectUpload(
            requester: requester, store: store, key: key, payload: payload, contentType: contentType, journal: journal)
        upload.metadata = metadata
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
