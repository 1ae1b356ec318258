#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A re-openable source of bytes whose exact length is known before the first byte is read.
///
/// Every stage after Transform is a `ByteSource` wrapping the one before it (file → sealer →
/// base64), so the uploader can state an exact `Content-Length` and pull the body in bounded chunks.
/// Opening a source again yields the same bytes: that is what makes a retried upload identical.
public protocol ByteSource: Sendable {
    /// The exact number of bytes every reader of this source produces.
    var byteCount: Int64 { get }

    /// Opens a new reader positioned at the first byte.
    /// - Throws: ``AttacheError`` when the underlying file cannot be opened.
    func makeReader() throws -> any ByteReader
}

/// One pass over a ``ByteSource``, used by one thread at a time.
public protocol ByteReader: AnyObject {
    /// Copies up to `buffer.count` bytes into `buffer` and returns how many; returns 0 only at the end.
    /// - Throws: ``AttacheError`` when reading fails or the source no longer matches its length.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

extension ByteReader {
    /// Reads until `buffer` is full or the source ends; returns how many bytes were read.
    public func readFully(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var filled = 0
        while filled < buffer.count {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
            if n == 0 { break }
            filled += n
        }
        return filled
    }
}

/// Bytes held in memory: form fields, small parts, tests.
public struct DataSource: ByteSource {
    /// The bytes.
    public let bytes: [UInt8]

    /// Creates a source over `bytes`.
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    /// Creates a source over the UTF-8 bytes of `string`.
    public init(_ string: String) { self.bytes = Array(string.utf8) }

    public var byteCount: Int64 { Int64(bytes.count) }

    public func makeReader() throws -> any ByteReader { Reader(bytes: bytes) }

    private final class Reader: ByteReader {
        let bytes: [UInt8]
        var offset = 0
        init(bytes: [UInt8]) { self.bytes = bytes }
        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            let n = min(buffer.count, bytes.count - offset)
            guard n > 0 else { return 0 }
            bytes.withUnsafeBytes { source in
                buffer.baseAddress!.copyMemory(from: source.baseAddress! + offset, byteCount: n)
            }
            offset += n
            return n
        }
    }
}

/// A file on disk, read with plain `read(2)` in the caller's chunk size.
///
/// The size and modification time are taken when the source is created. A reader that finds the file
/// shorter or longer than that, or modified since, fails with ``AttacheError/Code/fileChanged``
/// instead of sending a body that contradicts its `Content-Length`.
public struct FileSource: ByteSource {
    /// The file's path.
    public let path: String
    /// The size seen when the source was created.
    public let byteCount: Int64
    /// The modification time seen when the source was created, in nanoseconds since the epoch.
    public let modificationTime: Int64

    /// Creates a source for the file at `path`, recording its size and modification time.
    /// - Throws: ``AttacheError`` with `.fileNotFound` or `.fileUnreadable`.
    public init(path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            throw AttacheError(
                code == ENOENT ? .fileNotFound : .fileUnreadable, stage: .read,
                code == ENOENT ? "no such file" : "cannot stat the file: \(String(cString: strerror(code)))",
                file: path, cause: NativeError.posix(code))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw AttacheError(.fileUnreadable, stage: .read, "not a regular file", file: path)
        }
        self.path = path
        self.byteCount = Int64(info.st_size)
        self.modificationTime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }

    public func makeReader() throws -> any ByteReader {
        try Reader(source: self)
    }

    private final class Reader: ByteReader {
        let source: FileSource
        let descriptor: Int32
        var remaining: Int64

        init(source: FileSource) throws {
            self.source = source
            let fd = open(source.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let code = errno
                throw AttacheError(
                    code == ENOENT ? .fileNotFound : .fileUnreadable, stage: .read,
                    "cannot open the file: \(String(cString: strerror(code)))",
                    file: source.path, cause: NativeError.posix(code))
            }
            self.descriptor = fd
            self.remaining = source.byteCount
            _ = posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        }

        deinit { close(descriptor) }

        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            guard buffer.count > 0 else { return 0 }
            if remaining == 0 {
                // One more byte past the recorded size means the file grew.
                var probe: UInt8 = 0
                let extra = Glibc.read(descriptor, &probe, 1)
                if extra > 0 { throw changed("the file grew while it was being read") }
                try checkUnmodified()
                return 0
            }
            let want = Int(min(Int64(buffer.count), remaining))
            while true {
                let n = Glibc.read(descriptor, buffer.baseAddress, want)
                if n > 0 {
                    remaining -= Int64(n)
                    return n
                }
                if n == 0 { throw changed("the file shrank while it was being read") }
                if errno == EINTR { continue }
                let code = errno
                throw AttacheError(
                    .fileUnreadable, stage: .read, "read failed: \(String(cString: strerror(code)))",
                    file: source.path, cause: NativeError.posix(code))
            }
        }

        private func checkUnmodified() throws {
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { return }
            let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
            if mtime != source.modificationTime || Int64(info.st_size) != source.byteCount {
                throw changed("the file was modified while it was being read")
            }
        }

        private func changed(_ message: String) -> AttacheError {
            AttacheError(.fileChanged, stage: .read, message, file: source.path, isRetryable: true)
        }
    }
}

/// Several sources one after the other, as one source.
public struct ConcatenatedSource: ByteSource {
    /// The parts, in order.
    public let parts: [any ByteSource]

    /// Creates a source that yields every part in order.
    public init(_ parts: [any ByteSource]) { self.parts = parts }

    public var byteCount: Int64 { parts.reduce(0) { $0 + $1.byteCount } }

    public func makeReader() throws -> any ByteReader { Reader(parts: parts) }

    private final class Reader: ByteReader {
        let parts: [any ByteSource]
        var index = 0
        var current: (any ByteReader)?
        init(parts: [any ByteSource]) { self.parts = parts }

        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            while index < parts.count {
                if current == nil { current = try parts[index].makeReader() }
                let n = try current!.read(into: buffer)
                if n > 0 { return n }
                current = nil
                index += 1
            }
            return 0
        }
    }
}
