import Synchronization
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

@Suite("AsyncLimiter")
struct AsyncLimiterTests {
    /// Counts the tasks inside and remembers the most seen at once.
    final class Gauge: Sendable {
        private let state = Mutex((inside: 0, most: 0))
        func enter() { state.withLock { $0.inside += 1; $0.most = max($0.most, $0.inside) } }
        func leave() { state.withLock { $0.inside -= 1 } }
        var most: Int { state.withLock { $0.most } }
    }

    @Test(arguments: [1, 2, 3])
    func neverAdmitsMoreThanItsLimit(limit: Int) async throws {
        let limiter = AsyncLimiter(limit: limit)
        let gauge = Gauge()
        try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<24 {
                group.addTask {
                    try await limiter.run {
                        gauge.enter()
                        defer { gauge.leave() }
                        // Give the others every chance to get in while this one is inside.
                        for _ in 0..<20 { await Task.yield() }
                        return i
                    }
                }
            }
            var done = Set<Int>()
            for try await i in group { done.insert(i) }
            #expect(done == Set(0..<24))
        }
        #expect(gauge.most <= limit)
        #expect(gauge.most >= 1)
    }

    @Test func aTaskCancelledWhileWaitingThrowsAndGivesUpItsTurn() async throws {
        let limiter = AsyncLimiter(limit: 1)
        let (entered, enteredContinuation) = AsyncStream<Void>.makeStream()
        let (release, releaseContinuation) = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await limiter.run {
                enteredContinuation.yield()
                for await _ in release { break }
            }
        }
        var iterator = entered.makeAsyncIterator()
        await iterator.next()

        let waiter = Task { try await limiter.run { "got in" } }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { _ = try await waiter.value }

        releaseContinuation.yield()
        try await holder.value
        // The place is free again.
        #expect(try await limiter.run { "after" } == "after")
    }
}
