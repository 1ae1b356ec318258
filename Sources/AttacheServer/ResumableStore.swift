import Attache
import Foundation
internal import NIOCore
import Glibc

/// The upload resources of resumable uploads (tus 1.0 and the IETF draft), on disk under
/// `resumable/<id>/`: `data` (the bytes received so far, appended in order) and `info.json` (protocol,
/// declared length, metadata, idempotency key, expiry).
///
/// The offset of an upload is the length of its `data` file: bytes received before a connection broke
/// are kept, so the client continues from there. Nothing is held in memory but a running SHA-256 of
/// `data` (so completing a large upload does not read it again) and a flag saying a request is writing
/// to it. When the upload completes, `data` is renamed into the store through ``UploadStore/commit``,
/// which gives it the same receipt as a multipart upload.
final class ResumableStore: Sendable {
    /// Which protocol created an upload; its resource answers that protocol only.
    enum ResumableProtocol: String, Codable, Sendable {
        case tus
        case ietf
    }

    /// What `info.json` holds.
    struct Info: Codable, Sendable {
        var protocolName: ResumableProtocol
        /// The declared total length; nil while deferred (tus `Upload-Defer-Length`, IETF before the
        /// request with `Upload-Complete: ?1`).
        var length: Int64?
        /// `Upload-Metadata` pairs in the order received (values decoded).
        var metadata: [[String]]
        var idempotencyKey: String?
        /// Seconds since 1970 after which the upload is gone.
        var expires: Double
        /// Set once the upload completed: the stored file. The resource then stays (until it expires) so
        /// that a client whose last answer was lost learns from `HEAD` that it is complete.
        var fileId: String? = nil
    }

    /// One upload as the controller sees it.
    struct Upload: Sendable {
        var id: String
        var info: Info
        var offset: Int64
        var dataPath: String
    }

    /// Why an upload cannot be used.
    enum Lookup: Sendable {
        case found(Upload)
        case missing
        case expired
    }

    let directory: String
    let store: UploadStore
    let lifetime: Duration

    /// Per upload in memory: the running hash of `data` (nil when unknown, e.g. after a restart or a
    /// rolled-back append) and whether a request is appending now.
    fileprivate final class Live: @unchecked Sendable {
        // Only touched under `ResumableStore.live`'s lock or by the one request holding `busy`.
        var hasher: SHA256Hasher?
        var hashedCount: Int64 = 0
        var busy = false
    }

    private let live = LockedValue<[String: Live]>([:])

