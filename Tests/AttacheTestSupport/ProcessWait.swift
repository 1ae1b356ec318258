import Foundation

extension Process {
    /// Blocks until the process has ended and returns its exit status (the signal's number when a
    /// signal ended it), sleeping between looks (half a millisecond at first, at most 5 ms apart).
    ///
    /// Use it instead of Foundation's `waitUntilExit()`, which runs the calling thread's run loop until
    /// the end: on any thread but the one that called `run()`, that run loop has nothing to wait on and
    /// returns at once, so the wait spins a core for as long as the child runs. A test that runs
    /// `attache` and waits on a thread of its own paid a core for the whole run; over the suite that was
    /// about 30 % of the test process's CPU (docs/RELIABILITY.md).
    ///
    /// Foundation learns of the end from SIGCHLD, and has been seen to miss it: the child stayed a
    /// zombie that `isRunning` called running for good, and a wait on it hung a whole test run. So once
    /// a second the kernel is asked too (`/proc/PID/stat`); a child that has been a zombie for five
    /// seconds while Foundation still calls it running is taken as ended, with the status the kernel
    /// keeps for it. Read the status from the result, not from `terminationStatus`, which Foundation
    /// refuses to give for a process it thinks still runs.
    @discardableResult
    package func waitForExit() -> Int32 {
        var pause: useconds_t = 500
        var lastLook = ContinuousClock.now
        var zombieSince: ContinuousClock.Instant?
        while isRunning {
            usleep(pause)
            pause = min(pause * 2, 5_000)
            let now = ContinuousClock.now
            guard now - lastLook >= .seconds(1) else { continue }
            lastLook = now
            guard let status = Self.zombieStatus(processIdentifier) else {
                zombieSince = nil
                continue
            }
            if let since = zombieSince {
                if now - since >= .seconds(5) { return status }
            } else {
                zombieSince = now
            }
        }
        return terminationStatus
    }

    /// The exit status of `pid` when it is a zombie (ended, not yet reaped), the signal's number when a
    /// signal ended it; nil while it runs or once it is gone (``zombieEnd(_:)``).
    package static func zombieStatus(_ pid: Int32) -> Int32? {
        zombieEnd(pid)?.status
    }

    /// How `pid` ended when it is a zombie, from the `state` and `exit_code` fields of `/proc/PID/stat`
    /// (`proc(5)`): the status, or the signal's number and `bySignal`. Nil while it runs or once it is
    /// gone. The one place the tests read a child's end from the kernel (``waitForExit()``,
    /// ``ChildProcess/wait(upTo:)``).
    package static func zombieEnd(_ pid: Int32) -> (status: Int32, bySignal: Bool)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // The fields after the command name, which is in parentheses and may hold spaces: state is
        // field 3 of the whole line, exit_code field 52.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.first == "Z", fields.count >= 50, let code = Int32(fields[49].trimmingCharacters(in: .whitespacesAndNewlines))
        else { return nil }
        // The encoding of `wait(2)`: the low 7 bits are the signal that ended it, else bits 8-15 the status.
        let signal = code & 0x7F
        return signal != 0 ? (signal, true) : ((code >> 8) & 0xFF, false)
    }
}
