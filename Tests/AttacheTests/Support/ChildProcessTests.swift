import AttacheTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The tests' one child runner (``ChildProcess``): its end is read by a `waitpid` of its own, its waits
/// are bounded, and what it starts begins with default signal dispositions.
@Suite struct ChildProcessTests {
    @Test func anExitStatusAndTheOutputAreRead() async throws {
        let result = try await ChildProcess.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 7"])
        #expect(result.status == 7)
        #expect(result.standardOutput == "out\n")
        #expect(result.standardError == "err\n")
        let zero = try ChildProcess.runBlocking("sh", ["-c", "cat"], input: Data("fed\n".utf8))
        #expect(zero.status == 0 && String(decoding: zero.output, as: UTF8.self) == "fed\n")
    }

    @Test func aSignalIsRead() async throws {
        let child = try ChildProcess(executable: "/bin/sleep", arguments: ["30"])
        #expect(try await child.wait(upTo: 0.2) == nil)
        #expect(!child.hasEnded && !child.endedBySignal)
        child.kill()
        #expect(try await child.wait(upTo: 30) == SIGKILL)
        #expect(child.endedBySignal)
        // Signalling a child that has been reaped does nothing (its pid may be another process's now).
        child.kill()
    }

    /// A signal armed on the output goes the moment the output holds the text that many times: the child
    /// prints three lines and then waits for ever, so only the armed signal ends it, and only after the
    /// second line (its output holds both). One armed for text already there goes at once.
    @Test func aSignalArmedOnTheOutputGoesAtItsMoment() async throws {
        let child = try ChildProcess(
            executable: "/bin/sh", arguments: ["-c", "echo tick; sleep 0.2; echo tick; sleep 0.2; echo tock; exec sleep 60"])
        try child.signal(SIGTERM, whenOutputHolds: "tick", count: 2)
        #expect(try await child.wait(upTo: 30) == SIGTERM)
        #expect(child.standardOutput.hasPrefix("tick\ntick\n"))
        #expect(!child.standardOutput.contains("tock"), "the signal went late: \(child.standardOutput)")

        let ready = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "echo ready; exec sleep 60"])
        try await ready.waitForOutput(containing: "ready", count: 1, upTo: 30)
        try ready.signal(SIGINT, whenOutputHolds: "ready", count: 1)
        #expect(try await ready.wait(upTo: 30) == SIGINT)
    }

    /// A child that leaves one of its own holding the output pipe still ends when it ends: the wait reads
    /// the end from `waitpid`, not from the pipe. No clock decides it (a loaded machine stretches any
    /// bound): the grandchild sleeps for ten minutes, longer than the wait may take, and must still be
    /// there when the wait has answered.
    @Test func anEndIsSeenWhileAGrandchildHoldsTheOutput() async throws {
        let child = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "sleep 600 & echo started; exit 3"])
        defer { _ = try? ChildProcess.runBlocking("pkill", ["-KILL", "-g", String(child.processIdentifier)]) }
        try await child.waitForOutput(containing: "started", count: 1, upTo: 30)
        #expect(try await child.wait(upTo: 60) == 3)
        // The child was the leader of its process group; the grandchild is in it still.
        #expect(Glibc.kill(-child.processIdentifier, 0) == 0, "the wait answered only after the grandchild ended")
    }

    /// A signal ignored in this process (as SIGINT and SIGTERM are while a command run in-process watches
    /// them) is not ignored in a child started meanwhile: an ignored disposition would survive its exec.
    /// SIGUSR2 stands in for them here, since nothing else in the tests uses it.
    @Test func aChildStartsWithDefaultSignalDispositions() async throws {
        let previous = signal(SIGUSR2, SIG_IGN)
        defer { signal(SIGUSR2, previous) }
        let child = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "grep SigIgn /proc/self/status"])
        #expect(try await child.wait(upTo: 30) == 0)
        let mask = child.standardOutput.split(separator: "\t").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        let ignored = try #require(mask.flatMap { UInt64($0, radix: 16) }, "\(child.standardOutput)")
        // Bit n-1 stands for signal n.
        #expect(ignored & (1 << (UInt64(SIGUSR2) - 1)) == 0, "\(child.standardOutput)")
    }
}
