import Dispatch
import Glibc

/// A pool of dedicated threads for blocking C work (curl transfers, codecs, file hashing), so that
/// none of it runs on Swift's cooperative thread pool.
///
/// Threads are started on demand up to `maximumThreads` and then reused; jobs beyond that wait in
/// FIFO order. Concurrent uploads therefore run on separate OS threads and use every core.
package final class BlockingPool: Sendable {
    /// The pool the library uses unless told otherwise: up to 64 threads, because most jobs wait on
    /// the network rather than on a core; callers bound concurrency themselves.
    package static let shared = BlockingPool(maximumThreads: 64)

    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var head = 0
        var threads = 0
        var idle = 0
    }

    private let maximumThreads: Int
    private let state = LockedValue(State())
    private let available = DispatchSemaphore(value: 0)

    /// Creates a pool that starts at most `maximumThreads` threads.
    package init(maximumThreads: Int) {
        precondition(maximumThreads > 0, "a pool needs at least one thread")
        self.maximumThreads = maximumThreads
    }

    /// Runs `body` on a pool thread and returns its result.
    ///
    /// Cancelling the calling task does not interrupt `body`; blocking work that can be stopped
    /// checks a flag of its own (see the uploader's progress callback).
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            submit {
                continuation.resume(with: Result { try body() })
            }
        }
    }

    private func submit(_ job: @escaping @Sendable () -> Void) {
        let startThread = state.withLock { state -> Bool in
            state.jobs.append(job)
            // Start a thread only when the waiting jobs outnumber the threads waiting for work.
            let pending = state.jobs.count - state.head
            guard pending > state.idle, state.threads < maximumThreads else { return false }
            state.threads += 1
            return true
        }
        if startThread {
            startDetachedThread(name: "attache-blocking", stackSize: 1 << 20) { [self] in workerLoop() }
        }
        available.signal()
    }

    private func workerLoop() {
        while true {
            state.withLock { $0.idle += 1 }
            available.wait()
            let job = state.withLock { state -> (@Sendable () -> Void)? in
                state.idle -= 1
                guard state.head < state.jobs.count else { return nil }
                let job = state.jobs[state.head]
                state.head += 1
                if state.head > 64, state.head * 2 > state.jobs.count {
                    state.jobs.removeFirst(state.head)
                    state.head = 0
                }
                return job
            }
            job?()
        }
    }
}
