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
    /// The work directory of the transformed files, when this send made one of its own.
    let workDirectory: String?
    /// The hold on a transform shared with the sends of identical sources (``TransformShare``), whose
    /// work directory the share owns.
    var lease: TransformShare.Lease? = nil

    /// The bytes as prepared.
    var prepared: PreparedAttachment { detected.prepared }

    /// Deletes the work directory, or gives the shared transform back.
    func remove() {
        if let workDirectory { try? FileManager.default.removeItem(atPath: workDirectory) }
        lease?.release()
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
        if let share = transformShare {
            // The source's SHA-256, read where the transform's change check reads it anyway: a copy of a
            // source this pipeline transforms or has transformed takes that output.
            let digest = try await sourceDigest(prepared)
            let key = TransformShare.Key(digest: digest, mimeType: detection.mimeType, kind: detection.kind, isAnimated: isAnimated)
            let pipeline = self
            if let lease = try await share.lease(key, make: { workDirectory in
                try await pipeline.transform(prepared, detection: detection, in: workDirectory, digest: digest)
            }) {
                do {
                    var transformed = try transformed(detected, output: lease.made.output, workDirectory: nil)
                    transformed.lease = lease
                    return transformed
                } catch {
                    lease.release()
                    throw error
                }
            }
        }
        let workDirectory = try Self.makeWorkDirectory()
        do {
            let output = try await transform(prepared, detection: detection, in: workDirectory, digest: nil)
            return try transformed(detected, output: output, workDirectory: workDirectory)
        } catch {
            try? FileManager.default.removeItem(atPath: workDirectory)
            throw error
        }
    }

    /// The hand-off for `output`: its file as the payload (the original when nothing changed), the
    /// filename with the output's extension.
    private func transformed(
        _ detected: DetectedAttachment, output: TransformOutput, workDirectory: String?
    ) throws -> TransformedAttachment {
        let prepared = detected.prepared
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
            detected: detected, output: output, payload: payload, filename: filename, workDirectory: workDirectory)
    }

    /// The SHA-256 of the prepared bytes, read on the blocking pool.
    private func sourceDigest(_ prepared: PreparedAttachment) async throws -> [UInt8] {
        switch prepared.input.content {
        case .file:
            let guarded = prepared.guarded
            return try await BlockingPool.shared.run { try guarded?.contentSHA256() ?? [] }
        case .memory(let bytes):
            return try await BlockingPool.shared.run {
                let digest = try SHA256Digest()
                try bytes.withUnsafeBytes { try digest.update($0) }
                return try digest.finish()
            }
        }
    }

    /// Runs the transformer within the pipeline's limit of transforms at once, and fails when the file
    /// changed while it was read.
    ///
    /// `digest` is the source's SHA-256 when it was read already (for ``TransformShare``): the change check
    /// then compares that, rather than read a fingerprint first.
    private func transform(
        _ prepared: PreparedAttachment, detection: Detection, in workDirectory: String, digest: [UInt8]?
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
        let bySHA256 = digest != nil
        let reading: @Sendable (FileSource) throws -> [UInt8] = { source in
            if bySHA256 { return try source.contentSHA256() }
            let fingerprint = try source.contentFingerprint()
            return withUnsafeBytes(of: fingerprint) { Array($0) }
        }
        let before: [UInt8]
        if let digest {
            before = digest
        } else {
            before = try await BlockingPool.shared.run { try guarded.map(reading) ?? [] }
        }
        let output = try await transformLimiter.run {
            try await transformer.transform(
                fileAt: sourcePath, mimeType: detection.mimeType, kind: detection.kind, isAnimated: isAnimated,
                workDirectory: workDirectory)
        }
        if output.didTransform, let guarded {
            let after = try await BlockingPool.shared.run { try reading(guarded) }
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
