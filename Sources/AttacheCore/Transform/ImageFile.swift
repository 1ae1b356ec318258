import Glibc

/// Whole-file reads and writes for images, which are decoded from memory.
package enum ImageFile {
    /// Reads the file at `path`, refusing files larger than `limit` bytes before reading them.
    package static func read(_ path: String, limit: Int) throws -> [UInt8] {
        let fd = try FileDescriptor.openForReading(path, stage: .transform)
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
            let n = bytes.withUnsafeMutableBytes { FileDescriptor.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }
            if n > 0 { filled += n; continue }
            if n == 0 { break }
            throw AttacheError.system("read failed", stage: .transform, file: path)
        }
        if filled < size { bytes.removeLast(size - filled) }
        return bytes
    }

    /// Writes `bytes` to `path`, replacing it.
    package static func write(_ bytes: [UInt8], to path: String) throws {
        let fd = FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        guard fd >= 0 else {
            throw AttacheError.system("cannot create the output file", .fileUnwritable, stage: .transform, file: path)
        }
        defer { close(fd) }
        if let code = bytes.withUnsafeBytes({ FileDescriptor.writeAll(fd, $0) }) {
            throw AttacheError.system("write failed", errno: code, .fileUnwritable, stage: .transform, file: path)
        }
    }
}
