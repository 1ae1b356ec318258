import Foundation

extension Process {
    /// Blocks until the process has ended, sleeping between looks (half a millisecond at first, at most
    /// 5 ms apart).
    ///
    /// Use it instead of Foundation's `waitUntilExit()`, which runs the calling thread's run loop until
    /// the end: on any thread but the one that called `run()`, that run loop has nothing to wait on and
    /// returns at once, so the wait spins a core for as long as the child runs. A test that runs
    /// `attache` and waits on a thread of its own paid a core for the whole run; over the suite that was
    /// about 30 % of the test process's CPU (docs/RELIABILITY.md).
    package func waitForExit() {
        var pause: useconds_t = 500
        while isRunning {
            usleep(pause)
            pause = min(pause * 2, 5_000)
        }
    }
}
