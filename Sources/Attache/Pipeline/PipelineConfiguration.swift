import FoundationEssentials

/// Everything the pipeline needs to know, fixed for many attachments.
public struct PipelineConfiguration: Sendable {
    /// The upload endpoint.
    public var url: String
    /// The form name of the attachment part.
    public var fileFieldName = "file"
    /// "System parameters": form fields sent with every upload, before the attachment's own.
    public var fields: [UploadField] = []
    /// Send the detected type and metadata as form fields (`mimeType`, `kind`, `width`, `height`,
    /// `duration`, … see `Detection.uploadFields`). `nil` (the default): yes, except with an answer
    /// profile whose endpoint checks every field against a signed policy (`s3-post`: S3 refuses a form with
    /// a field its policy does not list). See `sendsMetadataFields`.
    public var sendMetadataFields: Bool?
    /// Send how a sealed attachment was sealed as form fields (`scheme`, `encoding`, `plaintextSize`; the
    /// key never). `nil` (the default): yes, except with `s3-post`, for the same reason as
    /// ``sendMetadataFields``; the receipt carries the same facts either way. See `sendsSealFields`.
    public var sendSealFields: Bool?
    /// Where an image's thumbnails go. `nil` (the default): in the attachment's request (`inline`), except
    /// with an answer profile whose endpoint takes one file per request (`s3-post`), where they are not
    /// sent (`omitted`). See `thumbnailPlacement`.
    public var thumbnails: ThumbnailPlacement?
    /// Send the placeholders (``AttacheCore/Placeholders``) as the form fields `blurhash`, `thumbhash` and
    /// `stripped`. Off by default: the receipt carries them either way.
    public var sendPlaceholderFields = false
    /// How content is detected and classified.
    package var detection = MIMEDetector.Configuration()
    /// What is recompressed, and how; thumbnails.
    public var transform = Transformer.Configuration()
    /// Identical sources transformed once per pipeline (the default): a send whose file has the same bytes
    /// (SHA-256), type and kind as another of this pipeline's, at the same time or earlier in the run, takes
    /// that transform's output instead of decoding and encoding again. Each send still seals with its own
    /// key and uploads on its own, so no server can tell the two apart. The receipt's
    /// ``TransformReceipt/reused`` says so. False: every send transforms its own file.
    public var sharesTransforms = true
    /// How much of each send its spans show, when tracing is on: ``TraceDetail/send`` (the default) or
    /// ``TraceDetail/stages``.
    public var traceDetail: TraceDetail = .send
    /// Where stored uploads are looked up by content (``ContentIndex``; nil, the default: nowhere). With an
    /// index and ``contentReuse`` on, a send whose file has the same bytes (SHA-256) and settings as a
    /// stored upload the index knows returns that upload's receipt (``UploadReceipt/dedup``) and sends
    /// nothing; a send that stores is recorded in it. See ``ContentReuse`` for what reuse reveals.
    public var contentIndex: (any ContentIndex)?
    /// Whether ``contentIndex`` is used: ``ContentReuse/reuse``, or ``ContentReuse/verify`` to download and
    /// open the stored upload first. Off by default.
    public var contentReuse: ContentReuse = .off
    /// Image transforms running at once across all the sends of one pipeline (default: one per core).
    /// Uploads beyond that wait for a slot before decoding, which keeps a batch's memory bounded.
    public var transformConcurrency = ProcessInfo.processInfo.activeProcessorCount
    /// Sends of this pipeline running at once; more wait for a slot, first come first served. Nil (the
    /// default): no limit beyond the transforms' and the transport's own. A send waiting for a slot holds
    /// no thread; its ``SendOptions/timeLimit`` counts from the call.
    public var maximumConcurrentSends: Int?
    /// Malware scanning before the seal (no scanner, no Scan stage: the default).
    public var scan = ScanConfiguration()
    /// How attachments are encrypted on their way to the server.
    public var seal = SealConfiguration()
    /// How to talk to the server: timeouts, retries, TLS, headers, credentials.
    public var connection = ConnectionConfiguration()
    /// How the server's answers are read.
    public var answers = ResponseInterpreter.Configuration()
    /// Resumable uploads (tus 1.0, the IETF draft) for large attachments; off by default. A resumable
    /// upload sends the sealed attachment alone (fields as `Upload-Metadata`, no inline thumbnails).
    public var resumable = ResumableConfiguration()
    /// How the attachment is sent to ``url``: a `POST` (the default), or a `PUT` of the sealed bytes alone
    /// (a presigned PUT URL; answers read with the `s3-put` profile unless another is set).
    public var method: UploadMethod = .post
    /// What the body of an upload to ``url`` is: a multipart/form-data form, or the sealed bytes alone with
    /// an exact `Content-Length` and the file's content type (a media API that takes raw bodies: Matrix's
    /// `/_matrix/media/v3/upload`, Slack's upload URLs). Nil (the default): raw for a `PUT`, a form for a
    /// `POST`. A raw body carries no fields, and its thumbnails are not sent unless ``thumbnails`` says
    /// `separate` (each as a request of its own to ``url``). Its answers are read with ``answers``, or, when
    /// that is the default `errorcode` profile, with `s3-put` for a `PUT` and `status` for a `POST`.
    public var body: UploadBody?
    /// A Matrix homeserver to store attachments on, as its media repository takes them (``MatrixEndpoint``);
    /// the receipt then carries the message content (``UploadReceipt/matrix``). Nil (the default): ``url``
    /// is an upload endpoint or a bucket.
    public var matrix: MatrixEndpoint?
    /// A bucket to put attachments in as objects, with signed requests (signed by Attache, or by the client's
    /// adapters: ``ObjectStoreEndpoint/signing``); ``url`` is then `s3://BUCKET/PREFIX/`.
    /// Nil (the default): ``url`` is an HTTP endpoint.
    public var objectStore: ObjectStoreEndpoint?

