/// The send stage's hand-off: what the server stored, for the attachment and for each thumbnail sent as
/// a request of its own.
struct SentAttachment: Sendable {
    /// A thumbnail sent as a request of its own, and the server's answer.
    struct SentThumbnail: Sendable {
        /// The thumbnail, sealed.
        let sealed: SealedAttachment.SealedThumbnail
        /// The filename sent.
        let filename: String
        /// The request's end.
        let result: UploadResult
        /// The server's receipt.
        let stored: ServerReceipt
    }

    /// What was sent.
    let forms: AttachmentForms
    /// The attachment's request's end (for a resumable upload, its creation's and appends').
    let result: UploadResult
    /// The server's receipt for the attachment.
    let stored: ServerReceipt
    /// How it went as a resumable upload; nil for a multipart POST.
    let resumed: ResumableUploadResult?
    /// The thumbnails sent separately, in the order sent.
    let thumbnails: [SentThumbnail]
    /// Where the attachment is in an object store; nil for other uploads.
    var object: ObjectReceipt? = nil
    /// For a content-addressed object that was there already: what the receipt's `dedup` says.
    var dedup: DedupReceipt? = nil

    /// What was sealed.
    var sealed: SealedAttachment { forms.sealed }
}

extension AttachmentPipeline {
    /// send: AttachmentForms → SentAttachment. The attachment goes as a resumable upload when that
    /// applies and the server takes one, as a multipart POST otherwise; then each separate thumbnail, under
    /// an idempotency key derived from the attachment's. A refusal of any is an error, mapped in one place
    /// (`AttacheError(refusal:_:file:)`).
    func send(
        _ forms: AttachmentForms, progress: (@Sendable (PipelineProgress) -> Void)?
    ) async throws -> SentAttachment {
        if let matrixMedia { return try await sendMatrix(forms, media: matrixMedia, progress: progress) }
        if configuration.sendsObjects { return try await sendObject(forms, progress: progress) }
        let sealed = forms.sealed
        let attachment = sealed.prepared.attachment
        let body = try forms.attachment.multipartBody()
        let idempotencyKey = attachment.idempotencyKey ?? Uploader.makeIdempotencyKey()
        var resumed: ResumableUploadResult?
        if configuration.resumable.applies(toByteCount: sealed.payload.byteCount) {
            // The same form, its fields as Upload-Metadata and the sealed bytes as the body.
            var resumableUploader = ResumableUploader(
                client: uploader.client, answers: uploader.answers, configuration: configuration.resumable, logger: logger)
            resumableUploader.connection = uploader.connection
            let earlier = await journal?.resumableState()
            resumed = try await resumableUploader.upload(
                ResumableUploadRequest(
                    url: configuration.url, body: sealed.payload, contentType: sealed.contentType,
                    filename: forms.attachment.file.filename, fields: forms.attachment.uploadMetadata,
                    idempotencyKey: idempotencyKey, resumeFrom: earlier),
                onState: resumableStateSink
            ) { update in progress?(.upload(update)) }
            if resumed == nil {
                logger.debug("the server takes no resumable uploads; sending multipart", metadata: ["file": "\(attachment.path)"])
            }
        }
        let result: UploadResult
        if let resumed {
            result = resumed.upload
        } else {
            let request = UploadRequest(url: configuration.url, body: body, idempotencyKey: idempotencyKey)
            result = try await uploader.upload(request) { update in progress?(.upload(update)) }
        }
        let stored = try Self.stored(result, refused: "the server refused the upload", file: attachment.path)
        try await checkReplay(
            stored, sent: sealed.payload, attachment: attachment, attempts: result.attempts,
            freshMaterial: sealed.isFreshMaterial)

        var thumbnails: [SentAttachment.SentThumbnail] = []
        for (thumbnail, form) in forms.separateThumbnails {
            let thumbnailResult = try await uploader.upload(
                UploadRequest(
                    url: configuration.url, body: try form.multipartBody(),
                    idempotencyKey: result.idempotencyKey + "." + thumbnail.thumbnail.name))
            let thumbnailStored = try Self.stored(
                thumbnailResult,
                refused: "the attachment was stored, but the server refused its \(thumbnail.thumbnail.name)",
                file: attachment.path)
            try await checkReplay(
                thumbnailStored, sent: thumbnail.payload, attachment: attachment, attempts: thumbnailResult.attempts,
                freshMaterial: false)
            thumbnails.append(
                SentAttachment.SentThumbnail(
                    sealed: thumbnail, filename: form.file.filename, result: thumbnailResult, stored: thumbnailStored))
        }
        return SentAttachment(forms: forms, result: result, stored: stored, resumed: resumed, thumbnails: thumbnails)
    }

    /// The server's receipt, or the error its refusal maps to.
    private static func stored(_ result: UploadResult, refused message: String, file: String) throws -> ServerReceipt {
        switch result.outcome {
        case .stored(let receipt): return receipt
        case .rejected(let rejection): throw AttacheError(refusal: rejection, message, file: file)
        }
    }

    /// Makes sure a receipt that may belong to an earlier upload under the same idempotency key is a
    /// receipt for the bytes sent now, so that the key it is returned with opens what the server holds.
    ///
    /// When the server says it replayed (`Idempotent-Replayed: true`) or this send resumes an earlier one,
    /// and the answer carries a `sha256` of the stored part, the part is sealed again (identical bytes)
    /// and hashed; a different digest is an error. A replay of an upload made with other material, and
    /// without a digest to compare, is an error too: this process cannot know that upload's key.
    private func checkReplay(
        _ receipt: ServerReceipt, sent: SealedPayload, attachment: Attachment, attempts: Int, freshMaterial: Bool
    ) async throws {
        guard receipt.replayed || journal?.continuesEarlierSend == true else { return }
        let reported = receipt.data["sha256"]?.stringValue?.lowercased()
        guard let reported, reported.count == 64 else {
            if receipt.replayed, attempts == 1, freshMaterial {
                throw AttacheError(
                    .replayMismatch, stage: .interpret,
                    "the server replayed an earlier upload made under this idempotency key with another seal key, "
                        + "and gave no digest to check it against", file: attachment.path)
            }
            return
        }
        let actual = try await BlockingPool.shared.run { try ContentDigest.sha256Hex(of: sent) }
        guard actual == reported else {
            throw AttacheError(
                .replayMismatch, stage: .interpret,
                "the server answered with the receipt of other bytes stored under this idempotency key "
                    + "(sha256 \(reported.prefix(16))…, sent \(actual.prefix(16))…); its key would not open them",
                file: attachment.path)
        }
    }
}
