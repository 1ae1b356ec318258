/// How a server's answer to an upload is read: which statuses and bodies mean stored, refused or
/// "try again", and where the file id is.
///
/// Every profile retries what `RetryClassifier` retries (honouring `Retry-After`), and keeps the server's answer
/// whole in the receipt (``ServerReceipt/data``). They differ in what a 2xx answer must look like and in how
/// errors are read:
///
/// | profile | success | file id | refusal |
/// |---|---|---|---|
/// | `errorcode` | 2xx JSON object whose `errorCode` is `0` | `data.fileId` (`file_id`, `id`) | `errorCode` + `message` |
/// | `status` | any 2xx, the body may be empty or not JSON | the JSON body's `fileId` (`file_id`, `id`, also under `data`), else the last segment of `Location` | the status, with the body's message |
/// | `s3-post` | 200, 201 (S3's `PostResponse` XML), 204 | the XML's `Key` (else the form's `key` field) | S3's XML `Error`: its `Code` and `Message` |
/// | `s3-put` | any 2xx without an XML `Error` body | the XML's `Key`, if any | S3's XML `Error` (also in a 200) |
/// | `matrix` | 2xx JSON (`{}` for an upload to a reserved id) | `content_uri` | `errcode` + `error`; `M_LIMIT_EXCEEDED` retried after `retry_after_ms` (or `Retry-After`) |
/// | `telegram` | `{"ok":true,"result":…}` | the largest `photo`'s `file_id`, or `document`, `video`, `voice`, `audio`, `sticker`, `animation`, `video_note` | `error_code` + `description`; `parameters.retry_after` honoured like `Retry-After` |
///
/// ``ResponseInterpreter/Configuration/idPointer`` overrides where the file id is read, in every profile.
///
/// ```swift
/// var configuration = PipelineConfiguration(url: presignedPost.url)
/// configuration.answers = .init(profile: .s3Post)
/// configuration.fields = presignedPost.fields
/// ```
public enum AnswerProfile: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// The old backend's convention, the default: a 2xx JSON object whose `errorCode` is `0` (number or
    /// string), the payload under `data`; any other code is a business error carrying `message`.
    case errorCode = "errorcode"
    /// Any 2xx is success, whatever the body: an empty `201` with a `Location`, a `200 OK` in plain text, or
    /// JSON. The file id comes from the JSON body when there is one, else from `Location`.
    case status
    /// An S3, MinIO or Google Cloud Storage presigned POST form. `204` (empty), `200` and `201` (with a
    /// `PostResponse` XML body) are success; S3's XML errors (`AccessDenied`, `EntityTooLarge`,
    /// `SignatureDoesNotMatch`, an expired policy) are rejections carrying S3's code and message.
    /// The request it implies has every form field first and exactly one file part last, so no thumbnail
    /// goes inline with the attachment.
    case s3Post = "s3-post"
    /// An object store's answer to a `PUT` of the raw bytes (a presigned PUT URL, a signed `PutObject`) and
    /// to the steps of a multipart upload: any 2xx is success, and the receipt's data holds the `ETag`,
    /// `x-amz-version-id` (`VersionId`) and `x-amz-checksum-*` headers with the members of an XML answer;
    /// S3's XML `Error` is a refusal carrying S3's code and message, also in a `200` answer (as
    /// `CompleteMultipartUpload` may send it).
    case s3Put = "s3-put"
    /// Telegram Bot API answers: `{"ok":true,"result":{…}}`, with `result` kept whole, and
    /// `{"ok":false,"error_code":N,"description":…,"parameters":{"retry_after":S}}` for errors.
    case telegram
    /// A Matrix homeserver's media API (`/_matrix/media/v3/upload`, MSC2246's `create`): a 2xx JSON object,
    /// the `mxc://` URI in `content_uri` (file id and URL both); errors are `{"errcode":…,"error":…}`,
    /// `M_LIMIT_EXCEEDED` is retried after `retry_after_ms` when there is no `Retry-After`.
    case matrix

    /// The profile named `name` (`errorcode`, `status`, `s3-post`, `s3-put`, `telegram`, `matrix`), or nil.
    package init?(name: String) {
        self.init(rawValue: name.lowercased())
    }

    /// True when the endpoint takes exactly one file part per request (`s3-post`): thumbnails cannot go
    /// inline, and nothing may follow the file part.
    package var sendsOneFilePerRequest: Bool { self == .s3Post || self == .s3Put }

    /// True when the endpoint checks every form field against a signed policy (`s3-post`), so the
    /// pipeline adds no fields of its own (metadata, seal description) unless asked to.
    package var checksFormFields: Bool { self == .s3Post || self == .s3Put }

    /// The name used on the command line and in configuration files.
    public var description: String { rawValue }
}
