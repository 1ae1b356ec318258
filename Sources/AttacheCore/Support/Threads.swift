#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if os(Linux)
internal import CLibc
#endif

/// A mutex with a condition variable, on POSIX threads.
///
/// AttacheCore avoids Foundation (so the front executable starts fast), which rules out `NSCondition`
/// and `Thread`; these two small wrappers are what the blocking pool and the write-behind writer need.
/// The pthread objects live in heap memory of their own because they must not move.
package final class ConditionLock: @unchecked Sendable {
    // Checked `Sendable` by hand: the pointers never change, and pthread objects are made to be shared.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        let lockStatus = pthread_mutex_init(mutex, nil)
        precondition(lockStatus == 0, "pthread_mutex_init failed: \(lockStatus)")
        let conditionStatus = pthread_cond_init(condition, nil)
        precondition(conditionStatus == 0, "pthread_cond_init failed: \(conditionStatus)")
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }
    package func unlock() { pthread_mutex_unlock(mutex) }
    /// Waits for a signal; the caller holds the lock, and holds it again on return.
    package func wait() { pthread_cond_wait(condition, mutex) }
    package func signal() { pthread_cond_signal(condition) }
    package func broadcast() { pthread_cond_broadcast(condition) }
}

/// Starts a detached POSIX thread that runs `body`.
///
/// - Parameters:
///   - name: shown by `top -H` and debuggers (at most 15 bytes are kept on Linux).
///   - stackSize: bytes of stack; nil keeps the system default.
package func startDetachedThread(name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
    final class Job {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    if let stackSize { pthread_attr_setstacksize(&attributes, stackSize) }
    let job = Unmanaged.passRetained(Job(name: name, body: body)).toOpaque()
    #if canImport(Darwin)
    var thread: pthread_t?
    #else
    var thread = pthread_t()
    #endif
    let status = pthread_create(&thread, &attributes, { argument in
        let job = Unmanaged<Job>.fromOpaque(argument!).takeRetainedValue()
        #if canImport(Darwin)
        _ = pthread_setname_np(String(job.name.utf8.prefix(15))!)
        #else
        _ = attache_name_current_thread(job.name)
        #endif
        job.body()
        return nil
    }, job)
    // Failing to start a thread means the process is out of resources; nothing sensible can go on.
    precondition(status == 0, "pthread_create failed: \(status)")
}
