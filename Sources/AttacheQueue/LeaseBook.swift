import Attache
import AttacheCore
import Foundation

/// The leases this process holds and until when it may trust them (its own clock: a paused process
/// finds them expired when it wakes, before it asks the database).
final class LeaseBook: Sendable {
    private let state = LockedValue<[Int64: (token: Int64, until: ContinuousClock.Instant)]>([:])

    func hold(_ job: QueueJob, until: ContinuousClock.Instant) {
        state.withLock { $0[job.id] = (job.leaseToken, until) }
    }

    func isHeld(_ id: Int64) -> Bool {
        state.withLock { state in
            guard let lease = state[id] else { return false }
            if lease.until > .now { return true }
            state[id] = nil
            return false
        }
    }

    /// Forgets `job`'s lease: only that lease, by its token. The same row claimed again meanwhile (its
    /// result committed as a retry, then taken by this worker's next claim before this call) carries a
    /// new token, and that lease stays.
    func drop(_ job: QueueJob) {
        state.withLock { state in
            if state[job.id]?.token == job.leaseToken { state[job.id] = nil }
        }
    }

    func held() -> [(id: Int64, token: Int64)] {
        state.withLock { $0.map { ($0.key, $0.value.token) } }
    }

    /// Extends the leases the database renewed; the others of those asked about were taken over (or
    /// committed meanwhile) and are forgotten. Leases taken after the question (a new token for the
    /// same row) are left alone.
    func renew(_ renewed: Set<Int64>, of asked: [(id: Int64, token: Int64)], until: ContinuousClock.Instant) {
        state.withLock { state in
            for (id, token) in asked {
                guard let lease = state[id], lease.token == token else { continue }
                state[id] = renewed.contains(id) ? (token, until) : nil
            }
        }
    }
}
