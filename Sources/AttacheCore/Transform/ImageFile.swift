import Glibc

/// Whole-file reads and writes for images, which are decoded from memory.
package enum ImageFile {
    /// Reads the file at `path`, refusing files larger than `limit` bytes before reading them.
    package static func read(_ path: String, limit: Int) throws -> [UInt8] {
        let fd = try FileDescriptor.openForReading(path, stage: .transform)
        defer { close(fd) }
        return try read(fd, size: checkedSize(fd, path: path, limit: limit), path: path)
    }

    /// Opens the file at `path` for a decoder that reads it a piece at a time, when it is a PNG (nil
    /// otherwise): a 12 MP photo saved as PNG is 28 MB, which need never be held whole. Files larger than
    /// `limit` bytes are refused as ``read(_:limit:)`` refuses them.
    package static func openPNG(_ path: String, limit: Int) throws -> OpenImageFile? {
        let fd = try FileDescriptor.openForReading(path, stage: .transform)
        do {
            let size = try checkedSize(fd, path: path, limit: limit)
            var signature = [UInt8](repeating: 0, count: 8)
            let n = signature.withUnsafeMutableBytes { FileDescriptor.read(fd, into: $0, at: 0) }
            guard n == 8, signature == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] else {
                close(fd)
                return nil
            }
            return OpenImageFile(fd: fd, size: size, path: path)
        } catch {
            close(fd)
            throw error
        }
    }

    private static func checkedSize(_ fd: Int32, path: String, limit: Int) throws -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw AttacheError(.fileUnreadable, stage: .transform, "not a regular file", file: path)
        }
        let size = Int(info.st_size)
        guard size <= limit else {
            throw AttacheError(.limitExceeded, stage: .transform,
                               "the image file is \(size) bytes, over the limit of \(limit)", file: path)
        }
        return size
    }

    fileprivate static func read(_ fd: Int32, size: Int, path: String) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        var filled = 0
        while filled < size {
            let n = bytes.withUnsafeMutableBytes {
                FileDescriptor.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...]), at: Int64(filled))
            }
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

/// An image file kept open for a decoder that reads it a piece at a time (``ImageFile/openPNG(_:limit:)``);
/// closed when the last reference goes.
package final class OpenImageFile {
    /// The open file.
    let fd: Int32
    /// Its size when opened.
    let size: Int
    /// Its path, for messages.
    let path: String

    fileprivate init(fd: Int32, size: Int, path: String) {
        self.fd = fd
        self.size = size
        self.path = path
    }

    deinit { close(fd) }

    /// The whole file, for the rare use that needs it at once (an opaque PNG sent as a PNG).
    package func readAll() throws -> [UInt8] {
        try ImageFile.read(fd, size: size, path: path)
    }
}
