import Glibc
internal import CProcess

/// Limits for a helper process (ffmpeg, ffprobe) that reads untrusted media.
///
/// CPU time, address space and file size are rlimits the kernel enforces in the child; the wall-clock
/// limit is enforced here, by killing the child's process group.
public struct ProcessLimits: Sendable, Hashable, Codable {
    /// CPU seconds the child may use (RLIMIT_CPU).
    public var cpuSeconds: Int
    /// Bytes of address space the child may map (RLIMIT_AS).
    public var addressSpaceBytes: Int
    /// The largest file the child may write (RLIMIT_FSIZE).
    public var fileSizeBytes: Int
    /// Seconds of real time before the child is killed.
    public var wallSeconds: Double

    /// Creates limits.
    public init(cpuSeconds: Int, addressSpaceBytes: Int, fileSizeBytes: Int, wallSeconds: Double) {
        self.cpuSeconds = cpuSeconds
        self.addressSpaceBytes = addressSpaceBytes
        self.fileSizeBytes = fileSizeBytes
        self.wallSeconds = wallSeconds
    }

    /// For a converter: 10 CPU minutes, 2 GiB of address space, 2 GiB files, 10 minutes of real time.
    public static let conversion = ProcessLimits(
        cpuSeconds: 600, addressSpaceBytes: 2 << 30, fileSizeBytes: 2 << 30, wallSeconds: 600)
    /// For a probe, which reads headers only: 20 CPU seconds, 512 MiB, no files, 30 seconds.
    public static let probe = ProcessLimits(
        cpuSeconds: 20, addressSpaceBytes: 512 << 20, fileSizeBytes: 1 << 20, wallSeconds: 30)
}

/// How a helper process ended.
package struct ProcessOutcome: Sendable {
    /// The exit status, when it exited.
    package var exitStatus: Int32?
    /// The signal that ended it, when one did.
    package var signal: Int32?
    /// Whether it was killed here for running past the wall-clock limit.
    package var timedOut: Bool
    /// The last few KB of what it wrote to standard error, for messages.
    package var standardError: String
    /// CPU seconds it used (user + system).
    package var cpuSeconds: Double
    /// The CPU-time limit it ran under, in seconds.
    package var cpuLimitSeconds: Int

    /// Whether it exited with status 0.
    package var succeeded: Bool { exitStatus == 0 && !timedOut }

    /// A short reason for a failure, for error messages: the limit hit, the signal, or the last line it
    /// printed.
    package var failureReason: String {
        if timedOut { return "killed after the wall-clock limit" }
        if let signal {
            switch signal {
            case SIGXCPU: return "stopped at the CPU-time limit"
            // The kernel's SIGKILL at the CPU-time limit (soft and hard limits are equal, so there is no
            // SIGXCPU, which ffmpeg would catch). It counts by ticks, so the CPU time wait4 reports may fall
            // a little short of the limit.
            case SIGKILL where cpuSeconds >= 0.9 * Double(cpuLimitSeconds):
                return "stopped at the CPU-time limit of \(cpuLimitSeconds) s"
            case SIGKILL: return "killed (SIGKILL: the CPU-time limit, or the system short of memory)"
            case SIGXFSZ: return "stopped at the output-size limit"
            case SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE: return "crashed (signal \(signal))"
            default: return "ended by signal \(signal)"
            }
        }
        let lastLine = standardError.split(whereSeparator: \.isNewline).last.map(String.init) ?? ""
        let status = exitStatus.map { "exit status \($0)" } ?? "failed"
        return lastLine.isEmpty ? status : "\(status): \(TerminalText.escaping(String(lastLine.prefix(300))))"
    }
}

