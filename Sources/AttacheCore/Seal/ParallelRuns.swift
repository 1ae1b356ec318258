import Glibc

/// Runs numbered jobs on a few threads — the caller's and up to ``maximumThreads`` − 1 detached ones —
/// each thread claiming the next job in increasing order.
///
/// `stream-gcm` segments are independent and their positions in both files are pure functions of the
/// plaintext length, so runs of segments can be sealed and written in any order; this is what spreads
/// the work of a large file over the machine's cores.
///
/// When a job throws, no further job is claimed; jobs already claimed finish. Because jobs are claimed
/// in order, the error reported is the one of the lowest-numbered failing job, as a single thread
/// working through the jobs in order would have reported it.
///
/// Checked `Sendable` by hand: `next`, `failure` and `running` are read and written only while
/// `condition` is locked.
final class ParallelRuns: @unchecked Sendable {
    /// More threads than this gain nothing: two already make the page-cache copies the limit.
    static let maximumThreads = 4

    private let jobCount: Int64
    private let condition = Lock()
    private var next: Int64 = 0
    private var failure: (job: Int64, error: any Error)?
    private var running = 0

    private init(jobCount: Int64) {
        self.jobCount = jobCount
    }

    /// The number of threads worth using for `jobCount` jobs on this machine.
    static func threadCount(forJobs jobCount: Int64) -> Int {
        let processors = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        return Int(min(Int64(min(processors, maximumThreads)), max(1, jobCount)))
    }

    /// Runs jobs `0..<jobCount`, with `threads` threads, and returns when every thread has stopped.
    ///
    /// `makeWorker` runs once on each thread and returns that thread's job function, so per-thread
    /// state (a cipher context, a buffer) is created and used on one thread only.
    /// - Throws: the error of the lowest-numbered failing job, or of a failed `makeWorker`.
    static func run(
        jobCount: Int64, threads: Int,
        makeWorker: @escaping @Sendable () throws -> (Int64) throws -> Void
    ) throws {
        let runs = ParallelRuns(jobCount: jobCount)
        let threads = max(1, threads)
        runs.running = threads
        for index in 1..<threads {
            startDetachedThread(name: "attache-seal-\(index)") { runs.work(makeWorker) }
        }
        runs.work(makeWorker)
        runs.condition.lock()
        while runs.running > 0 { runs.condition.wait() }
        let failure = runs.failure
        runs.condition.unlock()
        if let failure { throw failure.error }
    }

    private func work(_ makeWorker: @Sendable () throws -> (Int64) throws -> Void) {
        do {
            let job = try makeWorker()
            while let index = claim() {
                do {
                    try job(index)
                } catch {
                    record(error, job: index)
                }
            }
        } catch {
            record(error, job: -1)
        }
        condition.lock()
        running -= 1
        condition.broadcast()
        condition.unlock()
    }

    private func claim() -> Int64? {
        condition.lock()
        defer { condition.unlock() }
        guard failure == nil, next < jobCount else { return nil }
        next += 1
        return next - 1
    }

    private func record(_ error: any Error, job: Int64) {
        condition.lock()
        if failure == nil || job < failure!.job { failure = (job, error) }
        condition.unlock()
    }
}
