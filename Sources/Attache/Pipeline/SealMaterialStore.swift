import FoundationEssentials
import Glibc

/// Seal material kept on disk per idempotency key, so that an upload sent again under the same key (by
/// a later process, after a crash or a lost answer) seals to the same bytes.
///
/// One file per key in a private folder (0700; files 0600, whatever the umask), named by the SHA-256 of
/// the scope (the upload URL, say) and the key, never by the key itself. A file is written, synced and
/// linked into place before the material is returned, so it is durable before the first byte of the
/// upload leaves; two processes asking for the same key at once get the same material. `attache upload
/// --idempotency-key` keeps its material here. Files hold keys: ``prune(olderThan:)`` removes old ones.
///
/// ```swift
/// let store = try SealMaterialStore(directory: SealMaterialStore.defaultDirectory)
/// let (material, existed) = try store.material(forKey: "order-42", scope: url, scheme: .streamGCM)
/// let attachment = Attachment(path: "photo.jpg", idempotencyKey: "order-42", sealMaterial: material)
/// var options = SendOptions()
/// options.journal = store.journal(forKey: "order-42", scope: url, continuesEarlierSend: existed)
/// ```
package struct SealMaterialStore: Sendable {
    /// The folder holding the material files.
    package let directory: String

    /// `$XDG_STATE_HOME/attache/seal-material`, or `~/.local/state/attache/seal-material`.
    package static var defaultDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return state + "/attache/seal-material"
        }
        let home = environment["HOME"] ?? PathText.homeDirectory
        return home + "/.local/state/attache/seal-material"
    }

    /// Opens (creating, 0700) the folder.
    /// - Throws: ``AttacheCore/AttacheError`` `.fileUnwritable` when it cannot be created or made private.
    package init(directory: String) throws {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw AttacheError(
                .fileUnwritable, stage: .seal, "cannot create the seal material folder", file: directory)
        }
        guard chmod(directory, 0o700) == 0 else {
            throw AttacheError(
                .fileUnwritable, stage: .seal, "cannot make the seal material folder private", file: directory,
                cause: NativeError.posix())
        }
    }

    /// The material kept for `key` in `scope`, made (for `scheme`) and synced to disk first when there
    /// is none; `existed` tells whether an earlier call had made it.
    /// - Throws: ``AttacheCore/AttacheError`` `.fileUnwritable` or `.invalidKey` (a damaged file).
    package func material(
        forKey key: String, scope: String, scheme: SealScheme
    ) throws -> (material: SealMaterial, existed: Bool) {
        let path = directory + "/" + Self.fileName(key: key, scope: scope)
        if let existing = try read(path) { return (existing, true) }
        let material = SealMaterial.random(for: scheme)
        let temporary = path + ".\(getpid()).tmp"
        try write(material.encoded + "\n", to: temporary)
        defer { unlink(temporary) }
        // link(2) never replaces: when another process got there first, its material wins.
        if link(temporary, path) != 0 {
            let code = errno
            if code == EEXIST, let existing = try read(path) { return (existing, true) }
            throw AttacheError.system("cannot store seal material", errno: code, .fileUnwritable, stage: .seal, file: path)
        }
        syncDirectory()
        return (material, false)
    }

    /// Forgets the material of `key` in `scope` (after its receipt is safely kept elsewhere), and the
    /// resumable or multipart upload recorded with it.
    package func remove(key: String, scope: String) {
        unlink(directory + "/" + Self.fileName(key: key, scope: scope))
        unlink(directory + "/" + Self.fileName(key: key, scope: scope) + ".resumable")
        unlink(directory + "/" + Self.fileName(key: key, scope: scope) + ".multipart")
    }

    /// The multipart upload to an object store recorded for `key` in `scope`
    /// (``recordMultipart(_:forKey:scope:)``), if any.
    package func multipartRecord(forKey key: String, scope: String) -> MultipartRecord? {
        let path = directory + "/" + Self.fileName(key: key, scope: scope) + ".multipart"
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return MultipartRecord(json: String(decoding: data, as: UTF8.self))
    }

    /// Records the multipart upload under `key` in `scope` (its upload id and the parts the store
    /// confirmed), or forgets it (nil: completed or aborted), so that `attache upload --idempotency-key`
    /// run again continues it. Written to a temporary file, synced and renamed into place (0600).
    /// - Throws: ``AttacheCore/AttacheError`` `.fileUnwritable`.
    package func recordMultipart(_ record: MultipartRecord?, forKey key: String, scope: String) throws {
        let path = directory + "/" + Self.fileName(key: key, scope: scope) + ".multipart"
        guard let record else {
            unlink(path)
            return
        }
        let temporary = path + ".\(getpid()).tmp"
        try write(record.json, to: temporary)
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw AttacheError(
                .fileUnwritable, stage: .upload, "cannot record the multipart upload", file: path, cause: NativeError.posix())
        }
    }

    /// The resumable upload recorded for `key` in `scope` (``recordResumable(_:forKey:scope:)``), if any.
    package func resumableState(forKey key: String, scope: String) -> ResumableState? {
        let path = directory + "/" + Self.fileName(key: key, scope: scope) + ".resumable"
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? JSONDecoder().decode(ResumableState.self, from: data)
    }

    /// Records where the resumable upload under `key` in `scope` stands (its resource and the last
    /// offset the server confirmed), or forgets it (nil), so that `attache upload --idempotency-key` run
    /// again continues it. Written to a temporary file, synced and renamed into place (0600).
    /// - Throws: ``AttacheCore/AttacheError`` `.fileUnwritable`.
    package func recordResumable(_ state: ResumableState?, forKey key: String, scope: String) throws {
        let path = directory + "/" + Self.fileName(key: key, scope: scope) + ".resumable"
        guard let state else {
            unlink(path)
            return
        }
        let bytes = (try? JSONEncoder().encode(state)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        let temporary = path + ".\(getpid()).tmp"
        try write(bytes, to: temporary)
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw AttacheError(
                .fileUnwritable, stage: .upload, "cannot record the resumable upload", file: path, cause: NativeError.posix())
        }
    }

    /// Removes material files not changed for `age`; returns how many.
    @discardableResult
    package func prune(olderThan age: Duration) -> Int {
        let limit = Date().addingTimeInterval(-age.seconds)
        var removed = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            let path = directory + "/" + name
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                let modified = attributes[.modificationDate] as? Date, modified < limit
            else { continue }
            if unlink(path) == 0 { removed += 1 }
        }
        return removed
    }

    static func fileName(key: String, scope: String) -> String {
        ContentDigest.sha256Hex(of: Array((scope + "\u{0}" + key).utf8))
    }

    private func read(_ path: String) throws -> SealMaterial? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingWhiteSpace
        do {
            return try SealMaterial(encoded: text)
        } catch {
            throw AttacheError(.invalidKey, stage: .seal, "the stored seal material is damaged", file: path)
        }
    }

    private func write(_ text: String, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw AttacheError.system("cannot store seal material", .fileUnwritable, stage: .seal, file: path)
        }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fchmod(fd, 0o600) == 0, fsync(fd) == 0 else {
            throw AttacheError.system("cannot store seal material", .fileUnwritable, stage: .seal, file: path)
        }
    }

    private func syncDirectory() {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            _ = fsync(fd)
            close(fd)
        }
    }
}

