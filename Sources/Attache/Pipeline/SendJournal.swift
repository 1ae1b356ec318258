/// Where one send keeps what another process needs to continue it: the durable state of a batch
/// entry, a queue row, or a backend's own table.
///
/// A send that may be replayed (a batch killed and run again, a queue row taken over from a dead worker,
/// a caller's retry under the same idempotency key) must send the same bytes under the same key, and
/// should not send again what the server already holds. The seal material and the idempotency key
/// are the attachment's own (``Attachment/sealMaterial``, ``Attachment/idempotencyKey``); the rest of
/// that state goes through this journal, given to the send in ``SendOptions/journal``:
/// - whether an earlier process may already have sent the attachment (its receipt is then checked
///   against the bytes sent now);
/// - a resumable upload's resource and confirmed offset (tus, the IETF draft);
/// - an object store's multipart upload: its upload id and the parts the store confirmed.
///
/// The pipeline reads the earlier state once, before the first request, and hands each change to the
/// journal before the upload moves on: an implementation makes it durable (a row, a file) before it
/// returns. `nil` means the upload is over (stored, or abandoned and started again).
///
/// `AttacheBatch`'s journal and `AttacheQueue`'s rows implement it; the seal-material store of `attache upload` gives one
/// per idempotency key.
///
/// ```swift
/// struct RowJournal: SendJournal {
///     let row: UploadRow   // your own table
///     var continuesEarlierSend: Bool { row.attempts > 0 }
///     func resumableState() async -> ResumableState? { row.resumable }
///     func record(_ state: ResumableState?) async { await row.save(resumable: state) }
///     func multipartRecord() async -> MultipartRecord? { row.multipart }
///     func record(_ record: MultipartRecord?) async { await row.save(multipart: record) }
/// }
/// var options = SendOptions()
/// options.journal = RowJournal(row: row)
/// let receipt = try await pipeline.send(attachment, options: options)
/// ```
public protocol SendJournal: Sendable {
    /// True when an earlier process may already have sent this attachment under the same idempotency
    /// key: the receipt is then checked against what is sent now whenever the server reports a digest.
    var continuesEarlierSend: Bool { get }
    /// A resumable upload an earlier process started for this attachment, if any: continued at the
    /// server's offset when ``PipelineConfiguration/resumable`` applies.
    func resumableState() async -> ResumableState?
    /// Keeps the resumable upload's resource and each offset the server confirms; nil when the upload
    /// is stored or abandoned.
    func record(_ state: ResumableState?) async
    /// A multipart upload to an object store an earlier process started for this attachment, if any.
    func multipartRecord() async -> MultipartRecord?
    /// Keeps the multipart upload's id and each part the store confirms; nil once it is completed or
    /// aborted. Awaited before the upload goes on.
    func record(_ record: MultipartRecord?) async
}

extension AttachmentPipeline {
    /// Where a resumable upload's states go: this send's journal, if it has one.
    var resumableStateSink: (@Sendable (ResumableState?) async -> Void)? {
        guard let journal else { return nil }
        return { (state: ResumableState?) async in await journal.record(state) }
    }

    /// Where a multipart upload's records go: this send's journal, if it has one.
    var multipartRecordSink: (@Sendable (MultipartRecord?) async -> Void)? {
        guard let journal else { return nil }
        return { (record: MultipartRecord?) async in await journal.record(record) }
    }
}

extension SendJournal {
    /// No earlier resumable upload.
    public func resumableState() async -> ResumableState? { nil }
    /// Keeps nothing.
    public func record(_ state: ResumableState?) async {}
    /// No earlier multipart upload.
    public func multipartRecord() async -> MultipartRecord? { nil }
    /// Keeps nothing.
    public func record(_ record: MultipartRecord?) async {}
}
