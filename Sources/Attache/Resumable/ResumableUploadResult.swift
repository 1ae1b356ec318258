import FoundationEssentials

/// What a resumable upload came to.
package struct ResumableUploadResult: Sendable {
    /// The server's decision, as for a multipart upload.
    package var upload: UploadResult
    /// The protocol used.
    package var protocolName: ResumableProtocol
    /// The upload resource.
    package var uploadURL: String
    /// Bytes the server already had when this call started (from ``ResumableUploadRequest/resumeFrom``).
    package var resumedFrom: Int64
    /// Body bytes handed to the network by this call, every request counted.
    package var bytesSent: Int64
    /// Requests made (creation, appends, offset checks, the receipt).
    package var requests: Int
}
