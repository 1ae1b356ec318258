import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A TCP socket bound to a free port of 127.0.0.1, listening when a backlog is given: its descriptor
/// and port. Bound and not listening, the port refuses every connection and stays taken.
package func bindLoopback(listening backlog: Int32?) throws -> (descriptor: Int32, port: Int) {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { throw TestFailure("cannot make a socket") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0, backlog.map({ listen(descriptor, $0) == 0 }) ?? true else {
        close(descriptor)
        throw TestFailure("cannot listen on 127.0.0.1")
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
}

/// A port on 127.0.0.1 with nothing listening (connections are refused).
package func refusedPort() throws -> Int {
    // A port bound and never listened on refuses every connection, and stays ours: a port bound and
    // closed again could be handed to another test's server running in parallel. The descriptor is
    // kept open for the life of the test process on purpose.
    try bindLoopback(listening: nil).port
}

/// A port nothing listens on now, for a server started later on it (another process may take it in
/// between, which the kernel makes unlikely by handing out ports in turn).
package func freePort() throws -> Int {
    let (descriptor, port) = try bindLoopback(listening: nil)
    close(descriptor)
    return port
}

/// A listening socket that never accepts: the kernel completes each connection and takes the
/// request bytes, and no answer ever comes. What an upstream stalled by an overload looks like, and a
/// port to which an upload stays in flight until it is cancelled.
package final class SilentListener: Sendable {
    package let port: Int
    private let descriptor: Int32

    package init(backlog: Int32 = 2048) throws {
        (descriptor, port) = try bindLoopback(listening: backlog)
    }

    deinit { close(descriptor) }
}

/// A port on 127.0.0.1 that accepts each connection and resets it at once, counting them: a server that
/// is there and never answers, whose clients' attempts can be awaited one by one instead of slept
/// through. ``stop()`` frees the port for a real server.
package final class ResettingListener: Sendable {
    package let port: Int
    private let descriptor: Int32
    private let state = Mutex(State())
    private let closed = DispatchSemaphore(value: 0)

    private struct State {
        var count = 0
        var waiters: [(target: Int, continuation: CheckedContinuation<Bool, Never>)] = []
    }

    package init() throws {
        let (descriptor, port) = try bindLoopback(listening: 128)
        self.descriptor = descriptor
        self.port = port
        // Accepting blocks, so on a thread of its own, never on the cooperative pool.
        Thread.detachNewThread { [self] in acceptUntilStopped() }
    }

    /// The connections accepted so far.
    package var connections: Int { state.withLock { $0.count } }

    /// Waits until `count` connections have been accepted (true), or `seconds` have passed (false).
    package func waitForConnections(_ count: Int, upTo seconds: Double) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let reached = state.withLock { state -> Bool in
                if state.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if reached {
                continuation.resume(returning: true)
                return
            }
            Task { [self] in
                try? await Task.sleep(for: .seconds(seconds))
                let expired = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
                    let expired = state.waiters.filter { $0.target == count }.map(\.continuation)
                    state.waiters.removeAll { $0.target == count }
                    return expired
                }
                for waiter in expired { waiter.resume(returning: false) }
            }
        }
    }

    /// Stops accepting and closes the socket; when it returns, the port is free.
    package func stop() {
        shutdown(descriptor, Int32(SHUT_RDWR))
        closed.wait()
    }

    private func acceptUntilStopped() {
        while true {
            let client = accept(descriptor, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                close(descriptor)
                closed.signal()
                return
            }
            // SO_LINGER 0: close sends a reset, so no connection lingers in TIME_WAIT on the port.
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            close(client)
            let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
                state.count += 1
                let count = state.count
                let ready = state.waiters.filter { $0.target <= count }.map(\.continuation)
                state.waiters.removeAll { $0.target <= count }
                return ready
            }
            for waiter in ready { waiter.resume(returning: true) }
        }
    }
}
