#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Whole-file reads and writes for images, which are decoded from memory.
package enum ImageFile {
    /// Reads the file at `path`, refusing files larger than `limit` bytes before reading them.
    package static func read(_ path: String, limit: Int) throws -> [UInt8] {
        let fd = PlatformPath.withCString(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else {
            let code = errno
            throw AttacheError(code == ENOENT ? .fileNotFound : .fileUnreadable, stage: .transform,
                               code == ENOENT ? "no such file" : "cannot open the file: \(String(cString: strerror(code)))",
                               file: path, cause: NativeError.posix(code))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw AttacheError(.fileUnreadable, stage: .transform, "not a regular file", file: path)
        }
        let size = Int(info.st_size)
        guard size <= limit else {
            throw AttacheError(.limitExceeded, stage: .transform,
                               "the image file is \(size) bytes, over the limit of \(limit)", file: path)
        }
        var bytes = [UInt8](repeating: 0, count: size)
        var filled = 0
        while filled < size {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, size - filled) }
            if n > 0 { filled += n; continue }
            if n == 0 { break }
            if errno == EINTR { continue }
            let code = errno
            throw AttacheError(.fileUnreadable, stage: .transform, "read failed: \(String(cString: strerror(code)))",
                               file: path, cause: NativeError.posix(code))
        }
        if filled < size { bytes.removeLast(size - filled) }
        return bytes
    }

    /// Writes `bytes` to `path`, replacing it.
    package static func write(_ bytes: [UInt8], to path: String) throws {
        let fd = PlatformPath.withCString(path) { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        guard fd >= 0 else {
            let code = errno
            throw AttacheError(.fileUnwritable, stage: .transform,
                               "cannot create the output file: \(String(cString: strerror(code)))",
                               file: path, cause: NativeError.posix(code))
        }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n > 0 { written += n; continue }
            if n < 0 && errno == EINTR { continue }
            let code = errno
            throw AttacheError(.fileUnwritable, stage: .transform, "write failed: \(String(cString: strerror(code)))",
                               file: path, cause: NativeError.posix(code))
        }
    }
}
