/// The detect stage's hand-off: what the content is (type, kind, metadata), the caller's declared kind
/// checked against it.
struct DetectedAttachment: Sendable {
    /// The bytes, ready.
    let prepared: PreparedAttachment
    /// What Detect found.
    let detection: Detection
}

extension AttachmentPipeline {
    /// detect: PreparedAttachment → DetectedAttachment. A detection the caller already made
    /// (``SendOptions/detection``: the batch does, in the job that reads the file's identity) is taken
    /// as it is.
    func detect(_ prepared: PreparedAttachment) async throws -> DetectedAttachment {
        let attachment = prepared.attachment
        let detection: Detection
        if let known = knownDetection {
            detection = known
        } else {
            switch prepared.input.content {
            case .file(let path):
                detection = try await detector.detect(fileAt: path, declaredKind: attachment.declaredKind, on: .shared)
            case .memory(let bytes):
                detection = try detector.detect(
                    contents: bytes, filename: prepared.filename, declaredKind: attachment.declaredKind)
            }
        }
        if detection.mismatch {
            logger.debug(
                "extension and content disagree",
                metadata: [
                    "file": "\(attachment.path)", "content": "\(detection.mimeType)",
                    "extension": "\(detection.extensionMIMEType ?? "-")",
                ])
        }
        return DetectedAttachment(prepared: prepared, detection: detection)
    }
}
