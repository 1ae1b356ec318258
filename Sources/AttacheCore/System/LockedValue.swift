/// A value that is only reached with a ``Lock`` held: the one locked-value box of the package.
///
/// The same shape as `Synchronization.Mutex` (`withLock` hands the value in as `inout`), but on the
/// pthread ``Lock``, so that ThreadSanitizer sees every hand-over (see ``Lock`` for why that matters).
///
/// ```swift
/// let count = LockedValue(0)
/// count.withLock { $0 += 1 }
/// ```
package final class LockedValue<Value: ~Copyable>: @unchecked Sendable {
    // Checked `Sendable` by hand: the value is reached only under the lock. Unlike `Mutex`, the
    // value is not `sending`: the transport keeps non-`Sendable` curl handles here on purpose and
    // hands them between its loop thread and callers, each access ordered by the lock.
    // Inlinable, with its storage usable from inlined code: called from other modules, `withLock` was an
    // unspecialized generic call that looked up the box's metadata on each use (several hundred
    // instructions, on every span, metric and transfer).
    @usableFromInline let lock = Lock()
    @usableFromInline var value: Value

    /// Creates a box holding `value`.
    @inlinable
    package init(_ value: consuming Value) {
        self.value = value
    }

    /// Runs `body` on the value with the lock held and returns what it returns.
    @inlinable
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
