import Foundation

/// A process that signals a batch (SIGKILL unless told) once its journal holds a number of finished files:
/// the kill moment for runs whose server has no `/stats` to count (an object store).
///
/// Like ``StatsKiller`` it is a process of its own, so that a test process starved of threads in a parallel
/// run cannot let the batch finish before the kill; it reads the SQLite journal read-only with Python's
/// `sqlite3` (the journal is in WAL mode, so reading never blocks the batch's commits).
package enum JournalKiller {
    /// Polls `journal` every 50 ms and sends `signal` to `pid`, `delay` seconds after its `done` files
    /// reached `atLeast`. Ends without a signal when `pid` has ended (or is a zombie), or after 120 s.
    /// Wait for it with ``ChildProcess/wait(upTo:)``.
    package static func start(
        pid: Int32, journal: String, atLeast: Int, delay: Double = 0, signal: Int32 = SIGKILL
    ) throws -> ChildProcess {
        let script = """
            import os, sqlite3, sys, time
            pid, journal, want, delay, signal = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
            def alive():
                try:
                    with open(f"/proc/{pid}/stat") as stat:
                        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
                except OSError:
                    return False
            def done():
                try:
                    with sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=5) as db:
                        return db.execute("SELECT count(*) FROM file WHERE state = 'done'").fetchone()[0]
                except sqlite3.Error:
                    return 0
            for _ in range(2400):
                if not alive():
                    sys.exit(0)
                if done() >= want:
                    time.sleep(delay)
                    try:
                        os.kill(pid, signal)
                    except OSError:
                        pass
                    sys.exit(0)
                time.sleep(0.05)
            """
        return try ChildProcess(
            executable: "/usr/bin/python3",
            arguments: ["-c", script, "\(pid)", journal, "\(atLeast)", String(format: "%.3f", delay), "\(signal)"])
    }

    /// The `done` files in `journal` now (0 when it does not exist yet).
    package static func doneCount(journal: String) async throws -> Int {
        guard FileManager.default.fileExists(atPath: journal) else { return 0 }
        let script = """
            import sqlite3, sys
            with sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=30) as db:
                print(db.execute("SELECT count(*) FROM file WHERE state = 'done'").fetchone()[0])
            """
        let reader = try ChildProcess(executable: "/usr/bin/python3", arguments: ["-c", script, journal])
        guard try await reader.wait(upTo: 60) == 0, let count = Int(reader.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw TestFailure("cannot count the journal's done files: \(reader.standardError)") }
        return count
    }
}
