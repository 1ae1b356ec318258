import FoundationEssentials

extension AttachmentPipeline {
    /// receipt: SentAttachment → UploadReceipt.
    func receipt(_ sent: SentAttachment) -> UploadReceipt {
        let sealed = sent.sealed
        let transformed = sealed.transformed
        let prepared = transformed.prepared
        let output = transformed.output
        let placement = configuration.thumbnailPlacement
        var receipt = UploadReceipt(
            path: prepared.path, filename: transformed.filename, kind: transformed.detected.detection.kind,
            mimeType: output.mimeType,
            fileId: sent.stored.fileId ?? presignedKey(attachment: prepared.attachment, filename: transformed.filename),
            url: absoluteURL(sent.stored.url), originalByteCount: prepared.original.byteCount,
            sentByteCount: sealed.payload.byteCount, bodyByteCount: sent.result.bodyByteCount,
            idempotencyKey: sent.result.idempotencyKey, attempts: sent.result.attempts, replayed: sent.stored.replayed,
            seconds: (ContinuousClock.now - prepared.start).seconds, server: sent.stored.data,
            seal: SealReceipt(
                scheme: sealed.seal.scheme, transferEncoding: sealed.seal.transferEncoding,
                plaintextByteCount: sealed.payload.plaintextByteCount, digest: sealed.payload.digest,
                key: sealed.receiptKey,
                encryptedFile: sealed.payload.matrixFile(
                    url: sent.stored.data["content_uri"]?.stringValue ?? absoluteURL(sent.stored.url),
                    key: sealed.receiptKey)),
            detection: transformed.detected.detection,
            transform: TransformReceipt(
                recompressed: output.didTransform, byteCount: output.outputByteCount, width: output.width,
                height: output.height, thumbnails: placement == .inline ? output.thumbnails.map(\.name) : [],
                skipped: output.skipReason, media: MediaReceipt(output), reason: output.reason),
            thumbnails: thumbnailReceipts(sent, placement: placement))
        if transformed.lease?.reused == true { receipt.transform.reused = true }
        receipt.scan = sealed.scan
        receipt.placeholders = output.placeholders
        receipt.object = sent.object
        receipt.dedup = sent.dedup
        if let object = sent.object {
            if sent.stored.fileId == nil, let key = object.key { receipt.fileId = key }
            if receipt.url == nil { receipt.url = object.url }
        }
        if configuration.matrix != nil { receipt.matrix = matrixReceipt(sent, receipt: receipt) }
        receipt.resumable = sent.resumed.map {
            ResumableReceipt(
                protocolName: $0.protocolName, uploadURL: $0.uploadURL, resumedBytes: $0.resumedFrom,
                bytesSent: $0.bytesSent, requests: $0.requests)
        }
        return receipt
    }

    /// One entry per thumbnail sent: a separate one with its own request's facts, id and URL; an inline
    /// one with the id and URL of the part of that name in the server's `parts` list, if the server lists
    /// its parts (the reference server does).
    func thumbnailReceipts(_ sent: SentAttachment, placement: ThumbnailPlacement) -> [ThumbnailReceipt] {
        let attachment = sent.sealed.prepared.attachment
        return sent.sealed.thumbnails.map { sealed in
            let thumbnail = sealed.thumbnail
            var entry = ThumbnailReceipt(
                name: thumbnail.name, filename: thumbnail.filename, mimeType: thumbnail.mimeType,
                width: thumbnail.width, height: thumbnail.height, byteCount: Int64(thumbnail.bytes.count),
                placement: placement)
            if let own = sent.thumbnails.first(where: { $0.sealed.thumbnail.name == thumbnail.name }) {
                entry.filename = own.filename
                entry.fileId = own.stored.fileId ?? presignedKey(attachment: attachment, filename: own.filename)
                entry.url = absoluteURL(own.stored.url)
                entry.sentByteCount = sealed.payload.byteCount
                entry.digest = sealed.payload.digest
                entry.idempotencyKey = own.result.idempotencyKey
                entry.attempts = own.result.attempts
                entry.replayed = own.stored.replayed
                entry.server = own.stored.data
            } else if case .array(let parts)? = sent.stored.data["parts"],
                let part = parts.first(where: { $0["name"]?.stringValue == thumbnail.name })
            {
                entry.fileId = part["fileId"]?.stringValue
                entry.url = absoluteURL(part["url"]?.stringValue)
            }
            return entry
        }
    }

    /// With `s3-post`, the object's key when the answer did not name it (S3's `204`): the form's `key`
    /// field, with `${filename}` replaced by the filename sent, as S3 does.
    private func presignedKey(attachment: Attachment, filename: String) -> String? {
        guard configuration.answers.profile == .s3Post,
            let key = (configuration.fields + attachment.fields).last(where: { $0.name == "key" })?.value
        else { return nil }
        return key.replacing("${filename}", with: filename)
    }

    /// The server's file URL made absolute against the upload URL (`/files/7` → `http://host:port/files/7`),
    /// so that a receipt leads to the file without knowing where it was uploaded; as given when it is
    /// absolute already or cannot be resolved.
    func absoluteURL(_ url: String?) -> String? {
        guard let url, !url.isEmpty else { return url }
        guard let baseURL, let resolved = URL(string: url, relativeTo: baseURL),
              let scheme = resolved.scheme, !scheme.isEmpty
        else { return url }
        return resolved.absoluteString
    }
}
