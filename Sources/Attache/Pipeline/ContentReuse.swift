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

    /// The mode's name, as `--dedup` takes it.
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

/// What identifies stored content for ``ContentIndex``: the source's SHA-256 and the pipeline's
/// ``PipelineConfiguration/settingsFingerprint`` (two sends with the same key give the same upload but for
/// the seal key).
public struct ContentKey: Sendable, Hashable, CustomStringConvertible {
    /// The source's SHA-256, lower-case hex.
    public var sha256: String
    /// The settings' fingerprint (with the declared kind, when one was given).
    public var settings: String

    /// Creates a key.
    public init(sha256: String, settings: String) {
        self.sha256 = sha256
        self.settings = settings
    }

    /// `SHA256/SETTINGS`: one string for a database column.
    public var description: String { sha256 + "/" + settings }
}

/// A backend's index of stored uploads by content, for ``PipelineConfiguration/contentIndex``: a table
/// of the backend's own, keyed by ``ContentKey/description``. The pipeline asks it before a send and
/// tells it what a send stored; the sends of one pipeline with the same content take turns, so that one
/// process never sends one content twice at once. Across processes, make ``record(_:for:)`` keep the first
/// receipt (a unique key) and have the others read it. ``InMemoryContentIndex`` is one for a single
/// process.
public protocol ContentIndex: Sendable {
    /// The receipt of a stored upload of `key`'s content, or nil.
    func storedUpload(for key: ContentKey) async throws -> UploadReceipt?
    /// Records `receipt` (a send that just stored the content) as the stored upload of `key`.
    func record(_ receipt: UploadReceipt, for key: ContentKey) async throws
    /// Takes `receipt` out of the index: it failed a check (its bytes are gone, or its key does not open
    /// them), and a new send of the content follows.
    func forget(_ receipt: UploadReceipt, for key: ContentKey) async throws
}

/// A ``ContentIndex`` in memory, for one process (tests, a short-lived tool, a cache in front of a
/// database).
public actor InMemoryContentIndex: ContentIndex {
    private var stored: [ContentKey: UploadReceipt] = [:]

    /// An empty index.
    public init() {}

    /// The receipt recorded for `key`, if any.
    public func storedUpload(for key: ContentKey) -> UploadReceipt? { stored[key] }

    /// Records `receipt` for `key`, unless one is recorded already (the first stays).
    public func record(_ receipt: UploadReceipt, for key: ContentKey) {
        if stored[key] == nil { stored[key] = receipt }
    }

    /// Removes the receipt of `key` when it is `receipt` (the same idempotency key).
    public func forget(_ receipt: UploadReceipt, for key: ContentKey) {
        if stored[key]?.idempotencyKey == receipt.idempotencyKey { stored[key] = nil }
    }
}

extension AttachmentPipeline {
    /// `send` with ``PipelineConfiguration/contentIndex``: the stored upload of the same content when the
    /// index has one that passes the checks (``PipelineConfiguration/contentReuse``), else `send` and the
    /// index told. A stream attachment is sent as it is (its bytes are read once, by the send).
    func reusing(
        _ attachment: Attachment, index: any ContentIndex, _ send: () async throws -> UploadReceipt
    ) async throws -> UploadReceipt {
        let start = ContinuousClock.now
        let source: any ByteSource
        switch attachment.content {
        case .file: source = try FileSource(path: attachment.path)
        case .bytes(let bytes): source = DataSource(bytes)
        case .stream: return try await send()
        }
        let sha256 = try await BlockingPool.shared.run { try ContentDigest.sha256Hex(of: source) }
        let key = ContentKey(
            sha256: sha256,
            settings: configuration.settingsFingerprint + (attachment.declaredKind.map { "+" + $0.rawValue } ?? ""))
        return try await contentTurns.withTurn(key.description) {
            while let stored = try await index.storedUpload(for: key) {
                var doubt = stored.reuseDoubt(
                    sha256: sha256, byteCount: source.byteCount, fixedKey: configuration.seal.key != nil)
                if doubt == nil, configuration.contentReuse == .verify { doubt = await storedUploadDoubt(stored) }
                guard let doubt else {
                    return stored.reused(forPath: attachment.path, sha256: sha256, seconds: (ContinuousClock.now - start).seconds)
                }
                logger.warning(
                    "not reusing the stored upload; sending the file",
                    metadata: ["file": "\(attachment.path)", "reason": "\(doubt)", "upload": "\(stored.idempotencyKey)"])
                try await index.forget(stored, for: key)
            }
            let receipt = try await send()
            try await index.record(receipt, for: key)
            return receipt
        }
    }
}

/// Turns by content: a send holds its content's turn from the index lookup to the index's record, the
/// others with the same content wait in order (holding no thread). One per pipeline, and one per batch run.
package final class ContentTurns: Sendable {
    private struct State {
        var waiting: [String: [CheckedContinuation<Void, Never>]] = [:]
    }

    private let state = LockedValue(State())

    package init() {}

    /// Runs `body` while holding `key`'s turn.
    package func withTurn<T: Sendable>(_ key: String, _ body: () async throws -> T) async rethrows -> T {
        await acquire(key)
        defer { release(key) }
        return try await body()
    }

    private func acquire(_ key: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.waiting[key] == nil {
                    state.waiting[key] = []
                    return true
                }
                state.waiting[key]!.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func release(_ key: String) {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard var queue = state.waiting[key], !queue.isEmpty else {
                state.waiting[key] = nil
                return nil
            }
            let next = queue.removeFirst()
            state.waiting[key] = queue
            return next
        }
        next?.resume()
    }
}
