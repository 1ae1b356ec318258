import Foundation

/// A shell process that signals a process (SIGKILL unless told) once a server's `/stats` count reaches a
/// number.
///
/// It is a process of its own on purpose: in a parallel test run the test process's threads can be
/// starved for many seconds, long enough for a batch to finish before a kill the test itself would send.
package enum StatsKiller {
    /// Polls `statsURL` every 50 ms and sends `signal` (a name `kill` knows: `KILL`, `TERM`, `INT`) to
    /// `pid`, `delay` seconds after the member `key` reached `atLeast`. Ends without a signal when `pid`
    /// has ended (or is a zombie), or after 120 s. Wait for it with ``ChildProcess/wait(upTo:)``.
    package static func start(
        pid: Int32, statsURL: String, key: String, atLeast: Int, delay: Double = 0, signal: String = "KILL"
    ) throws -> ChildProcess {
        let script = """
            pid=$1 url=$2 key=$3 want=$4 delay=$5 signal=$6
            for _ in $(seq 1 2400); do
                state=$(awk '{print $3}' /proc/$pid/stat 2>/dev/null) || exit 0
                [ "$state" = Z ] && exit 0
                n=$(curl -s "$url" | sed -n "s/.*\\"$key\\" *: *\\([0-9]*\\).*/\\1/p")
                if [ -n "$n" ] && [ "$n" -ge "$want" ]; then sleep "$delay"; kill -s "$signal" "$pid" 2>/dev/null; exit 0; fi
                sleep 0.05
            done
            """
        return try ChildProcess(
            executable: "/bin/bash",
            arguments: ["-c", script, "stats-killer", "\(pid)", statsURL, key, "\(atLeast)", String(format: "%.3f", delay), signal])
    }
}
