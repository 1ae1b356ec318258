import Glibc

/// Turns signals into calls instead of their default action, for a command that stops cleanly: the
/// first of `numbers` calls `first`, the second calls `again` (each with the signal's number, on the
/// relay's thread), later ones are ignored. ``stop()`` restores the default actions.
///
/// `batch` and `download` stop their run on the first Ctrl-C or SIGTERM and quit on the second, `worker`
/// finishes its files on the first and cancels them on the second, and an exporting command cancels
/// its work and flushes its spans on the first.
///
/// The handler is in place when `init` returns. A libdispatch signal source is not: on Linux it
/// installs its handler later, from its manager thread, and the `SIG_IGN` it needs meanwhile makes the
/// kernel drop a signal that comes in between (swift-corelibs-libdispatch#231: "if one sends the
/// signal too soon, it is missed"). A batch stopped just after it started then ran on, and lost what
/// the stop was to flush. Here a `sigaction` handler writes the signal's number to a pipe (`write` is
/// safe in a handler), and one thread, which blocks no signal, reads the pipe and calls every watch of
/// that signal.
package final class SignalWatch: Sendable {
    private let numbers: [Int32]
    private let first: @Sendable (Int32) -> Void
    private let again: @Sendable (Int32) -> Void
    /// How many signals arrived, and the first one.
    private let seen = LockedValue<(count: Int, first: Int32?)>((0, nil))

    /// Starts watching `numbers`.
    package init(
        _ numbers: [Int32], first: @escaping @Sendable (Int32) -> Void, again: @escaping @Sendable (Int32) -> Void
    ) {
        self.numbers = numbers
        self.first = first
        self.again = again
        SignalRelay.add(self, for: numbers)
    }

    /// The first signal that arrived, if one did.
    package var received: Int32? { seen.withLock { $0.first } }

    /// Stops watching: the signals no other watch holds have their default actions again.
    package func stop() {
        SignalRelay.remove(self, for: numbers)
    }

    /// Called on the relay's thread for each of its signals that arrived.
    fileprivate func arrived(_ number: Int32) {
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
}

/// The write end of the relay's pipe, for the handler: a plain global, so that reading it in a signal
/// handler takes no lock and runs no initializer.
private nonisolated(unsafe) var signalRelayWriteEnd: Int32 = -1

/// The process's one handler of watched signals: it writes the number, one byte, to the relay's pipe.
private func relaySignal(_ number: Int32) {
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(signalRelayWriteEnd, &byte, 1)
    errno = saved
}

/// The pipe, the thread that reads it, and the watches of each signal.
private enum SignalRelay {
    /// The watches of each signal, in the order they were added.
    static let watches = LockedValue<[Int32: [SignalWatch]]>([:])

    /// Makes the pipe and starts the reading thread, once.
    private static let started: Bool = {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return false }
        // Not inherited by the programs Attache runs (ffmpeg, the scanner's client).
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        signalRelayWriteEnd = ends[1]
        let readEnd = ends[0]
        startDetachedThread(name: "attache-signals") {
            // The threads of Swift's concurrency and of libdispatch block every signal, and a thread starts
            // with its maker's mask: this one takes them all back, so that a signal sent to the process
            // (`kill`, Ctrl-C) has a thread to run the handler on.
            var all = sigset_t()
            sigfillset(&all)
            pthread_sigmask(SIG_UNBLOCK, &all, nil)
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count < 0, errno == EINTR { continue }
                guard count == 1 else { return }
                let number = Int32(byte)
                let receivers = watches.withLock { $0[number] ?? [] }
                for watch in receivers { watch.arrived(number) }
            }
        }
        return true
    }()

    static func add(_ watch: SignalWatch, for numbers: [Int32]) {
        guard started else { return }
        watches.withLock { watches in
            for number in numbers {
                watches[number, default: []].append(watch)
                var action = sigaction()
                action.__sigaction_handler.sa_handler = relaySignal
                action.sa_flags = SA_RESTART
                sigemptyset(&action.sa_mask)
                sigaction(number, &action, nil)
            }
        }
    }

    static func remove(_ watch: SignalWatch, for numbers: [Int32]) {
        watches.withLock { watches in
            for number in numbers {
                watches[number]?.removeAll { $0 === watch }
                if watches[number]?.isEmpty ?? true {
                    watches[number] = nil
                    signal(number, SIG_DFL)
                }
            }
        }
    }
}
