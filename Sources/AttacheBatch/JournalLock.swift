import Attache
import AttacheCore
import Foundation

/// An exclusive, advisory lock that keeps two batch runs off one journal.
///
/// SQLite would let two runs share the database, each claiming files and resuming the other's
/// `inFlight` rows: the server's idempotency keys would still prevent duplicates, but both runs would
/// send the same bytes and report each other's files. The lock is `flock(2)` on `<journal>.lock`, held
/// for the run and released by the kernel when the process ends in any way (`kill -9` included), so a
/// crashed run never leaves a stale lock behind. The file itself stays (removing it would let a third
/// process lock a different file of the same name); it holds the pid of the last run, for the message.
///
/// A child process that this process forks holds a copy of the descriptor, and so of the lock, from the
/// fork until its `exec` closes it (the descriptor is `O_CLOEXEC`), which can take a while on a busy
/// machine. A journal closed and opened again at such a moment finds its own process's lock still held
/// by no journal of this process: that lock is waited for (at most about a second), where a lock held
/// by another process, or by another open journal of this one, is refused at once.
final class JournalLock: Sendable {
    private let descriptor: LockedValue<Int32>
    private let node: FileNode

    /// The lock files this process's open journals hold.
    private static let held = LockedValue<Set<FileNode>>([])

    /// Locks the journal at `journalPath`, or throws `.journalBusy` naming the process that holds it
    /// (`holder` says what kind of run that is).
    init(journalPath: String, holder: String = "attache batch", stage: AttacheError.Stage = .batch) throws {
        let path = journalPath + ".lock"
        let fd = FileDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600)
        guard fd >= 0 else {
            throw AttacheError.system("cannot create the journal's lock file", .journal, stage: stage, file: path)
        }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            let reason = errno
            close(fd)
            throw AttacheError.system("cannot read the journal's lock file", errno: reason, .journal, stage: stage, file: path)
        }
        let node = FileNode(status)
        var reason = flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno
        var waits = 0
        while reason == EWOULDBLOCK, waits < 40, Self.readPid(fd) == getpid(),
            !Self.held.withLock({ $0.contains(node) })
        {
            // This process's own lock, held by no journal of it: a child in the middle of starting.
            usleep(25_000)
            waits += 1
            reason = flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno
        }
        guard reason == 0 else {
            let pid = Self.readPid(fd)
            close(fd)
            guard reason == EWOULDBLOCK else {
                throw AttacheError.system("cannot lock the journal", errno: reason, .journal, stage: stage, file: journalPath)
            }
            let who = pid.map { "another \(holder) (pid \($0))" } ?? "another \(holder)"
            throw AttacheError(
                .journalBusy, stage: stage,
                "\(who) is using this journal; wait for it to end, or give this run another journal",
                file: journalPath)
        }
        let pid = "\(getpid())\n"
        if ftruncate(fd, 0) == 0 {
            _ = pid.utf8CString.withUnsafeBufferPointer { pwrite(fd, $0.baseAddress, $0.count - 1, 0) }
        }
        descriptor = LockedValue(fd)
        self.node = node
        Self.held.withLock { _ = $0.insert(node) }
    }

    /// Releases the lock (closing the descriptor releases the flock); also done on deinit.
    func unlock() {
        let fd = descriptor.withLock { fd -> Int32 in
            defer { fd = -1 }
            return fd
        }
        if fd >= 0 {
            Self.held.withLock { _ = $0.remove(node) }
            close(fd)
        }
    }

    deinit { unlock() }

    private static func readPid(_ fd: Int32) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: bytes[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Int32(text)
    }
}