extension SealMaterialStore {
    /// The journal of the send under `key` in `scope`: its resumable upload and its multipart upload are
    /// kept beside its seal material, so that the same send made again (`attache upload
    /// --idempotency-key`, run twice) continues where the first one stopped.
    ///
    /// - Parameter continuesEarlierSend: whether the material existed already (an earlier process may
    ///   have sent the file): only then is an earlier upload's state read.
    package func journal(forKey key: String, scope: String, continuesEarlierSend: Bool) -> some SendJournal {
        KeyJournal(store: self, key: key, scope: scope, continuesEarlierSend: continuesEarlierSend)
    }
}

/// A send's state in a ``SealMaterialStore``, beside its seal material.
private struct KeyJournal: SendJournal {
    let store: SealMaterialStore
    let key: String
    let scope: String
    let continuesEarlierSend: Bool

    func resumableState() async -> ResumableState? {
        continuesEarlierSend ? store.resumableState(forKey: key, scope: scope) : nil
    }

    func record(_ state: ResumableState?) async {
        try? store.recordResumable(state, forKey: key, scope: scope)
    }

    func multipartRecord() async -> MultipartRecord? {
        continuesEarlierSend ? store.multipartRecord(forKey: key, scope: scope) : nil
    }

    func record(_ record: MultipartRecord?) async {
        try? store.recordMultipart(record, forKey: key, scope: scope)
    }
}
