import AttacheCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// ``SignalWatch`` hears a signal that comes the moment it has started: its handler is in place when
/// `init` returns. (Its libdispatch source installed the handler later, from its manager thread, and a
/// signal in between was dropped, 200 times in 200 for one sent right after `resume()`: a batch stopped
/// just after it started ran on.)
@Suite(.serialized) struct SignalWatchTests {
    @Test func aSignalRightAfterTheWatchStartsIsHeard() async throws {
        for _ in 0..<50 {
            let heard = LockedValue<[Int32]>([])
            let arrived = DispatchSemaphore(value: 0)
            let watch = SignalWatch(
                [SIGUSR2],
                first: { number in
                    heard.withLock { $0.append(number) }
                    arrived.signal()
                },
                again: { _ in })
            kill(getpid(), SIGUSR2)
            let result = arrived.wait(timeout: .now() + 10)
            watch.stop()
            #expect(result == .success)
            #expect(heard.withLock { $0 } == [SIGUSR2])
            if result != .success { return }
        }
    }

    @Test func theSecondSignalCallsAgainAndStopRestoresTheDefault() async throws {
        let calls = LockedValue<[String]>([])
        let heard = DispatchSemaphore(value: 0)
        let watch = SignalWatch(
            [SIGUSR2],
            first: { _ in
                calls.withLock { $0.append("first") }
                heard.signal()
            },
            again: { _ in
                calls.withLock { $0.append("again") }
                heard.signal()
            })
        // One after the other: two of a signal sent before the first is handled are one (POSIX).
        kill(getpid(), SIGUSR2)
        #expect(heard.wait(timeout: .now() + 10) == .success)
        kill(getpid(), SIGUSR2)
        #expect(heard.wait(timeout: .now() + 10) == .success)
        #expect(calls.withLock { $0 } == ["first", "again"])
        #expect(watch.received == SIGUSR2)
        watch.stop()
        var action = sigaction()
        sigaction(SIGUSR2, nil, &action)
        #expect(action.__sigaction_handler.sa_handler == nil)  // SIG_DFL
    }
}
