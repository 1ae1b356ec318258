/// Idle clamd sessions kept for the next scan, so that `batch` and `worker` use one connection (and one
/// `VERSION`) for many files instead of one per file.
///
/// A session is taken by one scan at a time and given back only when it answered a verdict; one
/// left idle longer than ``maximumIdle`` is closed rather than reused, before clamd's own
/// `IdleTimeout` (30 s by default) closes it under us.
final class ClamdSessionPool: Sendable {
    /// Idle sessions kept at most.
    let capacity: Int
    /// Idle time after which a session is not reused.
    let maximumIdle: Duration

    // The connections are not `Sendable`; each is reached by one thread at a time: the one that took
    // it out of this box under its lock.
    private let idle = LockedValue<[ClamdConnection]>([])
    private let openedCount = LockedValue(0)

    /// Sessions opened so far (each began with one `VERSION`).
    var opened: Int { openedCount.withLock { $0 } }

    /// Creates an empty pool.
    init(capacity: Int, maximumIdle: Duration = .seconds(20)) {
        self.capacity = capacity
        self.maximumIdle = maximumIdle
    }

    /// Runs `body` with a session: an idle one when there is one, else a new one. When a reused session
    /// turns out to be closed (clamd restarted, or ended it), `body` runs once more on a new session.
    /// With `reusing` false, `body` runs once, on a new session (for a body that must not run twice).
    /// Blocking: call it from a ``AttacheCore/BlockingPool`` thread.
    func withSession<T>(
        reusing: Bool = true, connect: () throws -> ClamdConnection, _ body: (ClamdConnection) throws -> T
    ) throws -> T {
        var reused = reusing ? take() : nil
        while true {
            let connection: ClamdConnection
            if let reused {
                connection = reused
            } else {
                connection = try connect()
                openedCount.withLock { $0 += 1 }
            }
            do {
                let result = try body(connection)
                giveBack(connection)
                return result
            } catch let error as AttacheError where reused != nil && error.code == .connectionLost {
                connection.close()
                reused = nil
            } catch {
                connection.close()
                throw error
            }
        }
    }

    /// Closes every idle session.
    func closeAll() {
        let all = idle.withLock { sessions -> [ClamdConnection] in
            defer { sessions.removeAll() }
            return sessions
        }
        for connection in all { connection.close() }
    }

    private func take() -> ClamdConnection? {
        let now = ContinuousClock.now
        let (fresh, stale) = idle.withLock { sessions -> (ClamdConnection?, [ClamdConnection]) in
            let stale = sessions.filter { now - $0.lastUsed > maximumIdle }
            sessions.removeAll { now - $0.lastUsed > maximumIdle }
            return (sessions.popLast(), stale)
        }
        for connection in stale { connection.close() }
        return fresh
    }

    private func giveBack(_ connection: ClamdConnection) {
        guard connection.isReusable else {
            connection.close()
            return
        }
        let kept = idle.withLock { sessions -> Bool in
            guard sessions.count < capacity else { return false }
            sessions.append(connection)
            return true
        }
        if !kept { connection.close() }
    }
}
