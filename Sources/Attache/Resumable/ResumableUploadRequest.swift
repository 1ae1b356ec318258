import FoundationEssentials

/// One body to send as a resumable upload.
package struct ResumableUploadRequest: Sendable {
    /// The creation endpoint (the multipart endpoint of the same server, for the reference server).
    package var url: String
    /// The bytes: the sealed payload. Chunks are opened with ``AttacheCore/ByteSource/makeReader(startingAt:)``.
    package var body: any ByteSource
    /// The body's content type (tus `filetype`, the IETF creation request's `Content-Type`).
    package var contentType: String
    /// The filename (tus `filename`).
    package var filename: String
    /// Form fields, sent as `Upload-Metadata` (`key base64(value)`, comma-separated). Names must be
    /// tokens without spaces or commas.
    package var fields: [UploadField]
    /// Sent as `Idempotency-Key` with the creation request.
    package var idempotencyKey: String
    /// An upload an earlier process started (the batch journal's): continued from the server's
    /// offset when the server still has it, started over when not.
    package var resumeFrom: ResumableState?

    /// Creates a request.
    package init(
        url: String, body: any ByteSource, contentType: String = "application/octet-stream", filename: String,
        fields: [UploadField] = [], idempotencyKey: String? = nil, resumeFrom: ResumableState? = nil
    ) {
        self.url = url
        self.body = body
        self.contentType = contentType
        self.filename = filename
        self.fields = fields
        self.idempotencyKey = idempotencyKey ?? Uploader.makeIdempotencyKey()
        self.resumeFrom = resumeFrom
    }
}
