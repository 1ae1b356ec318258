import AttacheCore
import Foundation

/// Turns the first of `signals` (SIGINT, and for `batch` SIGTERM too) into a cancellation of the run; a
/// second one exits at once (the journal is consistent at every commit, so nothing is lost but the in-flight
/// files' pending marks).
final class InterruptHandler {
    private let watch: SignalWatch

    init(signals numbers: [Int32] = [SIGINT], onInterrupt: @escaping @Sendable () -> Void) {
        watch = SignalWatch(
            numbers,
            first: { number in
                Console.clearStatus()
                let name = number == SIGINT ? "Ctrl-C" : "SIGTERM"
                Console.err("attache: stopping: no new files; cancelling the ones in flight (\(name) again to quit now)")
                onInterrupt()
            },
            again: { number in
                Console.clearStatus()
                Console.err("attache: quit; run the same command again to resume")
                exit(128 + number)
            })
    }

    var wasTriggered: Bool { watch.received != nil }

    /// The exit status of a run stopped by a signal: 128 + the first signal (130 for Ctrl-C, 143 for
    /// SIGTERM).
    var exitStatus: Int32 { 128 + (watch.received ?? SIGINT) }

    func stop() { watch.stop() }
}