    /// Creates a configuration for `url` with the defaults (HEIC/AVIF photos decoded by libheif).
    public init(url: String) {
        self.url = url
        transform.heifDecoder = LibHEIFDecoder()
    }

    /// Where thumbnails go: ``thumbnails``, or the answer profile's default.
    package var thumbnailPlacement: ThumbnailPlacement {
        if let thumbnails { return thumbnails }
        if objectStore != nil || matrix != nil { return .separate }
        return answers.profile.sendsOneFilePerRequest || sendsRawBody ? .omitted : .inline
    }

    /// True when the body of an upload to ``url`` is the sealed bytes alone (``body``).
    package var sendsRawBody: Bool { (body ?? (method == .put ? .raw : .form)) == .raw }

    /// True when attachments go as objects: a raw body (a `PUT` of the sealed bytes, a raw `POST`), into
    /// ``objectStore``, or to ``matrix``.
    package var sendsObjects: Bool { sendsRawBody || objectStore != nil || matrix != nil }

    /// Whether metadata fields are sent: ``sendMetadataFields``, or the answer profile's default.
    package var sendsMetadataFields: Bool { sendMetadataFields ?? !answers.profile.checksFormFields }

    /// Whether seal fields are sent: ``sendSealFields``, or the answer profile's default.
    package var sendsSealFields: Bool { sendSealFields ?? !answers.profile.checksFormFields }

    /// Checks the combinations no server could take. ``AttachmentPipeline/init(configuration:logger:)``
    /// calls it once, so a pipeline that exists has a configuration that passed.
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `configuration`): thumbnails inline with a
    ///   profile that takes one file per request; separate thumbnails to a presigned POST whose `key` field
    ///   names one fixed object (each thumbnail would replace the attachment).
    package func validate() throws {
        let profile = answers.profile
        if let objectStore, objectStore.keyTemplate.namesContent, ![.streamGCM, .none].contains(seal.scheme) {
            throw AttacheError(
                .invalidArgument, stage: .configuration,
                "a {sha256} object key seals with material derived from the content, which the stream-gcm scheme (or none) "
                    + "takes, not \(seal.scheme)")
        }
        if method == .put, body == .form {
            throw AttacheError(.invalidArgument, stage: .configuration, "a PUT sends the sealed bytes alone: its body cannot be a form")
        }
        if matrix != nil {
            if objectStore != nil {
                throw AttacheError(.invalidArgument, stage: .configuration, "give a Matrix homeserver or a bucket, not both")
            }
            if seal.scheme != .matrix, seal.scheme != .none {
                throw AttacheError(
                    .invalidArgument, stage: .configuration,
                    "a Matrix client opens attachments sealed with the matrix scheme (or none), not \(seal.scheme)")
            }
            if thumbnails == .inline {
                throw AttacheError(
                    .invalidArgument, stage: .configuration, "each Matrix media upload holds one file: thumbnails cannot go inline")
            }
        }
        if sendsObjects, thumbnailPlacement == .inline {
            throw AttacheError(
                .invalidArgument, stage: .configuration,
                "an object holds one file: thumbnails cannot go inline (use none or separate)")
        }
        if method == .put, objectStore == nil, thumbnailPlacement == .separate {
            throw AttacheError(
                .invalidArgument, stage: .configuration,
                "a presigned PUT URL names one object, so a separate thumbnail would replace the attachment: "
                    + "use no thumbnails, or s3://BUCKET/PREFIX/ with credentials")
        }
        if S3Location(url) != nil, objectStore == nil {
            throw AttacheError(
                .invalidArgument, stage: .configuration, "an s3:// URL needs an object store endpoint (credentials, region)")
        }
        if !sendsObjects, profile.sendsOneFilePerRequest, thumbnailPlacement == .inline {
            throw AttacheError(
                .invalidArgument, stage: .configuration,
                "the \(profile) profile takes exactly one file part per request: thumbnails cannot go inline "
                    + "(use none or separate)")
        }
        if profile == .s3Post, thumbnailPlacement == .separate,
            let key = fields.last(where: { $0.name == "key" })?.value, !key.contains("${filename}")
        {
            throw AttacheError(
                .invalidArgument, stage: .configuration,
                "the form's key names one object, so each separate thumbnail would replace the attachment: "
                    + "use a key with ${filename} or no thumbnails")
        }
    }
}

/// What the body of an upload to an HTTP endpoint is (``PipelineConfiguration/body``).
public enum UploadBody: String, Sendable, Hashable, Codable, CaseIterable {
    /// A multipart/form-data form: the fields, the file part, inline thumbnails.
    case form
    /// The sealed bytes alone, with an exact `Content-Length` and the file's content type.
    case raw
}

/// How an attachment is sent to an HTTP endpoint.
public enum UploadMethod: String, Sendable, Hashable, Codable, CaseIterable {
    /// A multipart/form-data `POST` with the form's fields.
    case post = "POST"
    /// A `PUT` whose body is the sealed bytes alone, with an exact `Content-Length` (a presigned PUT URL).
    case put = "PUT"
}
