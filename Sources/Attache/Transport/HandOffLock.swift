internal import AttacheCore

/// A value behind a pthread mutex, for the state that hands a transfer from one thread to another
/// (caller → loop → caller). `Synchronization.Mutex` would do as a lock, but its contended path runs
/// in an uninstrumented library, so ThreadSanitizer could not see those hand-overs as orderings and
/// would report every transfer's state as a race; pthread mutexes it sees.
final class HandOffLock<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = PThreadLock()

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
