import Attache
import AttacheCore
import Foundation

/// The run's task and the tasks of the files in flight, so that one file or all can be cancelled.
final class BatchControl: Sendable {
    private struct State {
        var driver: Task<Void, Never>?
        var cancelAllRequested = false
        var files: [BatchFileID: Task<UploadReceipt, any Error>] = [:]
        var cancelled: Set<BatchFileID> = []
    }

    private let state = LockedValue(State())

    func setDriver(_ task: Task<Void, Never>) {
        let cancelNow = state.withLock { state -> Bool in
            state.driver = task
            return state.cancelAllRequested
        }
        if cancelNow { task.cancel() }
    }

    func cancelAll() {
        let driver = state.withLock { state -> Task<Void, Never>? in
            state.cancelAllRequested = true
            return state.driver
        }
        driver?.cancel()
    }

    func cancel(_ id: BatchFileID) {
        let task = state.withLock { state -> Task<UploadReceipt, any Error>? in
            if let task = state.files[id] { return task }
            state.cancelled.insert(id)
            return nil
        }
        task?.cancel()
    }

    /// Registers a file's send; cancels it at once when its cancellation was asked for earlier.
    func register(_ id: BatchFileID, _ task: Task<UploadReceipt, any Error>) {
        let cancelNow = state.withLock { state -> Bool in
            state.files[id] = task
            return state.cancelled.remove(id) != nil
        }
        if cancelNow { task.cancel() }
    }

    func unregister(_ id: BatchFileID) {
        _ = state.withLock { $0.files.removeValue(forKey: id) }
    }

    func isCancelled(_ id: BatchFileID) -> Bool {
        state.withLock { $0.cancelled.contains(id) }
    }
}
