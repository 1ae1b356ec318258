import AttacheTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The tests' own child wait (``Foundation/Process/waitForExit()``) reads the end of a child that
/// Foundation has not seen from `/proc`: checked here on children started without Foundation, so that
/// none of them is reaped before the test looks.
@Suite struct ProcessWaitTests {
    /// Starts `/bin/sh -c script` with `posix_spawn`, and returns its pid.
    static func spawn(_ script: String) throws -> pid_t {
        var pid: pid_t = 0
        let arguments = ["/bin/sh", "-c", script]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let result = posix_spawn(&pid, "/bin/sh", nil, nil, &argv, environ)
        guard result == 0 else { throw TestFailure("posix_spawn: \(result)") }
        return pid
    }

    /// Waits (at most 10 s) until `pid` is a zombie and returns what the wait reads for it, then reaps it.
    static func endOf(_ pid: pid_t) async throws -> Int32? {
        defer {
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
        }
        for _ in 0..<1000 {
            if let status = Process.zombieStatus(pid) { return status }
            try await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    @Test func anExitStatusIsRead() async throws {
        #expect(try await Self.endOf(try Self.spawn("exit 7")) == 7)
        #expect(try await Self.endOf(try Self.spawn("exit 0")) == 0)
    }

    @Test func aSignalIsRead() async throws {
        #expect(try await Self.endOf(try Self.spawn("kill -KILL $$")) == SIGKILL)
    }

    @Test func aRunningChildIsNotAZombie() async throws {
        let pid = try Self.spawn("sleep 30")
        defer {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(Process.zombieStatus(pid) == nil)
        #expect(Process.zombieStatus(-1) == nil)
    }
}
