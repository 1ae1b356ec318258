import Attache
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The server's store on disk and the bookkeeping around it.
///
/// Layout under the store directory:
/// - `files/<fileId>`: the bytes of a file part, exactly as received;
/// - `files/<fileId>.json`: the receipt of the upload the part belongs to (the JSON answer);
/// - `keys/<sha256 of the Idempotency-Key>`: the primary file id of the upload done with that key;
/// - `tmp/`: parts being received, emptied at start.
///
/// Everything that decides whether a request may proceed (idempotency keys in flight or done,
/// attempt counts, statistics) lives in memory behind one mutex; the disk is what survives a
/// restart. Methods that touch the disk block and are called through `BlockingPool`.
final class UploadStore: Sendable {
    let root: String
    let filesDirectory: String
    let keysDirectory: String
    let temporaryDirectory: String
    private let state: Mutex<State>

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

    /// Opens (creating if needed) the store at `root`, empties `tmp/`, and reloads the keys and
    /// counts of a previous run.
    /// - Throws: ``AttacheError/Code/fileUnwritable`` when the directories cannot be created.
    init(root: String) throws {
        self.root = root
        filesDirectory = root + "/files"
        keysDirectory = root + "/keys"
        temporaryDirectory = root + "/tmp"
        let manager = FileManager.default
        for directory in [root, filesDirectory, keysDirectory, temporaryDirectory] {
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
        self.state = Mutex(state)
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

    /// Moves the spooled file parts into `files/`, writes the receipt next to each, records `key`
    /// last, and returns the receipt's JSON.
    ///
    /// The primary file is the part named `file`, else the first part with a filename.
    /// - Throws: ``AttacheError/Code/fileUnwritable``; nothing is left behind on failure.
    /// `checks` holds the verification of sealed parts, by spool path (see ``SealVerifier``).
    func commit(
        parts: [SpooledPart], key: String?, checks: [String: UploadReceipt.SealCheck] = [:]
    ) throws -> (receipt: [UInt8], fileId: String) {
        let fileParts = parts.filter(\.isFile)
        guard let primary = fileParts.first(where: { $0.name == "file" }) ?? fileParts.first else {
            throw AttacheError(.internalError, stage: .upload, "commit without a file part")
        }
        var ids: [String] = []
        var receiptParts: [UploadReceipt.Part] = []
        var primaryPart: UploadReceipt.Part?
        for part in fileParts {
            let id = randomIdentifier()
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

        var created: [String] = []
        do {
            for (part, id) in zip(fileParts, ids) {
                let destination = filesDirectory + "/" + id
                try moveFile(part.temporaryPath!, to: destination)
                created.append(destination)
                try writeAtomically(json, to: destination + ".json")
                created.append(destination + ".json")
            }
            if let key {
                // The key goes last: once it exists, a retry is answered from it.
                let hash = try SHA256Hasher.hex(of: key.utf8)
                try writeAtomically(Array(head.fileId.utf8), to: keysDirectory + "/" + hash)
            }
        } catch {
            for path in created { unlink(path) }
            throw error
        }
        state.withLock { state in
            state.statistics.files += fileParts.count
            state.statistics.uploads += 1
        }
        return (json, head.fileId)
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

    private func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        let temporary = temporaryDirectory + "/" + randomIdentifier() + ".tmp"
        let file = try SpoolFile(creating: temporary)
        do {
            try bytes.withUnsafeBytes { try file.write($0) }
            try file.close()
            try moveFile(temporary, to: path)
        } catch {
            unlink(temporary)
            throw error
        }
    }

    private static func failure(_ message: String, _ path: String) -> AttacheError {
        let code = errno
        return AttacheError(
            .fileUnwritable, stage: .upload, message, file: path,
            cause: NativeError(library: "posix", code: Int(code), text: String(cString: strerror(code))))
    }
}
