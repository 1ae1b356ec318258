internal import AttacheCore
import FoundationEssentials
import Glibc

/// What a run does with a file whose content is already stored (``UploadReceipt/dedup``).
///
/// Reuse reveals something a fresh upload does not: the server sees one object referenced by many
/// messages, and whoever holds one message's key opens every copy. It is therefore off by default.
public enum ContentReuse: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Every file is sealed with its own key and sent (the default).
    case off
    /// A file whose content and settings match a stored upload in the index takes that upload's receipt
    /// (its URL and seal key) and sends nothing.
    case reuse
    /// As ``reuse``, after downloading the stored upload once per run and opening it with its key: an
    /// object that is gone, or that the key does not open, is never trusted; the file is sent again and
    /// the index corrected.
    case verify

    public var description: String { rawValue }

    /// True for ``reuse`` and ``verify``.
    public var reusesStoredUploads: Bool { self != .off }
}

/// How a receipt came from another upload of the same content (``ContentReuse``).
public struct DedupReceipt: Sendable, Codable, Hashable {
    /// The idempotency key of the upload that stored the bytes.
    public var reusedFrom: String
    /// The SHA-256 (hex) of the source file's bytes.
    public var sha256: String

    /// Creates the facts of a reuse.
    public init(reusedFrom: String, sha256: String) {
        self.reusedFrom = reusedFrom
        self.sha256 = sha256
    }
}

extension UploadReceipt {
    /// This receipt, given to another file with the same content: its path, and ``dedup`` naming the
    /// upload that holds the bytes. Everything a message needs (URL, ids, seal key) stays as stored.
    package func reused(forPath path: String, sha256: String, seconds: Double) -> UploadReceipt {
        var copy = self
        copy.dedup = DedupReceipt(reusedFrom: dedup?.reusedFrom ?? idempotencyKey, sha256: sha256)
        copy.path = path
        copy.attempts = 0
        copy.replayed = false
        copy.seconds = seconds
        return copy
    }

    /// Why this receipt, read back from an index, cannot stand for a file with `sha256`; nil when it can.
    /// Checks what needs no network: that it names where the file is, carries a key when it was sealed
    /// with a fresh one, and was made for the same bytes.
    package func reuseDoubt(sha256: String, byteCount: Int64, fixedKey: Bool) -> String? {
        if let dedup, dedup.sha256 != sha256 { return "the stored receipt is for other bytes" }
        if originalByteCount != byteCount { return "the stored receipt is for a file of another size" }
        if (url ?? "").isEmpty, (fileId ?? "").isEmpty, object == nil, matrix == nil {
            return "the stored receipt names no URL or id"
        }
        if seal.scheme != .none, seal.key == nil, !fixedKey { return "the stored receipt has no key" }
        return nil
    }
}

extension PipelineConfiguration {
    /// A digest (SHA-256, hex) of every setting that changes what a file becomes on the server: the
    /// endpoint and its fields, the transform, the seal scheme and encoding (a fixed key by its digest
    /// only), thumbnails, the object store's bucket and key template, the homeserver. Two sends with the
    /// same source bytes and the same fingerprint give the same upload but for the seal key, which is
    /// what ``ContentReuse`` relies on. Credentials, timeouts and retries are not part of it.
    public var settingsFingerprint: String {
        var text = "attache-settings-1\n"
        func add(_ name: String, _ value: Any?) {
            text += name + "=" + (value.map { String(reflecting: $0) } ?? "-") + "\n"
        }
        add("url", url)
        add("method", method)
        add("body", body)
        add("fileField", fileFieldName)
        add("fields", fields.map { $0.name + "=" + $0.value })
        add("metadataFields", sendsMetadataFields)
        add("sealFields", sendsSealFields)
        add("thumbnails", thumbnailPlacement)
        add("placeholderFields", sendPlaceholderFields)
        add("recompressImages", transform.recompressImages)
        add("image", transform.image)
        add("makeStickers", transform.makeStickers)
        add("makeThumbnails", transform.makeThumbnails)
        add("thumbnailSides", transform.thumbnailSides)
        add("onTransformError", transform.onTransformError)
        add("convertVideo", transform.convertVideo)
        add("convertVoice", transform.convertVoice)
        add("convertAnimations", transform.convertAnimations)
        add("media", transform.media)
        add("heif", transform.heifDecoder != nil)
        add("scheme", seal.scheme)
        add("encoding", seal.transferEncoding)
        add("fixedKey", seal.key.map { ContentDigest.sha256Hex(of: Array(("attache-fixed-key\u{0}" + $0.base64).utf8)) })
        add("resumable", resumable.mode)
        if let objectStore {
            add("bucket", objectStore.location.description)
            add("endpoint", objectStore.endpointURL)
            add("keyTemplate", objectStore.keyTemplate.text)
        }
        add("homeserver", matrix?.homeserver)
        add("profile", answers.profile)
        return ContentDigest.sha256Hex(of: Array(text.utf8))
    }
}

