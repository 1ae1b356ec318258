public import Attache
public import AttacheCore
import Foundation

/// Everything a ``BatchUploader`` needs: the pipeline that sends each file, how many at once, and where
/// the journal lives.
public struct BatchConfiguration: Sendable {
    /// The journal's file name when none is given: `attache-journal.sqlite` in the current directory.
    public static let defaultJournalPath = "attache-journal.sqlite"

    /// The pipeline every file goes through.
    public var pipeline: AttachmentPipeline
    /// Files sent at the same time (at least 1).
    public var concurrency = 4
    /// The journal database; created when missing. Relative paths are relative to the current directory.
    public var journalPath = BatchConfiguration.defaultJournalPath
    /// Sync every journal commit to disk (one fsync per commit): without it the journal survives the
    /// process being killed, but an operating-system crash or power loss may forget the last commits.
    public var durableJournal = false
    /// Send files again whose earlier send failed (by default they are skipped and reported).
    public var retryFailed = false
    /// Walk, hash and compare with the journal, but send nothing and write nothing.
    public var dryRun = false
    /// Follow symbolic links wherever they point (by default only links that stay inside the folder
    /// being walked, and never links to folders).
    public var followSymlinks = false
    /// What the walk takes: by default every file but hidden ones (names starting with `.`, and what is
    /// inside hidden folders) and operating-system junk; include and exclude globs and size bounds narrow
    /// it (``AttacheCore/WalkFilter``). A file named in the paths is taken even when hidden. What is left
    /// out is counted by reason in ``BatchSummary/filtered``; the journal records the filter of each run.
    public var filter = WalkFilter()
    /// The kind every file is declared as; detected from the content when nil.
    public var declaredKind: MessageKind?
    /// Whether a file whose content was stored before takes that upload's receipt instead of being sent
    /// (off by default). The index is the journal: an upload of this run or an earlier one with the same
    /// source bytes (SHA-256) and the same pipeline settings (``Attache/PipelineConfiguration/settingsFingerprint``,
    /// and ``declaredKind``). Copies of one content met at once wait for the first, which is sent; the
    /// receipt of a reuse has ``Attache/UploadReceipt/dedup``. ``Attache/ContentReuse/verify`` downloads and
    /// opens the stored upload once per run before trusting it.
    public var contentReuse: ContentReuse = .off
    /// How many found files may wait for a free slot: the walk runs this far ahead of the uploads, so
    /// totals are known early while memory stays bounded.
    package var discoveryLookahead = 10_000
    /// How many events may wait for the consumer of ``BatchRun`` before the run waits for it (at least
    /// 1). Progress events are dropped rather than waited for.
    package var eventBufferLimit = 512
    /// The threads that hash files, walk folders and write the journal.
    package var pool: BlockingPool = .shared

    /// Creates a configuration around an existing pipeline.
    public init(pipeline: AttachmentPipeline, journalPath: String = BatchConfiguration.defaultJournalPath) {
        self.pipeline = pipeline
        self.journalPath = journalPath
    }

    /// Creates a configuration with a pipeline made from `configuration`.
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` for a pipeline configuration no server could take
    ///   (`PipelineConfiguration.validate()`).
    package init(pipeline configuration: PipelineConfiguration, journalPath: String = BatchConfiguration.defaultJournalPath) throws {
        self.init(pipeline: try AttachmentPipeline(configuration: configuration), journalPath: journalPath)
    }
}
