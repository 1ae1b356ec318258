import AttacheCore
@testable import AttacheQueue
import Testing

/// The worker's own record of its leases, without a database: a row claimed again under a new token
/// keeps that lease when the earlier claim's result lands or an earlier heartbeat answers.
@Suite("Lease book")
struct LeaseBookTests {
    private func job(_ id: Int64, token: Int64) -> QueueJob {
        QueueJob(
            id: id, path: "/f\(id)", byteCount: 1, modificationTime: 0, sha256: nil, idempotencyKey: "k\(id)",
            sealMaterial: .random(for: .streamGCM), scheme: .streamGCM, attempt: 1, leaseToken: token)
    }

    /// A retry commits, the next claim takes the row again (token 2), then the first commit's
    /// bookkeeping drops the lease: the second lease must stay, or the worker skips its own job and the
    /// row waits for its lease to run out (seen as a file parked `lease-expired` in a loaded run).
    @Test func droppingAnEarlierClaimKeepsTheNewOne() {
        let book = LeaseBook()
        let first = job(5, token: 1)
        let second = job(5, token: 2)
        book.hold(first, until: .now + .seconds(60))
        book.hold(second, until: .now + .seconds(60))
        book.drop(first)
        #expect(book.isHeld(5))
        book.drop(second)
        #expect(!book.isHeld(5))
    }

    /// A heartbeat that asked about token 1 and got no renewal forgets only that lease.
    @Test func aHeartbeatAboutAnEarlierClaimKeepsTheNewOne() {
        let book = LeaseBook()
        book.hold(job(7, token: 1), until: .now + .seconds(60))
        let asked = book.held()
        book.hold(job(7, token: 2), until: .now + .seconds(60))
        book.hold(job(8, token: 3), until: .now + .seconds(60))
        book.renew([], of: asked + [(id: 8, token: 3)], until: .now + .seconds(60))
        #expect(book.isHeld(7))
        #expect(!book.isHeld(8))
    }
}
