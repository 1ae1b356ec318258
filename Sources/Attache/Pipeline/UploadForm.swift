/// The one form specification of an upload: the fields and file parts of one request, in order.
///
/// The attachment's multipart body, its resumable upload's `Upload-Metadata` and each thumbnail sent as
/// a request of its own are all made from an `UploadForm`, and every `UploadForm` is made by
/// ``init(configuration:attachmentFields:metadata:seal:file:inlineFiles:)``, so the three can never
/// disagree on which fields go, or in which order.
struct UploadForm: Sendable {
    /// One file part.
    struct FilePart: Sendable {
        /// The form name.
        let name: String
        /// The filename sent.
        let filename: String
        /// The part's content type.
        let contentType: String
        /// The part's bytes, read when the body is streamed.
        let source: any ByteSource
    }

    /// How a part was sealed, for the seal fields.
    struct SealFacts: Sendable {
        /// The scheme and transfer encoding.
        let configuration: SealConfiguration
        /// The size before sealing.
        let plaintextByteCount: Int64
        /// True when nothing was changed on the way: no seal fields then.
        let isPlain: Bool
    }

    /// Every text field, in order.
    let fields: [UploadField]
    /// The file part the request is for.
    let file: FilePart
    /// File parts after it (inline thumbnails).
    let inlineFiles: [FilePart]

    /// The form of one request: the configuration's fields ("system parameters"), the attachment's own,
    /// then `metadata` and the seal fields when the configuration sends them, then `file`, then
    /// `inlineFiles`. Every field comes before the first file part: a presigned POST (S3) reads fields
    /// only up to its one file part and ignores or refuses what follows.
    init(
        configuration: PipelineConfiguration, attachmentFields: [UploadField], metadata: [UploadField],
        seal: SealFacts, file: FilePart, inlineFiles: [FilePart] = []
    ) {
        var fields = configuration.fields + attachmentFields
        if configuration.sendsMetadataFields { fields += metadata }
        if !seal.isPlain, configuration.sendsSealFields {
            // What the receiver needs to open the part; the key itself never goes to the server.
            fields += [
                UploadField(name: "scheme", value: seal.configuration.scheme.rawValue),
                UploadField(name: "encoding", value: seal.configuration.transferEncoding.rawValue),
                UploadField(name: "plaintextSize", value: String(seal.plaintextByteCount)),
            ]
        }
        self.fields = fields
        self.file = file
        self.inlineFiles = inlineFiles
    }

    /// The form as a `multipart/form-data` body: the fields, the file part, the inline file parts.
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` for a name, filename or content type that
    ///   ``MultipartBody`` cannot write.
    func multipartBody() throws -> MultipartBody {
        var body = MultipartBody()
        for field in fields {
            try body.addField(name: field.name, value: field.value)
        }
        for part in [file] + inlineFiles {
            try body.addFile(name: part.name, filename: part.filename, contentType: part.contentType, source: part.source)
        }
        return body
    }

    /// The fields as a resumable upload's `Upload-Metadata` carries them (the file part is the body).
    var uploadMetadata: [UploadField] { fields }
}
