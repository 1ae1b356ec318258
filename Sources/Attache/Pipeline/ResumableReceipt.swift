/// How an attachment was sent as a resumable upload (tus 1.0 or the IETF draft).
public struct ResumableReceipt: Sendable, Codable, Hashable {
    /// `tus` or `ietf`.
    public var protocolName: ResumableProtocol
    /// The upload resource.
    public var uploadURL: String
    /// Bytes the server already had when this send started (an earlier process's upload).
    public var resumedBytes: Int64
    /// Body bytes this send handed to the network, over all its requests.
    public var bytesSent: Int64
    /// Requests this send made, of every kind: the creation or offset check, each append, and the retries.
    public var requests: Int

    /// Creates a receipt.
    package init(protocolName: ResumableProtocol, uploadURL: String, resumedBytes: Int64, bytesSent: Int64, requests: Int) {
        self.protocolName = protocolName
        self.uploadURL = uploadURL
        self.resumedBytes = resumedBytes
        self.bytesSent = bytesSent
        self.requests = requests
    }
}
