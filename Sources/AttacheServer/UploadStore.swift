import Attache
import Foundation
import Glibc

/// The server's store on disk and the bookkeeping around it.
///
/// Layout under the store directory:
/// - `files/<fileId>`: the bytes of a file part, exactly as received;
/// - `files/<fileId>.json`: the receipt of the upload the part belongs to (the JSON answer);
/// - `keys/<sha256 of the Idempotency-Key>`: the primary file id of the upload done with that key;
/// - `pending/<transaction>`: the file ids of an upload being committed (see ``commit(parts:key:checks:crash:)``);
/// - `salt`: 32 random bytes (hex) from which the file ids of uploads with a key are derived;
/// - `tmp/`: parts being received, emptied at start.
///
/// Commits are crash-consistent: after a SIGKILL or a power cut at any moment, a retry under the same
/// `Idempotency-Key` either replays the one stored copy, with the receipt first answered, or stores
/// the upload once. Everything that decides whether a request may proceed (idempotency keys in flight
/// or done, attempt counts, statistics) lives in memory behind one mutex; the disk is what survives a
/// restart. Methods that touch the disk block and are called through `BlockingPool`.
final class UploadStore: Sendable {
    let root: String
    let filesDirectory: String
    let keysDirectory: String
    let pendingDirectory: String
    let temporaryDirectory: String
    /// Mixed into the file ids derived from idempotency keys, so that knowing a key does not reveal
    /// where its file is.
    private let salt: [UInt8]
    private let state: LockedValue<State>

    /// What a request with an `Idempotency-Key` may do.
    enum Claim: Sendable {
        /// Go ahead; the key is now in flight until ``finish(key:fileId:)``.
        case claimed
        /// An upload with this key completed: answer its receipt again.
        case replay(fileId: String)
        /// An upload with this key is in progress right now.
        case inProgress
    }

    /// The `/stats` counters.
    struct Statistics: Codable, Sendable {
        var files = 0
        var uploads = 0
        var idempotencyKeys = 0
        var requests = 0
        var replays = 0
    }

    private struct State {
        var statistics = Statistics()
        /// SHA-256 hex of a key → primary file id, for completed uploads.
        var completedKeys: [String: String] = [:]
        var keysInFlight: Set<String> = []
        /// Attempts seen per key, for per-request fault schedules.
        var attempts: [String: Int] = [:]
    }

    /// Opens (creating if needed) the store at `root`, empties `tmp/`, finishes or undoes the commits a
    /// crash interrupted, and reloads the keys and counts of a previous run.
    /// - Throws: ``AttacheError/Code/fileUnwritable`` when the directories or the salt cannot be created.
    init(root: String) throws {
        self.root = root
        filesDirectory = root + "/files"
        keysDirectory = root + "/keys"
        pendingDirectory = root + "/pending"
        temporaryDirectory = root + "/tmp"
        let manager = FileManager.default
        for directory in [root, filesDirectory, keysDirectory, pendingDirectory, temporaryDirectory] {
            do {
                try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw AttacheError(
                    .fileUnwritable, stage: .configuration, "cannot create the store directory", file: directory,
                    cause: error)
            }
        }
        for name in (try? manager.contentsOfDirectory(atPath: temporaryDirectory)) ?? [] {
            unlink(temporaryDirectory + "/" + name)
        }
        salt = try Self.loadSalt(root: root, temporaryDirectory: temporaryDirectory)
        try Self.recover(
            pending: pendingDirectory, files: filesDirectory, keys: keysDirectory)
        var state = State()
        for name in (try? manager.contentsOfDirectory(atPath: keysDirectory)) ?? [] where !name.hasPrefix(".") {
            if let data = manager.contents(atPath: keysDirectory + "/" + name),
                let fileId = String(data: data, encoding: .utf8), !fileId.isEmpty
            {
                state.completedKeys[name] = fileId
            }
        }
        state.statistics.idempotencyKeys = state.completedKeys.count
        for name in (try? manager.contentsOfDirectory(atPath: filesDirectory)) ?? [] where !name.hasPrefix(".") {
            if name.hasSuffix(".json") {
                let fileId = String(name.dropLast(5))
                if let data = manager.contents(atPath: filesDirectory + "/" + name),
                    let receipt = try? JSONDecoder().decode(UploadReceipt.self, from: data),
                    receipt.data.fileId == fileId
                {
                    state.statistics.uploads += 1
                }
            } else {
                state.statistics.files += 1
            }
        }
        self.state = LockedValue(state)
    }

