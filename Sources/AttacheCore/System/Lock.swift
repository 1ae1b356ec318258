package import Glibc

/// The one lock of the package: a POSIX mutex with a condition variable beside it.
///
/// Every lock in Attache is this one (or ``LockedValue``, built on it). It is a pthread mutex
/// because ThreadSanitizer intercepts `pthread_mutex_lock` and `pthread_cond_wait` and so sees each
/// hand-over of state between threads as an ordering; `Synchronization.Mutex` takes its contended
/// path in an uninstrumented futex call, which the race detector cannot see, and then reports state
/// that a transfer hands from thread to thread (caller → curl loop → caller) as a race.
///
/// Both pthread objects live in one heap block of their own, because they must not move. The
/// condition variable costs nothing until ``wait()`` is called; use it for a worker that sleeps until
/// there is work (``BlockingPool``-style queues, the write-behind writer).
///
/// ```swift
/// let lock = Lock()
/// lock.withLock { counter += 1 }
/// ```
package final class Lock: @unchecked Sendable {
    // Checked `Sendable` by hand: the pointers never change, and pthread objects are made to be shared.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private let block: UnsafeMutableRawPointer

    /// Creates an unlocked lock.
    package init() {
        let conditionOffset = Self.conditionOffset
        block = .allocate(
            byteCount: conditionOffset + MemoryLayout<pthread_cond_t>.size,
            alignment: max(MemoryLayout<pthread_mutex_t>.alignment, MemoryLayout<pthread_cond_t>.alignment))
        mutex = block.initializeMemory(as: pthread_mutex_t.self, repeating: pthread_mutex_t(), count: 1)
        condition = (block + conditionOffset)
            .initializeMemory(as: pthread_cond_t.self, repeating: pthread_cond_t(), count: 1)
        let lockStatus = pthread_mutex_init(mutex, nil)
        precondition(lockStatus == 0, "pthread_mutex_init failed: \(lockStatus)")
        let conditionStatus = pthread_cond_init(condition, nil)
        precondition(conditionStatus == 0, "pthread_cond_init failed: \(conditionStatus)")
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        block.deallocate()
    }

    private static var conditionOffset: Int {
        let alignment = MemoryLayout<pthread_cond_t>.alignment
        return (MemoryLayout<pthread_mutex_t>.size + alignment - 1) / alignment * alignment
    }

    /// Takes the lock, waiting for it when another thread holds it.
    @inlinable
    package func lock() { pthread_mutex_lock(mutex) }

    /// Gives the lock back; only the thread that holds it may call this.
    @inlinable
    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` with the lock held.
    @inlinable
    package func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Waits for ``signal()`` or ``broadcast()``; the caller holds the lock and holds it again on return.
    /// Wake-ups may be spurious, so wait in a loop that checks the condition.
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Wakes one thread waiting in ``wait()``.
    package func signal() { pthread_cond_signal(condition) }

    /// Wakes every thread waiting in ``wait()``.
    package func broadcast() { pthread_cond_broadcast(condition) }
}
