internal import AttacheCore

/// Writes journal records in order, off the caller's thread (progress arrives on the transport's),
/// several at a time in one commit.
final class JournalWriter: Sendable {
    private struct State {
        var pending: [DownloadRecord] = []
        var draining = false
        var idle: [CheckedContinuation<Void, Never>] = []
        var error: AttacheError?
    }

    private let journal: any DownloadJournaling
    private let state = LockedValue(State())

    init(_ journal: any DownloadJournaling) { self.journal = journal }

    func enqueue(_ record: DownloadRecord) {
        let start = state.withLock { state -> Bool in
            state.pending.append(record)
            if state.draining { return false }
            state.draining = true
            return true
        }
        if start { Task { await self.drain() } }
    }

    /// Waits until every record enqueued so far is committed; throws the first failure.
    func flush() async throws {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            state.withLock { state in
                if state.draining { state.idle.append(waiter) } else { waiter.resume() }
            }
        }
        if let error = state.withLock({ $0.error }) { throw error }
    }

    private func drain() async {
        let journal = self.journal
        while true {
            let batch = state.withLock { state -> [DownloadRecord] in
                defer { state.pending = [] }
                return state.pending
            }
            if batch.isEmpty {
                let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
                    guard state.pending.isEmpty else { return nil }
                    state.draining = false
                    defer { state.idle = [] }
                    return state.idle
                }
                guard let waiters else { continue }
                for waiter in waiters { waiter.resume() }
                return
            }
            do {
                try await BlockingPool.shared.run { try journal.save(batch) }
            } catch {
                let failure = error as? AttacheError
                    ?? AttacheError(.journal, stage: .download, "cannot write the download journal: \(error)")
                state.withLock { if $0.error == nil { $0.error = failure } }
            }
        }
    }
}
