public import Attache
public import AttacheCore
import Foundation
import Logging

/// One file a worker holds a lease on: what the enqueuer recorded about it, and the lease.
public struct QueueJob: Sendable {
    /// The row's id (enqueue order).
    public let id: Int64
    /// The absolute path every worker reads the file at.
    public let path: String
    /// The size recorded at enqueue time.
    public let byteCount: Int64
    /// The modification time recorded at enqueue time, in nanoseconds since the epoch.
    public let modificationTime: Int64
    /// The SHA-256 recorded at enqueue time (hex), when the file was small enough to hash.
    public let sha256: String?
    /// The `Idempotency-Key` of every attempt, by every worker.
    public let idempotencyKey: String
    /// The key and nonce seed made at enqueue time: every attempt seals to the same bytes.
    public let sealMaterial: SealMaterial
    /// The scheme the material was made for.
    public let scheme: SealScheme
    /// Which claim of this row this is (1 for the first); above 1, an earlier worker may have sent it.
    public let attempt: Int
    /// The fencing token of this lease: the commit succeeds only while the row still carries it.
    public let leaseToken: Int64
    /// The propagation fields of the span that enqueued the file (`traceparent: …` lines), if any.
    package var traceContext: String?
    /// The multipart upload to an object store an earlier claim of the row started, if any.
    package var multipartRecord: MultipartRecord?
    /// Keeps the multipart upload's id and confirmed parts in the row (nil forgets them).
    package var recordMultipart: (@Sendable (MultipartRecord?) async -> Void)?
    /// An upload resource an earlier claim created, kept in the same column (a resumable upload's, or the
    /// media ids a Matrix homeserver reserved): a send uses one or the other.
    package var resumableState: ResumableState?
    /// Writes the resource's state to the row (nil clears it), fenced by the lease.
    package var recordResumable: (@Sendable (ResumableState?) async -> Void)?

    /// Creates a job (tests and custom senders; workers make them from rows).
    public init(
        id: Int64, path: String, byteCount: Int64, modificationTime: Int64, sha256: String?, idempotencyKey: String,
        sealMaterial: SealMaterial, scheme: SealScheme, attempt: Int, leaseToken: Int64
    ) {
        self.id = id
        self.path = path
        self.byteCount = byteCount
        self.modificationTime = modificationTime
        self.sha256 = sha256
        self.idempotencyKey = idempotencyKey
        self.sealMaterial = sealMaterial
        self.scheme = scheme
        self.attempt = attempt
        self.leaseToken = leaseToken
    }
}

/// Sends the file of one job; a ``QueueWorker`` calls it for every file it holds.
///
/// Throw an ``AttacheError``: a retryable one sends the file back to the queue for a later attempt
/// (up to ``QueueWorkerConfiguration/maximumAttempts``), any other parks it as failed, and `.cancelled`
/// hands it back untouched.
public protocol QueueFileSender: Sendable {
    /// Sends `job`'s file under its idempotency key and seal material, and returns the receipt.
    func send(_ job: QueueJob) async throws -> UploadReceipt
}

/// Sends through an ``AttachmentPipeline``: the queue's key and material go into the ``Attachment``, so
/// a second worker's attempt is byte-identical to the first's and the server deduplicates it.
public struct PipelineQueueSender: QueueFileSender {
    /// The pipeline every file goes through.
    public let pipeline: AttachmentPipeline
    /// The kind every file is declared as; detected when nil.
    public var declaredKind: MessageKind?

    /// Creates a sender over `pipeline`.
    public init(pipeline: AttachmentPipeline, declaredKind: MessageKind? = nil) {
        self.pipeline = pipeline
        self.declaredKind = declaredKind
    }

    /// Checks that the file is still the one enqueued (size and modification time), then sends it.
    /// - Throws: ``AttacheError`` `.fileChanged` when it is not; `.invalidArgument` when the pipeline
    ///   seals with another scheme than the one the material was made for; whatever the pipeline throws.
    public func send(_ job: QueueJob) async throws -> UploadReceipt {
        let configured = pipeline.configuration.seal.scheme
        guard configured == job.scheme else {
            throw AttacheError(
                .invalidArgument, stage: .configuration,
                "enqueued for \(job.scheme), but this worker seals with \(configured) (--scheme)", file: job.path)
        }
        let source = try await BlockingPool.shared.run { try FileSource(path: job.path) }
        guard source.byteCount == job.byteCount, source.modificationTime == job.modificationTime else {
            throw AttacheError(
                .fileChanged, stage: .read, "the file changed after it was enqueued: enqueue it again", file: job.path)
        }
        let attachment = Attachment(
            path: job.path, declaredKind: declaredKind, idempotencyKey: job.idempotencyKey, sealMaterial: job.sealMaterial)
        var options = SendOptions()
        options.journal = RowJournal(job: job)
        return try await pipeline.send(attachment, options: options)
    }
}

/// What a queue row keeps of its send: whether an earlier claim may have sent it, and in its
/// `multipart_upload` column an object store's multipart upload, or an upload resource created before the
/// bytes went (a resumable upload's, a Matrix homeserver's reserved media ids).
private struct RowJournal: SendJournal {
    let job: QueueJob

    var continuesEarlierSend: Bool { job.attempt > 1 }

    func multipartRecord() async -> MultipartRecord? { job.multipartRecord }

    func record(_ record: MultipartRecord?) async { await job.recordMultipart?(record) }

    func resumableState() async -> ResumableState? { job.resumableState }

    func record(_ state: ResumableState?) async { await job.recordResumable?(state) }
}

/// Sends nothing: answers every job with a receipt made up on the spot. For measuring the queue's own
/// cost (`attache worker --stub-uploads`, Scripts/bench/queue.sh), never for moving files.
public struct StubQueueSender: QueueFileSender {
    /// Creates the stub.
    public init() {}

    /// A receipt naming the job's key and size, `fileId` `stub-<row id>`.
    public func send(_ job: QueueJob) async throws -> UploadReceipt {
        UploadReceipt(
            path: job.path, filename: (job.path as NSString).lastPathComponent, kind: .file,
            mimeType: "application/octet-stream", fileId: "stub-\(job.id)", url: nil,
            originalByteCount: job.byteCount, sentByteCount: job.byteCount, bodyByteCount: job.byteCount,
            idempotencyKey: job.idempotencyKey, attempts: 1, replayed: false, seconds: 0, server: .null,
            seal: SealReceipt(scheme: job.scheme, transferEncoding: .binary, plaintextByteCount: job.byteCount),
            detection: Detection(mimeType: "application/octet-stream", kind: .file),
            transform: TransformReceipt(recompressed: false, byteCount: job.byteCount))
    }
}
