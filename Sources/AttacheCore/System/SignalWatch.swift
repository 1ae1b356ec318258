import Dispatch
import Glibc

/// Turns signals into calls instead of their default action, for a command that stops cleanly: the
/// first of `numbers` calls `first`, the second calls `again` (each with the signal's number, on a
/// dispatch queue), later ones are ignored. ``stop()`` restores the default actions.
///
/// `batch` and `download` stop their run on the first Ctrl-C or SIGTERM and quit on the second, `worker`
/// finishes its files on the first and cancels them on the second, and an exporting command cancels
/// its work and flushes its spans on the first.
package final class SignalWatch {
    private let sources: [any DispatchSourceSignal]
    private let numbers: [Int32]
    /// How many signals arrived, and the first one (signal sources run on any thread).
    private let seen = LockedValue<(count: Int, first: Int32?)>((0, nil))

    /// Starts watching `numbers`.
    package init(
        _ numbers: [Int32], first: @escaping @Sendable (Int32) -> Void, again: @escaping @Sendable (Int32) -> Void
    ) {
        self.numbers = numbers
        var sources: [any DispatchSourceSignal] = []
        for number in numbers {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [seen] in
                let count = seen.withLock { seen in
                    seen.count += 1
                    if seen.first == nil { seen.first = number }
                    return seen.count
                }
                if count == 1 {
                    first(number)
                } else if count == 2 {
                    again(number)
                }
            }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    /// The first signal that arrived, if one did.
    package var received: Int32? { seen.withLock { $0.first } }

    /// Stops watching: the signals have their default actions again.
    package func stop() {
        for source in sources { source.cancel() }
        for number in numbers { signal(number, SIG_DFL) }
    }
}
