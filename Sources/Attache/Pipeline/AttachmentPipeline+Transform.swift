import FoundationEssentials
import Glibc

/// The transform stage's hand-off: the payload to seal (recompressed, converted, or the original), its
/// filename, and the thumbnails made. ``remove()`` deletes the private work directory once the send is
/// over.
struct TransformedAttachment: Sendable {
    /// What came in.
    let detected: DetectedAttachment
    /// What Transform did and made.
    let output: TransformOutput
    /// The bytes to seal: the transformed file, or the original when nothing changed.
    let payload: any ByteSource
    /// The filename to send, its extension changed when the format did.
    let filename: String
    /// The work directory of the transformed files, when one was made.
    let workDirectory: String?

    /// The bytes as prepared.
    var prepared: PreparedAttachment { detected.prepared }

    /// Deletes the work directory.
    func remove() {
        if let workDirectory { try? FileManager.default.removeItem(atPath: workDirectory) }
    }
}

extension AttachmentPipeline {
    /// transform: DetectedAttachment → TransformedAttachment. Images and stickers recompressed, videos,
    /// voice notes and animations converted, thumbnails made; files pass through.
    func transform(_ detected: DetectedAttachment) async throws -> TransformedAttachment {
        let prepared = detected.prepared
        let detection = detected.detection
        let isAnimated = detection.metadata.isAnimated == true
        let transforms = transformer.configuration.transforms(
            mimeType: detection.mimeType, kind: detection.kind, isAnimated: isAnimated)
        // A kind this stage leaves alone needs no work directory and no job on the pool: the guarded
        // source already knows the size, and a batch of small files feels every hand-off between threads.
        guard transforms else {
            let sourcePath: String
            switch prepared.input.content {
            case .file(let path): sourcePath = path
            case .memory: sourcePath = prepared.path
            }
            let output = Transformer.passThrough(prepared.original, path: sourcePath, mimeType: detection.mimeType)
            return TransformedAttachment(
                detected: detected, output: output, payload: prepared.original, filename: prepared.filename,
                workDirectory: nil)
        }
        let workDirectory = try Self.makeWorkDirectory()
        do {
            let output = try await transform(prepared, detection: detection, in: workDirectory)
            if let reason = output.skipReason {
                logger.debug(
                    "sending the original: it cannot be transformed",
                    metadata: ["file": "\(prepared.path)", "reason": "\(reason)"])
            }
            let payload: any ByteSource = output.didTransform ? try FileSource(path: output.path) : prepared.original
            var filename = prepared.filename
            if let newExtension = output.filenameExtension {
                filename = Self.replacingExtension(of: filename, with: newExtension)
            }
            return TransformedAttachment(
                detected: detected, output: output, payload: payload, filename: filename,
                workDirectory: workDirectory)
        } catch {
            try? FileManager.default.removeItem(atPath: workDirectory)
            throw error
        }
    }

    /// Runs the transformer within the pipeline's limit of transforms at once, and fails when the file
    /// changed while it was read.
    private func transform(
        _ prepared: PreparedAttachment, detection: Detection, in workDirectory: String
    ) async throws -> TransformOutput {
        // The codecs read a file: bytes in memory are written to the private work directory first,
        // named with the attachment's extension, which some decoders go by.
        let sourcePath: String
        switch prepared.input.content {
        case .file(let path): sourcePath = path
        case .memory(let bytes):
            let filename = prepared.filename
            let dot = filename.lastIndex(of: ".").map { String(filename[$0...]) } ?? ""
            let name = "input" + (dot.count <= 12 && !dot.contains("/") ? dot : "")
            sourcePath = try PreparedInput.write(bytes, into: workDirectory, name: name)
        }
        let transformer = self.transformer
        let isAnimated = detection.metadata.isAnimated == true
        // The transform reads the source on its own; a change while it reads shows in a second
        // fingerprint of the (small) image file.
        let guarded = prepared.guarded
        let before = try await BlockingPool.shared.run { try guarded?.contentFingerprint() ?? 0 }
        let output = try await transformLimiter.run {
            try await transformer.transform(
                fileAt: sourcePath, mimeType: detection.mimeType, kind: detection.kind, isAnimated: isAnimated,
                workDirectory: workDirectory)
        }
        if output.didTransform, let guarded {
            let after = try await BlockingPool.shared.run { try guarded.contentFingerprint() }
            guard after == before else {
                throw AttacheError(
                    .fileChanged, stage: .transform, "the file changed while it was being recompressed",
                    file: prepared.path, isRetryable: true)
            }
        }
        return output
    }

    /// `filename` with its extension replaced (or added).
    static func replacingExtension(of filename: String, with newExtension: String) -> String {
        let stem = PathText.deletingExtension(filename)
        return (stem.isEmpty ? filename : stem) + "." + newExtension
    }

    /// A private directory for this attachment's transformed files, removed when it is sent.
    static func makeWorkDirectory() throws -> String {
        var template = Array((PathText.temporaryDirectory + "/attache-XXXXXX").utf8CString)
        guard let created = mkdtemp(&template) else {
            throw AttacheError(
                .fileUnwritable, stage: .transform, "cannot create a temporary directory",
                cause: NativeError.posix())
        }
        return String(cString: created)
    }
}
