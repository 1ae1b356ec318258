internal import AttacheCore
import Glibc

/// The SHA-256 of a `.part` file's first ``count`` bytes, kept up to date as a download appends to it, so
/// a finished download is not read a second time to be checked.
final class RunningHash: @unchecked Sendable {
    private let digest: SHA256Digest
    private var covered: Int64 = 0
    /// One attempt uses the hash from several threads in turn (a pool job catches it up, the transport's
    /// thread appends the body); the lock makes each hand-over an ordering a race detector can see too.
    private let lock = Lock()

    init() throws { digest = try SHA256Digest() }

    /// How many bytes from the start of the file the hash covers.
    var count: Int64 { lock.withLock { covered } }

    /// Starts over at byte 0 (a 200 answer replaces the file).
    func reset() throws {
        try lock.withLock { try resetLocked() }
    }

    /// Adds bytes just written at offset ``count``.
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        try lock.withLock { try appendLocked(bytes) }
    }

    /// Makes the hash cover exactly the first `length` bytes of the file at `path`, reading only the
    /// bytes it has not seen (all of them after ``reset()`` or when the file became shorter).
    func catchUp(toLength length: Int64, ofFile path: String) throws {
        try lock.withLock {
            if covered > length { try resetLocked() }
            guard covered < length else { return }
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw AttacheError(.fileUnreadable, stage: .download, "cannot read the partial file back",
                                   file: path, cause: NativeError.posix())
            }
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: 1 << 18)
            while covered < length {
                let want = Int(min(Int64(buffer.count), length - covered))
                let offset = covered
                let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, want, off_t(offset)) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else {
                    throw AttacheError(.fileUnreadable, stage: .download, "the partial file is shorter than expected",
                                       file: path, cause: n < 0 ? NativeError.posix() : nil)
                }
                try buffer.withUnsafeBytes { try appendLocked(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
            }
        }
    }

    /// The hex digest of what the hash covers; the hash then starts over at byte 0.
    func finishHex() throws -> String {
        try lock.withLock {
            let text = hex(try digest.finish())
            try resetLocked()
            return text
        }
    }

    private func resetLocked() throws {
        try digest.restart()
        covered = 0
    }

    private func appendLocked(_ bytes: UnsafeRawBufferPointer) throws {
        try digest.update(bytes)
        covered += Int64(bytes.count)
    }
}
