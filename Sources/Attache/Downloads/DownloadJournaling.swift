import FoundationEssentials

/// One transfer's durable state, as a ``DownloadManager`` keeps it in a ``DownloadJournaling`` store.
///
/// The bytes themselves are not recorded: the `.part` file beside the destination is their record.
/// What the journal adds is what the file system cannot say: which URL the bytes came from, the
/// validator (`ETag` or `Last-Modified`) they were fetched under, whether the transfer finished, failed,
/// was paused or cancelled. Keys are never recorded; the caller gives them again when it adds the
/// transfer again.
package struct DownloadRecord: Sendable, Hashable, Codable {
    /// Where a transfer stands.
    package enum State: String, Sendable, Hashable, Codable, CaseIterable {
        /// Waiting for a free slot.
        case queued
        /// Receiving bytes (or receiving them when the process died).
        case active
        /// Paused by the caller; its bytes are kept.
        case paused
        /// Complete, verified and in place.
        case done
        /// Failed; the error is kept.
        case failed
        /// Cancelled by the caller; nothing is left of it.
        case cancelled
    }

    /// The absolute destination path: the transfer's identity.
    package var destination: String
    /// The URL the bytes come from.
    package var url: String
    /// The group the transfer belongs to.
    package var group: String
    /// The state.
    package var state: State
    /// The `If-Range` validator of the bytes in the `.part` file, once the server sent one.
    package var validator: String?
    /// The SHA-256 the caller expects, hex.
    package var expectedSHA256: String?
    /// The whole size, once known.
    package var totalBytes: Int64?
    /// The SHA-256 of the finished file, hex.
    package var sha256: String?
    /// The error code of the last failure.
    package var errorCode: String?
    /// The message of the last failure.
    package var errorMessage: String?

    /// Creates a record.
    package init(
        destination: String, url: String, group: String, state: State, validator: String? = nil,
        expectedSHA256: String? = nil, totalBytes: Int64? = nil, sha256: String? = nil,
        errorCode: String? = nil, errorMessage: String? = nil
    ) {
        self.destination = destination
        self.url = url
        self.group = group
        self.state = state
        self.validator = validator
        self.expectedSHA256 = expectedSHA256
        self.totalBytes = totalBytes
        self.sha256 = sha256
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }
}

/// Where a ``DownloadManager`` keeps its transfers' state so that another process can resume them.
///
/// `AttacheBatch.DownloadJournal` stores it in SQLite; ``InMemoryDownloadJournal`` keeps it for the
/// life of the process. Calls come from one serial writer, never the transport's thread, and each
/// ``save(_:)`` must be durable (committed) when it returns.
package protocol DownloadJournaling: Sendable {
    /// The record for the absolute `destination`, if there is one.
    /// - Throws: `AttacheError` `.journal` when the store cannot be read.
    func record(for destination: String) throws -> DownloadRecord?

    /// Inserts or replaces the records, in order, as one commit (a later record of the same
    /// destination replaces an earlier one).
    /// - Throws: `AttacheError` `.journal` when the store cannot be written.
    func save(_ records: [DownloadRecord]) throws
}

/// A ``DownloadJournaling`` store that lives as long as the process: pause and resume work within the
/// process, nothing survives it.
package final class InMemoryDownloadJournal: DownloadJournaling {
    private let records = LockedValue<[String: DownloadRecord]>([:])

    /// Creates an empty store.
    package init() {}

    /// The record for `destination`.
    package func record(for destination: String) throws -> DownloadRecord? {
        records.withLock { $0[destination] }
    }

    /// Stores `records`.
    package func save(_ records: [DownloadRecord]) throws {
        self.records.withLock { stored in
            for record in records { stored[record.destination] = record }
        }
    }
}
