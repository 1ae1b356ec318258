/// The form stage's hand-off: the attachment's form, and one form per thumbnail that goes as a request
/// of its own.
struct AttachmentForms: Sendable {
    /// What came in.
    let sealed: SealedAttachment
    /// The attachment's request: its fields, its file part, the inline thumbnails.
    let attachment: UploadForm
    /// The thumbnails sent as requests of their own (``ThumbnailPlacement/separate``), each with its form.
    let separateThumbnails: [(thumbnail: SealedAttachment.SealedThumbnail, form: UploadForm)]
}

extension AttachmentPipeline {
    /// form: SealedAttachment → AttachmentForms.
    func form(_ sealed: SealedAttachment) -> AttachmentForms {
        let transformed = sealed.transformed
        let attachment = sealed.prepared.attachment
        let placement = configuration.thumbnailPlacement
        let inline = placement == .inline ? sealed.thumbnails : []
        let form = UploadForm(
            configuration: configuration, attachmentFields: attachment.fields,
            metadata: Self.metadataFields(detection: transformed.detected.detection, transformed: transformed.output)
                + (configuration.sendPlaceholderFields ? Self.placeholderFields(transformed.output.placeholders) : []),
            seal: .init(configuration: sealed.seal, plaintextByteCount: sealed.payload.plaintextByteCount, isPlain: sealed.isPlain),
            file: .init(
                name: configuration.fileFieldName, filename: transformed.filename, contentType: sealed.contentType,
                source: sealed.payload),
            inlineFiles: inline.map {
                .init(name: $0.thumbnail.name, filename: $0.thumbnail.filename, contentType: $0.contentType, source: $0.payload)
            })
        // A thumbnail of its own: the attachment's fields, the thumbnail's own metadata, and the thumbnail
        // as the one file part under the attachment's file field, named after the attachment
        // (`photo.thumbnail.jpg`) so that a presigned POST's `${filename}` key gives it an object of its own.
        let separate = placement == .separate ? sealed.thumbnails : []
        let stem = PathText.deletingExtension(transformed.filename)
        let thumbnailForms = separate.map { sealedThumbnail in
            let thumbnail = sealedThumbnail.thumbnail
            let form = UploadForm(
                configuration: configuration, attachmentFields: attachment.fields,
                metadata: [
                    UploadField(name: "mimeType", value: thumbnail.mimeType),
                    UploadField(name: "width", value: String(thumbnail.width)),
                    UploadField(name: "height", value: String(thumbnail.height)),
                ],
                seal: .init(
                    configuration: sealed.seal, plaintextByteCount: sealedThumbnail.payload.plaintextByteCount,
                    isPlain: sealed.isPlain),
                file: .init(
                    name: configuration.fileFieldName,
                    filename: (stem.isEmpty ? transformed.filename : stem) + "." + thumbnail.filename,
                    contentType: sealedThumbnail.contentType, source: sealedThumbnail.payload))
            return (thumbnail: sealedThumbnail, form: form)
        }
        return AttachmentForms(sealed: sealed, attachment: form, separateThumbnails: thumbnailForms)
    }

    /// The placeholders as the form fields `blurhash`, `thumbhash` and `stripped` (the last two base64).
    static func placeholderFields(_ placeholders: Placeholders?) -> [UploadField] {
        guard let placeholders else { return [] }
        var fields = [
            UploadField(name: "blurhash", value: placeholders.blurhash),
            UploadField(name: "thumbhash", value: placeholders.thumbhash),
        ]
        if let stripped = placeholders.stripped { fields.append(UploadField(name: "stripped", value: stripped)) }
        return fields
    }

    /// The detected metadata as form fields, with what Transform changed (type, size, orientation).
    static func metadataFields(detection: Detection, transformed: TransformOutput) -> [UploadField] {
        var fields = detection.uploadFields.filter { field in
            switch field.name {
            case "mimeType": return false
            case "width", "height", "orientation", "rotation": return !transformed.didTransform
            default: return true
            }
        }
        fields.insert(UploadField(name: "mimeType", value: transformed.mimeType), at: 0)
        // A converted video or animation says what was sent; a video that went as it is (already compliant)
        // has the detected size, which the converter knows from its probe too.
        let media = transformed.mediaPlan != nil
        if media { fields.removeAll { ["width", "height", "duration", "rotation"].contains($0.name) } }
        if transformed.didTransform || media {
            if let width = transformed.width { fields.append(UploadField(name: "width", value: String(width))) }
            if let height = transformed.height { fields.append(UploadField(name: "height", value: String(height))) }
        }
        if media, let duration = transformed.duration {
            fields.append(UploadField(name: "duration", value: MediaMetadata.format(duration)))
        }
        if let streaming = transformed.supportsStreaming {
            fields.append(UploadField(name: "supportsStreaming", value: String(streaming)))
        }
        if transformed.isAnimation { fields.append(UploadField(name: "animation", value: "true")) }
        if let waveform = transformed.waveform {
            fields.append(UploadField(name: "waveform", value: Base64.encode(waveform)))
        }
        return fields
    }
}
