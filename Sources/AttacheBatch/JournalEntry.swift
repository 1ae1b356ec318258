package import Attache
package import Foundation
import GRDB

/// One file's row in an ``UploadJournal``.
package struct JournalEntry: Sendable {
    /// The absolute path.
    package var path: String
    /// The size recorded with the file's identity, when it was read.
    package var byteCount: Int64?
    /// The modification time recorded with the identity, in nanoseconds since the epoch.
    package var modificationTime: Int64?
    /// The SHA-256 of the content (hex), when it was read.
    package var sha256: String?
    /// The state.
    package var state: UploadJournal.State
    /// The `Idempotency-Key` every attempt of the current upload carries.
    package var idempotencyKey: String?
    /// How many times a run started sending this file (each may have made several HTTP attempts; the
    /// receipt says how many the successful one made).
    package var attempts: Int
    /// The server's receipt, for `done` files.
    package var receipt: UploadReceipt?
    /// The error code of the last failure (or `skipped`), for `failed` and `skipped` files.
    package var errorCode: String?
    /// The stage of the last failure.
    package var errorStage: String?
    /// The message of the last failure or the reason for skipping.
    package var errorMessage: String?
    /// When the row last changed.
    package var updatedAt: Date
    /// The resumable upload in progress (resource and last confirmed offset), if any.
    package var resumable: ResumableState?

    static func resumable(_ row: Row) -> ResumableState? {
        guard let name: String = row["uploadProtocol"], let protocolName = ResumableProtocol(rawValue: name),
            let url: String = row["uploadURL"]
        else { return nil }
        return ResumableState(protocolName: protocolName, uploadURL: url, offset: row["confirmedOffset"] ?? 0)
    }

    init(row: Row) {
        path = row["path"]
        byteCount = row["size"]
        modificationTime = row["mtime"]
        sha256 = row["sha256"]
        state = UploadJournal.State(rawValue: row["state"]) ?? .pending
        idempotencyKey = row["idempotencyKey"]
        attempts = row["attempts"]
        if let json: String = row["receipt"] {
            receipt = try? JSONDecoder().decode(UploadReceipt.self, from: Data(json.utf8))
        }
        errorCode = row["errorCode"]
        errorStage = row["errorStage"]
        errorMessage = row["errorMessage"]
        updatedAt = Date(timeIntervalSince1970: row["updatedAt"])
        resumable = Self.resumable(row)
    }
}
