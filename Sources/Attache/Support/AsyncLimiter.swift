
/// Lets at most `limit` tasks into a section at a time; the others wait, first come first served.
///
/// The pipeline uses one to keep image transforms, which are CPU- and memory-heavy, to about one per
/// core however many uploads are in flight: more would not finish sooner, and each holds its decoded
/// planes (about 12 MB for a 12 MP photo) while it waits for a core.
package final class AsyncLimiter: Sendable {
    /// The most tasks inside at once.
    package let limit: Int
    private let state: LockedValue<State>

    private struct State {
        var inside = 0
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    /// Creates a limiter admitting `limit` tasks (at least 1) at a time.
    package init(limit: Int) {
        self.limit = max(1, limit)
        self.state = LockedValue(State())
    }

    /// Runs `body` once fewer than ``limit`` tasks are inside.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while it waits; whatever `body` throws.
    package func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await enter()
        defer { leave() }
        return try await body()
    }

    /// Tasks inside now (can exceed ``limit`` after ``forceEnter()``).
    package var inside: Int { state.withLock { $0.inside } }

    /// Tasks waiting to get in.
    package var waiting: Int { state.withLock { $0.waiters.count } }

    /// Enters when there is room, without waiting; returns whether it did.
    package func tryEnter() -> Bool {
        state.withLock { state in
            guard state.inside < limit else { return false }
            state.inside += 1
            return true
        }
    }

    /// Enters at once, even over the limit (the caller must not wait but must be counted).
    package func forceEnter() {
        state.withLock { $0.inside += 1 }
    }

    /// Enters, waiting in line while ``limit`` tasks are inside.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while it waits.
    package func enter() async throws {
        let id = state.withLock { state -> UInt64? in
            if state.inside < limit {
                state.inside += 1
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Bool? in
                    if state.cancelled.remove(id) != nil { return false }
                    if state.inside < limit {
                        state.inside += 1
                        return true
                    }
                    state.waiters.append((id, continuation))
                    return nil
                }
                switch outcome {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: CancellationError())
                case nil: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Leaves; the place passes straight to the first waiter, if there is room for it.
    package func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.inside -= 1
            guard state.inside < limit, !state.waiters.isEmpty else { return nil }
            state.inside += 1
            return state.waiters.removeFirst().continuation
        }
        next?.resume()
    }
}
