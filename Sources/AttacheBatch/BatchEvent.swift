public import Attache
public import AttacheCore
import Foundation

/// Identifies one file within one batch run, for events and for ``BatchRun/cancel(_:)``.
public struct BatchFileID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The file's number in the order the walk found it, from 1.
    public let rawValue: Int
    /// Creates an id.
    package init(_ rawValue: Int) { self.rawValue = rawValue }
    /// `#` and the number, as progress lines show it.
    public var description: String { "#\(rawValue)" }
}

/// A file the batch found.
public struct BatchFile: Sendable, Hashable, Codable {
    /// Its number in this run.
    public var id: BatchFileID
    /// Its path, as the walk found it (relative paths stay relative).
    public var path: String
    /// Its size when it was found.
    public var byteCount: Int64

    /// Creates a file description.
    package init(id: BatchFileID, path: String, byteCount: Int64) {
        self.id = id
        self.path = path
        self.byteCount = byteCount
    }
}

/// Why the batch did not send a file.
public enum BatchSkipReason: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The journal says the same file (path, size, time, content) was stored before.
    case alreadyDone
    /// The journal says the same file failed before; run with `retryFailed` to try it again.
    case previouslyFailed(code: String, message: String)
    /// The same path was given twice in this run.
    case duplicate
    /// The walk does not send this path (a symbolic link leaving the folder, a device, a socket).
    case notSent(String)

    /// The reason in words (`already done`, `given twice`).
    public var description: String {
        switch self {
        case .alreadyDone: return "already done"
        case .previouslyFailed(let code, let message): return "failed before (\(code): \(message))"
        case .duplicate: return "given twice"
        case .notSent(let reason): return reason
        }
    }

    /// A stable identifier for JSON output: `already-done`, `previously-failed`, `duplicate`, `not-sent`.
    public var code: String {
        switch self {
        case .alreadyDone: return "already-done"
        case .previouslyFailed: return "previously-failed"
        case .duplicate: return "duplicate"
        case .notSent: return "not-sent"
        }
    }
}

/// Something that happened in a batch run. Every file found ends with exactly one of `skipped`,
/// `succeeded`, `failed` (or `wouldSend` in a dry run); the run ends with one `finished`.
public enum BatchEvent: Sendable, Codable {
    /// The walk found a file to consider; totals grow as files are discovered.
    case discovered(BatchFile)
    /// The walk is over: this many files and bytes were found in all.
    case discoveryFinished(files: Int, bytes: Int64)
    /// The file is not sent, and why. Paths the walk does not send have no size (0).
    case skipped(BatchFile, BatchSkipReason)
    /// Dry run only: the file would be sent (`resumed` when an unfinished send would be resumed).
    case wouldSend(BatchFile, resumed: Bool)
    /// Sending began, under this idempotency key (stored in the journal already). `resumed` when the key
    /// comes from a send that a crash or cancellation interrupted.
    case started(BatchFile, idempotencyKey: String, resumed: Bool)
    /// Upload progress (at most about ten per second per file).
    case progress(BatchFile, UploadProgress)
    /// An attempt failed and attempt number `attempt` began.
    case retried(BatchFile, attempt: Int)
    /// The server stored the file, or (``BatchConfiguration/contentReuse``) an upload of the same content
    /// stored before stands for it (the receipt's `dedup` says so); the journal says `done`.
    case succeeded(BatchFile, UploadReceipt)
    /// A stored upload of the same content was not trusted (its receipt is damaged, or with `verify` its
    /// bytes are gone or do not open with its key), so the file is sent; the journal no longer offers it.
    case reuseRefused(BatchFile, reason: String)
    /// The file failed; the journal says `failed` (or `pending` when it was cancelled, so that the next
    /// run sends it).
    case failed(BatchFile, AttacheError)
    /// The run is over.
    case finished(BatchSummary)
}

/// The totals of a batch run.
public struct BatchSummary: Sendable, Codable {
    /// Files found by the walk.
    public var discovered = 0
    /// Files the server stored in this run.
    public var succeeded = 0
    /// Files skipped because the journal says they were stored before.
    public var alreadyDone = 0
    /// Files skipped for any other reason (failed before, duplicates, paths not sent).
    public var skipped = 0
    /// Of the skipped files, those skipped because they failed in an earlier run.
    public var previouslyFailed = 0
    /// Files that failed in this run (cancelled ones included).
    public var failed = 0
    /// Of the failed files, those cancelled while being sent (left `pending` for the next run).
    public var interrupted = 0
    /// Dry run: files that would be sent.
    public var wouldSend = 0
    /// Of the stored files, those resumed from an earlier interrupted run.
    public var resumed = 0
    /// Of the stored files, those the server had already stored (it replayed its receipt).
    public var replayed = 0
    /// Of the stored files, those that took the receipt of an upload of the same content
    /// (``BatchConfiguration/contentReuse``) and sent nothing.
    public var reused = 0
    /// Paths the walk left out by the filter (``BatchConfiguration/filter``), by reason
    /// (``AttacheCore/WalkFilter/Reason`` raw values: `hidden`, `junk`, `excluded`, …); a folder left out
    /// counts once, whatever it holds.
    public var filtered: [String: Int] = [:]
    /// The filter of the journal's previous run, when it was not this run's (`""`: the default one): files
    /// that one took and this one leaves out keep their rows, and are not sent again by this run.
    public var previousFilter: String?
    /// Source bytes of the files sent (reused ones not included).
    public var originalBytes: Int64 = 0
    /// Bytes of the stored files as sent (after recompression and sealing).
    public var sentBytes: Int64 = 0
    /// Seconds from the start of the run to its end.
    public var seconds: Double = 0
    /// True when the run was cancelled before it went through every file.
    public var cancelled = false
    /// The first failures (up to 100), with their path; the journal keeps them all.
    public var failures: [Failure] = []

    /// One failed file.
    public struct Failure: Sendable, Codable {
        /// The file's path.
        public var path: String
        /// The error code (`AttacheError.Code.rawValue`).
        public var code: String
        /// The stage that failed.
        public var stage: String
        /// The error's message.
        public var message: String
    }

    /// Creates an empty summary.
    package init() {}
}