extension AttachmentPipeline {
    /// Downloads the upload `receipt` describes and opens it with its key (or `key`), to a private
    /// scratch folder deleted before returning: the check ``ContentReuse/verify`` makes before trusting an
    /// index. Returns nil when the stored bytes are there and open; otherwise why not.
    package func storedUploadDoubt(_ receipt: UploadReceipt) async -> String? {
        var template = Array((PathText.temporaryDirectory + "/attache-verify-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { return "no scratch folder to check the stored upload in" }
        let directory = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            _ = try await Downloader(client: uploader.client).download(
                receipt: receipt, to: directory + "/check", key: configuration.seal.key,
                objectStore: configuration.objectStore)
            return nil
        } catch let error as AttacheError {
            if let status = error.rejection?.status, status == 404 || status == 410 {
                return "the stored upload is gone (HTTP \(status))"
            }
            return "the stored upload could not be checked: \(error.message) [\(error.code.rawValue)]"
        } catch {
            return "the stored upload could not be checked: \(error)"
        }
    }
}

/// What a content-addressed object (a key template with `{sha256}`) is named and sealed by, read from the
/// source in one pass: the source's SHA-256, which names the object, and seal material derived from the
/// content and the settings, so that every sender of the same file under the same settings seals it to the
/// same bytes and the store itself is the index. The material comes from a second digest (SHA-256 of a
/// label, the settings fingerprint and the content), which the object's name does not give away: only
/// someone holding the file derives its key.
struct ContentAddress: Sendable {
    /// The source's SHA-256, lower-case hex (the template's `{sha256}`).
    let sha256: String
    /// The seal material every sender of this content derives.
    let material: SealMaterial

    /// Reads `source` once. Blocking: call it on a ``AttacheCore/BlockingPool`` thread.
    static func read(_ source: any ByteSource, fingerprint: String, scheme: SealScheme) throws -> ContentAddress {
        let name = try SHA256Digest()
        let secret = try SHA256Digest()
        try Array(("attache-convergent-seal-v1\u{0}" + fingerprint + "\u{0}").utf8).withUnsafeBytes { try secret.update($0) }
        try ContentDigest.forEachChunk(of: source) { chunk in
            try name.update(chunk)
            try secret.update(chunk)
        }
        let sha256 = try name.finish().map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        let seed = SecureBytes(try secret.finish())
        let derived = try seed.withUnsafeBytes { raw in
            try HKDF.sha256(key: raw, salt: [], info: Array("attache convergent key and nonce seed".utf8), count: 64)
        }
        let keyBytes = derived.withUnsafeBytes { SecureBytes(UnsafeRawBufferPointer(rebasing: $0[..<32])) }
        let nonceSeed = derived.withUnsafeBytes { SecureBytes(UnsafeRawBufferPointer(rebasing: $0[32..<64])) }
        _ = scheme
        return ContentAddress(
            sha256: sha256, material: try SealMaterial(key: AttachmentKey(bytes: keyBytes), nonceSeed: nonceSeed))
    }

    /// A check value of the derived key that gives nothing of it away (a hash under a label of its own),
    /// stored as the object's `x-amz-meta-attache-key-check`: a `HEAD` tells by it that an object under
    /// the content's name was sealed with this key.
    var keyCheck: String {
        let text = material.key.bytes.withUnsafeBytes { raw in
            (try? SHA256Digest.hash(Array("attache key check\u{0}".utf8) + Array(raw))) ?? []
        }
        return String(text.prefix(16).map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined())
    }
}
