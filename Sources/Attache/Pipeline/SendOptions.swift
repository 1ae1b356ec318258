import FoundationEssentials

/// What one ``AttachmentPipeline/send(_:options:progress:)`` changes of the pipeline's configuration,
/// without building a new pipeline: a user's token, a chat's fields, a deadline, another answer
/// profile, another seal.
///
/// ```swift
/// var options = SendOptions()
/// options.headers = [HeaderField(name: "Authorization", value: "Bearer \(userToken)")]
/// options.fields = [UploadField(name: "chatId", value: "42")]
/// options.timeLimit = .seconds(30)
/// let receipt = try await pipeline.send(attachment, options: options)
/// ```
///
/// The attachment's own idempotency key and fields are on ``Attachment``; these options apply on top of
/// the configuration for this send only. Options that change what `PipelineConfiguration.validate()`
/// looks at (``fields``, ``answers``) are checked with it when the send starts, and a combination no server
/// could take fails the send before anything is read.
public struct SendOptions: Sendable {
    /// Headers for every request of this send. A field here replaces the configuration's header of the
    /// same name (`ConnectionConfiguration/headers`), and an `Authorization` here replaces the
    /// configuration's credentials (`ConnectionConfiguration/authorization`).
    public var headers: [HeaderField] = []
    /// Form fields for this send. A field here replaces the configuration's field of the same name
    /// (``PipelineConfiguration/fields``); they come before the attachment's own fields.
    public var fields: [UploadField] = []
    /// The longest the whole send may take, every stage and retry included; past it the send is
    /// cancelled and throws `.timedOut` naming the stage it was in. Nil: no limit beyond the retry
    /// policy's own budget.
    public var timeLimit: Duration?
    /// How this send's answers are read, in place of ``PipelineConfiguration/answers``.
    public var answers: ResponseInterpreter.Configuration?
    /// How this send is sealed, in place of ``PipelineConfiguration/seal``.
    public var seal: SealConfiguration?
    /// Where this send keeps what another process needs to continue it (an earlier send under the same
    /// key, a resumable upload's offset, a multipart upload's parts); nil keeps nothing.
    public var journal: (any SendJournal)?
    /// What Detect found, when the caller already ran it (``AttachmentPipeline/detect(fileAt:declaredKind:)``,
    /// in a blocking job of its own): the Detect stage then takes it instead of reading the file again.
    public var detection: Detection?
    /// The Scan stage's verdict, when the caller already found it (``AttachmentPipeline/scanAhead(fileAt:detection:sha256:)``):
    /// taken only when the payload is that file unchanged.
    public var scannedAhead: ScannedAhead?

    /// Options that change nothing.
    public init() {}

    /// Options with the given changes.
    package init(
        headers: [HeaderField] = [], fields: [UploadField] = [], timeLimit: Duration? = nil,
        answers: ResponseInterpreter.Configuration? = nil, seal: SealConfiguration? = nil
    ) {
        self.headers = headers
        self.fields = fields
        self.timeLimit = timeLimit
        self.answers = answers
        self.seal = seal
    }
}
