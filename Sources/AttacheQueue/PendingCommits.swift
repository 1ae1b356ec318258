import Attache
import AttacheCore
import Foundation
import PostgresNIO

/// Commits under way in the background; the worker waits for them before it reports or exits.
final class PendingCommits: Sendable {
    private struct State {
        var count = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = LockedValue(State())

    /// How many are under way.
    var count: Int { state.withLock { $0.count } }

    /// Runs `body` in a task of its own (not cancelled with the worker: a result must still be recorded).
    func run(_ body: @escaping @Sendable () async -> Void) {
        state.withLock { $0.count += 1 }
        Task {
            await body()
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.count -= 1
                guard state.count == 0 else { return [] }
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Returns when none is under way.
    func waitUntilEmpty() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.count == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}
