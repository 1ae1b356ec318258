import FoundationEssentials

/// What a resumable upload came to.
public struct ResumableUploadResult: Sendable {
    /// The server's decision, as for a multipart upload.
    public var upload: UploadResult
    /// The protocol used.
    public var protocolName: ResumableProtocol
    /// The upload resource.
    public var uploadURL: String
    /// Bytes the server already had when this call started (from ``ResumableUploadRequest/resumeFrom``).
    public var resumedFrom: Int64
    /// Body bytes handed to the network by this call, every request counted.
    public var bytesSent: Int64
    /// Requests made (creation, appends, offset checks, the receipt).
    public var requests: Int
}
