import FoundationEssentials

/// A transfer of a ``DownloadManager``, named by its absolute destination path.
package struct DownloadID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The absolute destination path.
    package let path: String

    /// Names the transfer whose destination is `path` (made absolute against the working directory).
    package init(path: String) { self.path = DownloadID.absolute(path) }

    /// The absolute destination path.
    package var description: String { path }

    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        let base = FileManager.default.currentDirectoryPath
        return base.hasSuffix("/") ? base + path : base + "/" + path
    }
}

/// What a ``DownloadManager`` should fetch: one URL into one file.
package struct DownloadItem: Sendable {
    /// The `http://` or `https://` URL, or with ``objectStore`` an object's `s3://BUCKET/KEY`.
    package var url: String
    /// The object store an `s3://` ``url`` is fetched from, each GET signed with its credentials
    /// (``DownloadRequest/objectStore``); nil for `http(s)` URLs.
    package var objectStore: ObjectStoreEndpoint?
    /// The file to create (relative paths are resolved against the working directory when added).
    package var destination: String
    /// The group it belongs to; groups are paused, resumed, cancelled and restarted together.
    package var group: String
    /// The SHA-256 (hex) the bytes must have; checked before the file appears.
    package var expectedSHA256: String?
    /// Decrypt and verify the bytes into the destination.
    package var unsealing: DownloadRequest.Unsealing?
    /// Extra request headers.
    package var headers: [HeaderField]
    /// When the SHA-256 is computed: by default only when there is something to check it against
    /// (``expectedSHA256`` or a SHA-256 `ETag`), since hashing costs more CPU than a fast link's bytes.
    package var digest: DownloadRequest.DigestPolicy

    /// Creates an item.
    package init(
        url: String, destination: String, group: String = "default", expectedSHA256: String? = nil,
        unsealing: DownloadRequest.Unsealing? = nil, headers: [HeaderField] = [],
        digest: DownloadRequest.DigestPolicy = .whenVerifiable
    ) {
        self.digest = digest
        self.url = url
        self.destination = destination
        self.group = group
        self.expectedSHA256 = expectedSHA256
        self.unsealing = unsealing
        self.headers = headers
    }
}

/// Bytes, rate and time left: of one transfer, or of all of a manager's transfers together.
package struct DownloadFigures: Sendable, Hashable, Codable {
    /// Bytes on disk so far (for the aggregate: of every transfer the manager holds).
    package var receivedBytes: Int64
    /// The whole size, when known (for the aggregate: the sum of the sizes known so far).
    package var totalBytes: Int64?
    /// Bytes per second lately (smoothed); 0 before the first measurement.
    package var bytesPerSecond: Double
    /// Seconds until done at the current rate, when the size and a rate are known.
    package var secondsRemaining: Double?

    /// Creates figures.
    package init(receivedBytes: Int64, totalBytes: Int64?, bytesPerSecond: Double) {
        self.receivedBytes = receivedBytes
        self.totalBytes = totalBytes
        self.bytesPerSecond = bytesPerSecond
        if let totalBytes, bytesPerSecond > 0 {
            secondsRemaining = Double(max(0, totalBytes - receivedBytes)) / bytesPerSecond
        }
    }
}

/// Something that happened to a ``DownloadManager``'s transfers, in the order it happened.
package enum DownloadEvent: Sendable {
    /// A transfer was added and waits for a slot.
    case queued(DownloadID)
    /// A transfer was added but its file is complete from an earlier run: nothing is fetched.
    case alreadyDone(DownloadID)
    /// A transfer got a slot; `offset` is where its `.part` file continues (0 for a fresh start).
    case started(DownloadID, offset: Int64)
    /// Bytes arrived: the transfer's figures and the manager's aggregate, at most every
    /// ``DownloadManager/Configuration/progressInterval`` per transfer.
    case progress(DownloadID, DownloadFigures, aggregate: DownloadFigures)
    /// A transfer was paused; `bytes` are kept in its `.part` file.
    case paused(DownloadID, bytes: Int64)
    /// A transfer is complete, verified and in place.
    case completed(DownloadID, DownloadReceipt)
    /// A transfer failed; the others go on.
    case failed(DownloadID, AttacheError)
    /// A transfer was cancelled; its partial bytes are gone.
    case cancelled(DownloadID)
}

/// Counts of a manager's transfers by state, when it settled.
package struct DownloadSummary: Sendable, Hashable, Codable {
    /// Completed by this manager.
    package var completed = 0
    /// Complete from an earlier run.
    package var alreadyDone = 0
    /// Failed.
    package var failed = 0
    /// Paused (their bytes are kept).
    package var paused = 0
    /// Cancelled.
    package var cancelled = 0
    /// Bytes that came over the network, all transfers together.
    package var transferredBytes: Int64 = 0

    /// Creates an empty summary.
    package init() {}
}
