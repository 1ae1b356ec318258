import Attache
import AttacheCore
import Foundation

/// Lets through the first progress report of each attempt and then at most one per 100 ms, and notices
/// when a new attempt begins.
final class ProgressThrottle: Sendable {
    private struct State {
        var attempt = 1
        var last = ContinuousClock.now - .seconds(1)
    }

    private let state = LockedValue(State())

    /// Returns whether to emit `progress`, and the new attempt number when a retry began.
    func filter(_ progress: UploadProgress) -> (emit: Bool, retry: Int?) {
        state.withLock { state in
            let now = ContinuousClock.now
            var retry: Int?
            if progress.attempt > state.attempt {
                state.attempt = progress.attempt
                retry = progress.attempt
            }
            let emit = retry != nil || progress.fractionCompleted >= 1 || now - state.last >= .milliseconds(100)
            if emit { state.last = now }
            return (emit, retry)
        }
    }
}

/// What a batch entry keeps of its send: a resumable upload's resource and offset, and an object store's
/// multipart upload, committed to the entry's journal row before the upload goes on. An earlier run's
/// state is read only for an entry that run started (`continuesEarlierSend`).
struct EntryJournal: SendJournal {
    let journal: UploadJournal
    let pool: BlockingPool
    let path: String
    let continuesEarlierSend: Bool

    func resumableState() async -> ResumableState? {
        guard continuesEarlierSend else { return nil }
        return try? await pool.run { [journal, path] in try journal.resumableState(path: path) }
    }

    func record(_ state: ResumableState?) async {
        _ = try? await pool.run { [journal, path] in try journal.recordResumable(path: path, state: state) }
    }

    func multipartRecord() async -> MultipartRecord? {
        guard continuesEarlierSend else { return nil }
        return try? await pool.run { [journal, path] in try journal.multipartRecord(path: path) }
    }

    func record(_ record: MultipartRecord?) async {
        _ = try? await pool.run { [journal, path] in try journal.recordMultipart(path: path, record: record) }
    }
}

extension BatchDriver {
    /// `error` as the batch reports it for `file`: an ``AttacheCore/AttacheError`` naming the file.
    static func attacheError(_ error: any Error, file: String) -> AttacheError {
        if let error = error as? AttacheError { return error.concerning(file) }
        if error is CancellationError {
            return AttacheError(.cancelled, stage: .batch, "cancelled", file: file)
        }
        return AttacheError(.internalError, stage: .batch, "\(error)", file: file)
    }
}