    /// Opens (creating) `resumable/` in the store.
    /// - Throws: ``AttacheError/Code/fileUnwritable``.
    init(store: UploadStore, lifetime: Duration) throws {
        self.store = store
        self.lifetime = lifetime
        directory = store.root + "/resumable"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw AttacheError(
                .fileUnwritable, stage: .configuration, "cannot create the resumable upload directory",
                file: directory, cause: error)
        }
        // Unfinished uploads survive a restart (their clients resume them); expired ones go now
        // (``lookup(_:)`` deletes an upload it finds expired).
        for id in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            _ = lookup(id)
        }
    }

    /// Creates an upload resource with an empty `data` file.
    func create(_ info: Info) throws -> Upload {
        let id = randomIdentifier()
        let folder = directory + "/" + id
        guard mkdir(folder, 0o700) == 0 else { throw Self.failure("cannot create an upload resource", folder) }
        let dataPath = folder + "/data"
        let fd = open(dataPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Self.failure("cannot create an upload resource", dataPath) }
        close(fd)
        try writeInfo(info, id: id)
        let state = Live()
        state.hasher = try SHA256Hasher()
        live.withLock { $0[id] = state }
        return Upload(id: id, info: info, offset: 0, dataPath: dataPath)
    }

    /// The upload `id`, with its offset read from the length of its data; expired ones are deleted.
    func lookup(_ id: String) -> Lookup {
        guard UploadStore.isValidFileId(id) else { return .missing }
        let folder = directory + "/" + id
        guard let data = FileManager.default.contents(atPath: folder + "/info.json"),
            let info = try? JSONDecoder().decode(Info.self, from: data)
        else { return .missing }
        if info.expires < Date().timeIntervalSince1970 {
            remove(id)
            return .expired
        }
        if info.fileId != nil {
            return .found(Upload(id: id, info: info, offset: info.length ?? 0, dataPath: folder + "/data"))
        }
        var status = stat()
        guard stat(folder + "/data", &status) == 0 else { return .missing }
        return .found(Upload(id: id, info: info, offset: Int64(status.st_size), dataPath: folder + "/data"))
    }

    /// Rewrites an upload's info (a length declared late).
    func writeInfo(_ info: Info, id: String) throws {
        let path = directory + "/" + id + "/info.json"
        let temporary = path + ".tmp"
        let bytes = try JSONEncoder().encode(info)
        guard FileManager.default.createFile(atPath: temporary, contents: bytes), rename(temporary, path) == 0 else {
            throw Self.failure("cannot write an upload's info", path)
        }
    }

    /// Marks `id` as being appended to; false when another request is appending.
    func begin(_ id: String) -> Bool {
        live.withLock { table in
            let state = table[id] ?? Live()
            table[id] = state
            if state.busy { return false }
            state.busy = true
            return true
        }
    }

    /// Ends what ``begin(_:)`` started.
    func end(_ id: String) {
        live.withLock { table in table[id]?.busy = false }
    }

    /// An appender for `upload` at its current offset. Call between ``begin(_:)`` and ``end(_:)``.
    func appender(for upload: Upload) throws -> Appender {
        let state = live.withLock { table in table[upload.id] ?? Live() }
        if state.hasher == nil || state.hashedCount != upload.offset {
            state.hasher = nil
        }
        let fd = open(upload.dataPath, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard fd >= 0 else { throw Self.failure("cannot open an upload's data", upload.dataPath) }
        return Appender(descriptor: fd, start: upload.offset, state: state, path: upload.dataPath)
    }

    /// Appends request bytes to `data`, hashing them as they go; blocking (run on the pool).
    final class Appender: @unchecked Sendable {
        // Used by one request at a time (the one holding the upload's `busy` flag), from pool jobs
        // that run one after another.
        private let descriptor: Int32
        let start: Int64
        private(set) var written: Int64 = 0
        private let state: Live
        private let path: String

        fileprivate init(descriptor: Int32, start: Int64, state: Live, path: String) {
            self.descriptor = descriptor
            self.start = start
            self.state = state
            self.path = path
        }

        deinit { close(descriptor) }

        /// Writes `buffers` at the end of the data.
        func append(_ buffers: [ByteBuffer]) throws {
            for buffer in buffers {
                try buffer.withUnsafeReadableBytes { bytes in
                    if let code = FileDescriptor.writeAll(descriptor, bytes) {
                        throw AttacheError.system(
                            "cannot append to an upload", errno: code, .fileUnwritable, stage: .upload, file: path)
                    }
                    try state.hasher?.update(bytes)
                    state.hashedCount += Int64(bytes.count)
                    written += Int64(bytes.count)
                }
            }
        }

        /// Makes the appended bytes durable before their offset is acknowledged.
        func sync() throws {
            guard fdatasync(descriptor) == 0 else { throw ResumableStore.failure("cannot sync an upload", path) }
        }

        /// Drops everything this appender wrote (a chunk whose checksum did not match).
        func rollBack() throws {
            guard ftruncate(descriptor, off_t(start)) == 0 else {
                throw ResumableStore.failure("cannot roll back an upload", path)
            }
            written = 0
            state.hasher = nil
        }
    }

    /// Commits a complete upload into the store: the same commit and receipt as a multipart upload,
    /// the metadata as its form fields. Blocking.
    func complete(
        _ upload: Upload, verifier: SealVerifier?
    ) throws -> (receipt: [UInt8], fileId: String, replayed: Bool) {
        if let key = upload.info.idempotencyKey {
            switch try store.claim(key: key) {
            case .replay(let fileId):
                markCompleted(upload, fileId: fileId)
                guard let receipt = store.receiptBytes(fileId: fileId) else {
                    throw AttacheError(.internalError, stage: .upload, "the receipt of a completed upload is missing")
                }
                return (receipt, fileId, true)
            case .inProgress:
                throw AttacheError(.internalError, stage: .upload, "an upload with this key is in progress", isRetryable: true)
            case .claimed:
                break
            }
        }
        var committed: String?
        defer { if let key = upload.info.idempotencyKey { store.finish(key: key, fileId: committed) } }
        let state = live.withLock { $0[upload.id] }
        let sha256: String
        if let state, let hasher = state.hasher, state.hashedCount == upload.offset {
            sha256 = try hasher.finalizeHex()
            state.hasher = nil
        } else {
            sha256 = try SHA256Hasher.hexAndCount(of: try FileSource(path: upload.dataPath).makeReader()).hex
        }
        var filename = "upload"
        var contentType = "application/octet-stream"
        var fields: [SpooledPart] = []
        for pair in upload.info.metadata where pair.count == 2 {
            switch pair[0] {
            case "filename", "name": filename = pair[1]
            case "filetype", "type", "contentType": contentType = pair[1]
            default: fields.append(SpooledPart(name: pair[0], size: Int64(pair[1].utf8.count), value: pair[1]))
            }
        }
        let file = SpooledPart(
            name: "file", filename: filename, contentType: contentType, size: upload.offset, sha256: sha256,
            temporaryPath: upload.dataPath)
        let parts = fields + [file]
        let checks = try verifier?.check(parts) ?? [:]
        let result = try store.commit(parts: parts, key: upload.info.idempotencyKey, checks: checks)
        committed = result.fileId
        markCompleted(upload, fileId: result.fileId)
        return (result.receipt, result.fileId, false)
    }

    /// Keeps the resource as a record of the completed upload (its data is in the store now).
    private func markCompleted(_ upload: Upload, fileId: String) {
        var info = upload.info
        info.fileId = fileId
        info.length = upload.offset
        unlink(upload.dataPath)
        try? writeInfo(info, id: upload.id)
        live.withLock { _ = $0.removeValue(forKey: upload.id) }
    }

    /// Deletes an upload resource (termination, expiry, completion).
    func remove(_ id: String) {
        guard UploadStore.isValidFileId(id) else { return }
        let folder = directory + "/" + id
        unlink(folder + "/data")
        unlink(folder + "/info.json")
        unlink(folder + "/info.json.tmp")
        rmdir(folder)
        live.withLock { _ = $0.removeValue(forKey: id) }
    }

    /// The expiry time for an upload created now.
    func expiryFromNow() -> Double {
        Date().timeIntervalSince1970 + lifetime.seconds
    }

    fileprivate static func failure(_ message: String, _ path: String) -> AttacheError {
        AttacheError.system(message, .fileUnwritable, stage: .upload, file: path)
    }
}
