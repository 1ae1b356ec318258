import FoundationEssentials

/// The server's receipt for a stored attachment.
public struct ServerReceipt: Sendable, Codable, Hashable {
    /// The HTTP status of the answer.
    public var status: Int
    /// The file id the server assigned, when it named one.
    public var fileId: String?
    /// Where the server says the file can be fetched, when it said so.
    public var url: String?
    /// The server's answer, every field kept: for `errorcode` its `data` member (the whole body when it has
    /// none), for `telegram` its `result`, for `status` the whole body (JSON as it is, XML converted, other
    /// text as a string, `null` when empty), for `s3-post` the XML's elements (`Location`, `Bucket`, `Key`,
    /// `ETag`) or, for an empty answer, its `Location`, `ETag` and `x-amz-version-id` headers.
    public var data: JSONValue
    /// True when the server answered an earlier attempt's receipt again (`Idempotent-Replayed`).
    public var replayed: Bool

    /// Creates a receipt.
    package init(status: Int, fileId: String?, url: String?, data: JSONValue, replayed: Bool = false) {
        self.status = status
        self.fileId = fileId
        self.url = url
        self.data = data
        self.replayed = replayed
    }
}
