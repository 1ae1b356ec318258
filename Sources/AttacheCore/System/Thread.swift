import Glibc
internal import CLibc

/// Starts a detached POSIX thread that runs `body`.
///
/// AttacheCore links no Foundation, which rules out `Thread`; the blocking pool, the write-behind
/// writer and the parallel sealer start their threads here.
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
    var thread = pthread_t()
    let status = pthread_create(&thread, &attributes, { argument in
        let job = Unmanaged<Job>.fromOpaque(argument!).takeRetainedValue()
        _ = attache_name_current_thread(job.name)
        job.body()
        return nil
    }, job)
    // Failing to start a thread means the process is out of resources; nothing sensible can go on.
    precondition(status == 0, "pthread_create failed: \(status)")
}