    /// Reads the store's salt, or makes one when the store is new (or predates it).
    private static func loadSalt(root: String, temporaryDirectory: String) throws -> [UInt8] {
        let path = root + "/salt"
        if let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8),
            text.utf8.count == 64, let bytes = bytes(fromHex: text)
        {
            return bytes
        }
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try writeDurably(Array(hexString(bytes).utf8), to: path, temporaryDirectory: temporaryDirectory)
        return bytes
    }

    private static func bytes(fromHex text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var high: UInt8?
        for character in text.utf8 {
            let value: UInt8
            switch character {
            case 48...57: value = character - 48
            case 97...102: value = character - 87
            default: return nil
            }
            if let first = high {
                out.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return high == nil ? out : nil
    }

    /// Finishes or undoes the commits a crash interrupted.
    ///
    /// A record in `pending/` names the files an upload was storing. When its upload's key record
    /// exists the upload committed and only the record is left to delete; otherwise the upload never
    /// committed (nobody got a receipt for it) and its files are deleted, so that a retry stores it once.
    private static func recover(pending: String, files: String, keys: String) throws {
        let manager = FileManager.default
        let records = ((try? manager.contentsOfDirectory(atPath: pending)) ?? []).filter { !$0.hasPrefix(".") }
        guard !records.isEmpty else { return }
        for transaction in records {
            let path = pending + "/" + transaction
            if access(keys + "/" + transaction, F_OK) != 0 {
                let text = manager.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } ?? ""
                for id in text.split(separator: "\n").map(String.init) where isValidFileId(id) {
                    unlink(files + "/" + id + ".json")
                    unlink(files + "/" + id)
                }
            }
            unlink(path)
        }
        try syncDirectory(files)
        try syncDirectory(pending)
    }

    // MARK: Bookkeeping (non-blocking)

    /// Counts a `POST /upload` and returns its number in this run and its attempt number for its
    /// key (1 without a key).
    func countRequest(key: String?) -> (number: Int, attempt: Int) {
        state.withLock { state in
            state.statistics.requests += 1
            var attempt = 1
            if let key {
                attempt = (state.attempts[key] ?? 0) + 1
                state.attempts[key] = attempt
            }
            return (state.statistics.requests, attempt)
        }
    }

    /// Decides what a request with `key` may do, marking the key in flight when it may proceed.
    func claim(key: String) throws -> Claim {
        let hash = try SHA256Hasher.hex(of: key.utf8)
        return state.withLock { state in
            if let fileId = state.completedKeys[hash] {
                state.statistics.replays += 1
                return .replay(fileId: fileId)
            }
            if state.keysInFlight.contains(hash) { return .inProgress }
            state.keysInFlight.insert(hash)
            return .claimed
        }
    }

    /// Ends the flight of `key`: recorded as done when `fileId` is given, forgotten otherwise.
    func finish(key: String, fileId: String?) {
        guard let hash = try? SHA256Hasher.hex(of: key.utf8) else { return }
        state.withLock { state in
            state.keysInFlight.remove(hash)
            if let fileId, state.completedKeys[hash] == nil {
                state.completedKeys[hash] = fileId
                state.statistics.idempotencyKeys = state.completedKeys.count
            }
        }
    }

    /// A snapshot of the counters.
    var statistics: Statistics { state.withLock { $0.statistics } }

    // MARK: Disk (blocking)

    /// Stores the spooled file parts in `files/` with a receipt next to each, records `key`, and returns
    /// the receipt's JSON.
    ///
    /// The primary file is the part named `file`, else the first part with a filename.
    ///
    /// The commit protocol, each step durable (written to a temporary file, `fsync`ed, renamed, the
    /// directory `fsync`ed) before the next starts:
    /// 1. `pending/<transaction>` lists the file ids about to be stored. For an upload with a key the
    ///    transaction is the key's hash and the ids are derived from it and the store's salt, so every
    ///    attempt under one key writes the same names;
    /// 2. each part is renamed into `files/<id>` and its receipt written to `files/<id>.json`;
    /// 3. with a key, `keys/<hash>` is written: **the commit point**. From then on a retry is answered
    ///    with the receipt of step 2;
    /// 4. the pending record is deleted, which is the commit point of an upload without a key.
    ///
    /// A crash before the commit point leaves a pending record, and the next start deletes the files
    /// it lists (``init(root:)``); a retry that comes first overwrites them, since it writes the same
    /// names. Either way one copy remains.
    /// - Parameter crash: a fault-injection point at which the process kills itself (`--fault crash`).
    /// - Throws: ``AttacheError/Code/fileUnwritable``; nothing is left behind on failure.
    /// `checks` holds the verification of sealed parts, by spool path (see ``SealVerifier``).
    func commit(
        parts: [SpooledPart], key: String?, checks: [String: UploadReceipt.SealCheck] = [:],
        crash: CrashPoint? = nil
    ) throws -> (receipt: [UInt8], fileId: String) {
        let fileParts = parts.filter(\.isFile)
        guard let primary = fileParts.first(where: { $0.name == "file" }) ?? fileParts.first else {
            throw AttacheError(.internalError, stage: .upload, "commit without a file part")
        }
        let keyHash = try key.map { try SHA256Hasher.hex(of: $0.utf8) }
        let transaction = keyHash ?? randomIdentifier()
        var ids: [String] = []
        var receiptParts: [UploadReceipt.Part] = []
        var primaryPart: UploadReceipt.Part?
        for (index, part) in fileParts.enumerated() {
            let id = try keyHash.map { try fileId(forKeyHash: $0, part: index) } ?? randomIdentifier()
            ids.append(id)
            let entry = UploadReceipt.Part(
                name: part.name, filename: part.filename ?? "", contentType: part.contentType ?? "application/octet-stream",
                size: part.size, sha256: part.sha256 ?? "", fileId: id,
                sealed: part.temporaryPath.flatMap { checks[$0] })
            receiptParts.append(entry)
            if part.temporaryPath == primary.temporaryPath { primaryPart = entry }
        }
        var fields: [String: UploadReceipt.FieldValue] = [:]
        for part in parts where !part.isFile {
            let value = part.value ?? ""
            switch fields[part.name] {
            case nil: fields[part.name] = part.name.hasSuffix("[]") ? .multiple([value]) : .single(value)
            case .single(let first): fields[part.name] = .multiple([first, value])
            case .multiple(let values): fields[part.name] = .multiple(values + [value])
            }
        }
        let head = primaryPart!
        let receipt = UploadReceipt(
            data: .init(
                fileId: head.fileId, url: "/files/\(head.fileId)", size: head.size, sha256: head.sha256,
                filename: head.filename, contentType: head.contentType, fields: fields, parts: receiptParts,
                sealed: head.sealed))
        let json: [UInt8]
        do {
            json = try receipt.encoded()
        } catch {
            throw AttacheError(.internalError, stage: .upload, "cannot encode the receipt")
        }

        let pendingRecord = pendingDirectory + "/" + transaction
        var created: [String] = []
        do {
            try writeDurably(Array(ids.joined(separator: "\n").utf8), to: pendingRecord)
            try Self.syncDirectory(pendingDirectory)
            for (part, id) in zip(fileParts, ids) {
                let destination = filesDirectory + "/" + id
                try Self.syncFile(part.temporaryPath!)
                created.append(destination)
                try moveFile(part.temporaryPath!, to: destination)
                if crash == .afterPart { Self.crashNow() }
                created.append(destination + ".json")
                try writeDurably(json, to: destination + ".json")
            }
            try Self.syncDirectory(filesDirectory)
            if crash == .afterFiles { Self.crashNow() }
            if let keyHash {
                // The commit point: once this record exists, a retry is answered from it.
                let record = keysDirectory + "/" + keyHash
                created.append(record)
                try writeDurably(Array(head.fileId.utf8), to: record)
                try Self.syncDirectory(keysDirectory)
                if crash == .afterKey { Self.crashNow() }
                unlink(pendingRecord)
            } else {
                // Without a key, the record's removal is the commit point: it must be durable before
                // the answer leaves.
                guard unlink(pendingRecord) == 0 else {
                    throw Self.failure("cannot finish a commit", pendingRecord)
                }
                try Self.syncDirectory(pendingDirectory)
            }
        } catch {
            for path in created.reversed() { unlink(path) }
            unlink(pendingRecord)
            throw error
        }
        state.withLock { state in
            state.statistics.files += fileParts.count
            state.statistics.uploads += 1
        }
        return (json, head.fileId)
    }

    /// Ends the process the way SIGKILL would: no cleanup, no flush, no answer.
    private static func crashNow() -> Never {
        kill(getpid(), SIGKILL)
        _exit(137)
    }

    /// The id of the `part`th file part of the upload whose key hashes to `keyHash`: 26 characters of
    /// base32 from SHA-256(salt ‖ key hash ‖ part number).
    private func fileId(forKeyHash keyHash: String, part: Int) throws -> String {
        let hasher = try SHA256Hasher()
        let input = salt + Array("\(keyHash)/\(part)".utf8)
        try input.withUnsafeBytes { try hasher.update($0) }
        let digest = try hasher.finalizeHex()
        return Self.base32Identifier(Self.bytes(fromHex: digest) ?? [])
    }

    /// The first 130 bits of `bytes` as 26 characters of lowercase RFC 4648 base32, the shape of every
    /// file id (``isValidFileId(_:)``).
    private static func base32Identifier(_ bytes: [UInt8]) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes where out.count < 26 {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5, out.count < 26 {
                bits -= 5
                out.append(alphabet[Int(buffer >> UInt32(bits) & 31)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The stored receipt of the upload `fileId` belongs to, or `nil` when there is none.
    func receiptBytes(fileId: String) -> [UInt8]? {
        receiptData(fileId: fileId).map { Array($0) }
    }

    /// The stored receipt of `fileId` as read from disk, or `nil`.
    func receiptData(fileId: String) -> Data? {
        guard Self.isValidFileId(fileId) else { return nil }
        return FileManager.default.contents(atPath: filesDirectory + "/" + fileId + ".json")
    }

    /// Whether `text` has the shape of a file id, so it is safe to use as a path component.
    static func isValidFileId(_ text: String) -> Bool {
        text.utf8.count == 26 && text.utf8.allSatisfy { (97...122).contains($0) || (50...55).contains($0) }
    }

    private func moveFile(_ source: String, to destination: String) throws {
        guard rename(source, destination) == 0 else { throw Self.failure("cannot move an upload into the store", destination) }
    }

    /// Writes `bytes` to `path` through a temporary file that is `fsync`ed before it is renamed into
    /// place, so that `path` holds either nothing or all of `bytes`, also after a power cut. The caller
    /// `fsync`s the directory.
    private func writeDurably(_ bytes: [UInt8], to path: String) throws {
        try Self.writeDurably(bytes, to: path, temporaryDirectory: temporaryDirectory)
    }

    private static func writeDurably(_ bytes: [UInt8], to path: String, temporaryDirectory: String) throws {
        let temporary = temporaryDirectory + "/" + randomIdentifier() + ".tmp"
        let file = try SpoolFile(creating: temporary)
        do {
            try bytes.withUnsafeBytes { try file.write($0) }
            try file.close()
            try syncFile(temporary)
            guard rename(temporary, path) == 0 else { throw failure("cannot move a record into the store", path) }
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// `fsync`s a closed file by path.
    private static func syncFile(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure("cannot open a file to sync it", path) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw failure("cannot sync a file", path) }
    }

    /// `fsync`s a directory, which makes the renames and deletions in it durable.
    private static func syncDirectory(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure("cannot open a store directory", path) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw failure("cannot sync a store directory", path) }
    }

    private static func failure(_ message: String, _ path: String) -> AttacheError {
        AttacheError.system(message, .fileUnwritable, stage: .upload, file: path)
    }
}