/// Runs a helper program under ``ProcessLimits`` and collects its standard error.
///
/// The child starts in a process group of its own with every descriptor but 0–2 closed, standard input
/// from `/dev/null`, no core dumps and a minimal environment; a wall-clock overrun kills the whole group.
/// Blocking: call it from a pool thread.
package enum ProcessRunner {
    /// Looks `name` up in `PATH` (a name with a slash is taken as it is); nil when it is not there.
    package static func find(_ name: String) -> String? {
        if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":", omittingEmptySubsequences: true) {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Runs `executable` with `arguments` and waits for it.
    ///
    /// - Parameter standardOutput: receives the child's standard output as it arrives; returning false
    ///   stops the child. Nil sends it to `/dev/null`.
    /// - Throws: ``AttacheError`` `.nativeLibrary` in `stage` when the process cannot be started (its
    ///   outcome, failure or not, is returned, not thrown).
    package static func run(
        _ executable: String, _ arguments: [String], limits: ProcessLimits, stage: AttacheError.Stage = .transform,
        standardOutput: ((UnsafeRawBufferPointer) -> Bool)? = nil
    ) throws -> ProcessOutcome {
        let devNull = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard devNull >= 0 else {
            throw AttacheError(.nativeLibrary, stage: stage, "cannot open /dev/null", cause: NativeError.posix())
        }
        defer { close(devNull) }
        var errorPipe: [Int32] = [-1, -1]
        var outputPipe: [Int32] = [-1, -1]
        guard attache_pipe_cloexec(&errorPipe) == 0 else {
            throw AttacheError(.nativeLibrary, stage: stage, "cannot make a pipe", cause: NativeError.posix())
        }
        if standardOutput != nil, attache_pipe_cloexec(&outputPipe) != 0 {
            let cause = NativeError.posix()
            close(errorPipe[0])
            close(errorPipe[1])
            throw AttacheError(.nativeLibrary, stage: stage, "cannot make a pipe", cause: cause)
        }
        var pid: pid_t = 0
        let started: Int32 = withCStrings([executable] + arguments) { argv in
            withCStrings(["PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "AV_LOG_FORCE_NOCOLOR=1"]) { envp in
                var cLimits = attache_process_limits(
                    cpu_seconds: UInt64(max(0, limits.cpuSeconds)),
                    address_space_bytes: UInt64(max(0, limits.addressSpaceBytes)),
                    file_size_bytes: UInt64(max(0, limits.fileSizeBytes)))
                return attache_spawn_limited(
                    executable, argv, envp, &cLimits, devNull, standardOutput != nil ? outputPipe[1] : devNull,
                    errorPipe[1], &pid)
            }
        }
        close(errorPipe[1])
        if standardOutput != nil { close(outputPipe[1]) }
        guard started == 0 else {
            close(errorPipe[0])
            if standardOutput != nil { close(outputPipe[0]) }
            throw AttacheError(
                .nativeLibrary, stage: stage, "cannot start \(PathText.lastComponent(executable))",
                cause: NativeError.posix(started))
        }

        var errorTail: [UInt8] = []
        var errorOpen = true
        var outputOpen = standardOutput != nil
        var timedOut = false
        var stopped = false
        let deadline = monotonicSeconds() + limits.wallSeconds
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while errorOpen || outputOpen {
            let remaining = deadline - monotonicSeconds()
            if remaining <= 0 {
                timedOut = true
                break
            }
            var fds: [pollfd] = []
            if errorOpen { fds.append(pollfd(fd: errorPipe[0], events: Int16(POLLIN), revents: 0)) }
            if outputOpen { fds.append(pollfd(fd: outputPipe[0], events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(remaining * 1000 + 1, 60_000)))
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            for entry in fds where entry.revents != 0 {
                let count = buffer.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR || errno == EAGAIN { continue }
                if count <= 0 {
                    if entry.fd == errorPipe[0] { errorOpen = false } else { outputOpen = false }
                    continue
                }
                if entry.fd == errorPipe[0] {
                    errorTail.append(contentsOf: buffer[0..<count])
                    if errorTail.count > 8192 { errorTail.removeFirst(errorTail.count - 4096) }
                } else if let standardOutput {
                    let keepGoing = buffer.withUnsafeBytes { standardOutput(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                    if !keepGoing {
                        stopped = true
                        break
                    }
                }
            }
            if stopped { break }
        }
        if timedOut || stopped { kill(-pid, SIGKILL) }
        close(errorPipe[0])
        if standardOutput != nil { close(outputPipe[0]) }

        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            if errno != EINTR { break }
        }
        // Anything the child left behind in its group (ffmpeg starts none, but a wrapper might).
        kill(-pid, SIGKILL)
        let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        let exited = status & 0x7f == 0
        return ProcessOutcome(
            exitStatus: exited ? (status >> 8) & 0xff : nil, signal: exited ? nil : status & 0x7f,
            timedOut: timedOut, standardError: String(decoding: errorTail, as: UTF8.self), cpuSeconds: cpu,
            cpuLimitSeconds: limits.cpuSeconds)
    }

    private static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Calls `body` with a NULL-terminated C array of `strings`, valid only inside it.
    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }
}
