import AttacheCore
import Foundation
import Synchronization

/// A real clamd (Debian's `clamav-daemon`) started by a test: a private UNIX socket and a TCP port on
/// 127.0.0.1, a signature database the test makes (no freshclam, no network), stopped by pid.
///
/// The database holds the EICAR test string as a body signature (`Attache.Test.EICAR`) and MD5 hash
/// signatures (`sigtool --md5` style: `md5:size:name`) of the files the test names. clamd 1.4 starts
/// with such a database in well under a second.
package final class ClamdProcess: Sendable {
    /// The folder holding the database, the configuration, the socket and the log.
    package let folder: ScratchFolder
    /// The UNIX socket.
    package let socketPath: String
    /// The TCP port on 127.0.0.1.
    package let port: Int
    private let process = Mutex<ChildProcess?>(nil)

    /// `unix:PATH`, for `--clamd`.
    package var unixAddress: String { "unix:" + socketPath }
    /// `tcp:127.0.0.1:PORT`, for `--clamd`.
    package var tcpAddress: String { "tcp:127.0.0.1:\(port)" }
    /// The daemon's pid while it runs.
    package var processIdentifier: Int32? { process.withLock { $0?.processIdentifier } }

    /// The EICAR anti-virus test file's 68 bytes, put together here so that no source file holds them
    /// whole (a scanner on a developer's machine would quarantine it).
    package static let eicar: [UInt8] = Array(
        ("X5O!P%@AP[4\\PZX54(P^)7CC)7}$" + "EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*").utf8)

    /// The bytes of the test's own hashed sample (signature `Attache.Test.Own`).
    package static let ownSample: [UInt8] = Array("an attachment the test database names by its hash\n".utf8)
        + (0..<4000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }

    /// The files hashed by ``shared()``: clamav-testfiles' `clam.exe` (found also inside the other
    /// `clam.*` archives) and the test's own sample, written to the daemon's folder.
    package static func standardHashes(in folder: ScratchFolder) throws -> [(path: String, name: String)] {
        [
            (testFilesFolder + "/clam.exe", "Attache.Test.ClamExe"),
            (try folder.write("own-sample.bin", ownSample), "Attache.Test.Own"),
        ]
    }

    /// One clamd for the whole test process, with ``standardHashes(in:)``; killed when the process exits.
    package static func shared() async throws -> ClamdProcess {
        let task = sharedClamd.withLock { current -> Task<ClamdProcess, any Error> in
            if let current { return current }
            let started = Task { () throws -> ClamdProcess in
                let scratch = try ScratchFolder(prefix: "attache-clamd-samples")
                let clamd = try await ClamdProcess(hashed: try standardHashes(in: scratch))
                sharedClamdLeftovers.withLock {
                    $0 = (clamd.processIdentifier ?? 0, [clamd.folder.path, scratch.path])
                }
                atexit {
                    let (pid, folders) = sharedClamdLeftovers.withLock { $0 }
                    if pid > 0 {
                        Glibc.kill(pid, SIGKILL)
                        var status: Int32 = 0
                        waitpid(pid, &status, 0)
                    }
                    for folder in folders { try? FileManager.default.removeItem(atPath: folder) }
                }
                return clamd
            }
            current = started
            return started
        }
        return try await task.value
    }

    /// The clamav-testfiles folder (Debian's `clamav-testfiles`).
    package static let testFilesFolder = "/usr/share/clamav-testfiles"

    /// Writes the database and starts clamd; returns when it accepts connections.
    /// - Parameters:
    ///   - hashed: files whose MD5 becomes a hash signature, each with its signature name.
    ///   - streamMaxLength: clamd's `StreamMaxLength` (`25M`, `1M`, …).
    /// - Throws: ``TestFailure`` when clamd is not installed (Scripts/bootstrap.sh installs it) or does not start.
    package init(hashed: [(path: String, name: String)] = [], streamMaxLength: String = "64M") async throws {
        let executable = "/usr/sbin/clamd"
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw TestFailure("clamd is not installed (\(executable)): Scripts/bootstrap.sh installs clamav-daemon")
        }
        folder = try ScratchFolder(prefix: "attache-clamd")
        socketPath = folder.path + "/clamd.sock"
        port = try freePort()
        let hex = Self.eicar.map { String(format: "%02x", $0) }.joined()
        try folder.write("db/attache.ndb", "Attache.Test.EICAR:0:*:\(hex)\n")
        var hashes = ""
        for (path, name) in hashed {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            hashes += "\(try Self.md5(path)):\(bytes.count):\(name)\n"
        }
        if !hashes.isEmpty { try folder.write("db/attache.hdb", hashes) }
        try folder.write(
            "clamd.conf",
            """
            LocalSocket \(socketPath)
            TCPSocket \(port)
            TCPAddr 127.0.0.1
            Foreground yes
            DatabaseDirectory \(folder.path)/db
            LogFile \(folder.path)/clamd.log
            LogTime yes
            StreamMaxLength \(streamMaxLength)
            MaxThreads 8
            MaxQueue 200
            IdleTimeout 60
            SelfCheck 3600
            Bytecode no

            """)
        try await start()
    }

    /// Starts clamd (again, after ``kill()``) and waits until the socket accepts a connection.
    package func start() async throws {
        try? FileManager.default.removeItem(atPath: socketPath)
        let child = try ChildProcess(
            executable: "/usr/sbin/clamd", arguments: ["-c", folder.path + "/clamd.conf"], streams: .merged(keep: 16 << 10))
        process.withLock { $0 = child }
        // A bound on a hang only: clamd loads its small test database in well under a second on a quiet
        // machine, but a fully loaded two-core one has taken over a minute.
        let start = ContinuousClock.now
        func log() -> String {
            String(((try? String(contentsOfFile: folder.path + "/clamd.log", encoding: .utf8)) ?? "").suffix(600))
        }
        while ContinuousClock.now - start < .seconds(240) {
            if child.hasEnded { throw TestFailure("clamd ended at start: \(log()) \(child.outputTail(lines: 10))") }
            if Self.accepts(socketPath) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("clamd did not accept connections within 240 s: \(log())")
    }

    /// SIGKILL by pid, then reap.
    package func kill() {
        guard let child = process.withLock({ current -> ChildProcess? in
            defer { current = nil }
            return current
        }) else { return }
        child.kill()
        child.waitForExit()
    }

    /// SIGSTOP: clamd stops reading and answering, with its connections open.
    package func pause() {
        if let pid = processIdentifier { Glibc.kill(pid, SIGSTOP) }
    }

    /// SIGCONT after ``pause()``.
    package func resume() {
        if let pid = processIdentifier { Glibc.kill(pid, SIGCONT) }
    }

    /// Kills clamd and removes its folder.
    package func stop() {
        resume()
        kill()
        folder.remove()
    }

    /// The MD5 of a file as lower-case hex, by coreutils' `md5sum`.
    package static func md5(_ path: String) throws -> String {
        let output = try run("/usr/bin/md5sum", [path])
        return String(String(decoding: output, as: UTF8.self).prefix(32))
    }

    private static func accepts(_ path: String) -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var name = sockaddr_un()
        name.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &name.sun_path) { target in
            for (index, byte) in path.utf8.prefix(target.count - 1).enumerated() { target[index] = byte }
        }
        return withUnsafePointer(to: &name) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }
}

private let sharedClamd = Mutex<Task<ClamdProcess, any Error>?>(nil)
/// The shared daemon's pid and folders, for the exit handler (a C function pointer captures nothing).
private let sharedClamdLeftovers = Mutex<(Int32, [String])>((0, []))
