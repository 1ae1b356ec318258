internal import AttacheCore
import Glibc

/// The file an answer's body is streamed into, from the transport's thread: the one place that opens
/// it, writes every byte (through `EINTR`) and closes it, for every sink that writes to disk (a
/// download's `.part` file, a request's output file).
///
/// Owned by one sink (it cannot be copied), which closes it when it is done; it closes itself when
/// the sink goes. Each failing call returns the `errno`, for the sink to turn into its own error.
struct ResponseBodyFile: ~Copyable {
    private(set) var descriptor: Int32 = -1

    var isOpen: Bool { descriptor >= 0 }

    init() {}

    deinit {
        if descriptor >= 0 { Glibc.close(descriptor) }
    }

    /// Opens `path` for writing (created with mode 0644): emptied when `offset` is nil, else positioned
    /// at `offset` with the bytes before it kept. Closes a file opened before. Returns the `errno` of a
    /// failure.
    mutating func open(_ path: String, at offset: Int64? = nil) -> Int32? {
        _ = close()
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (offset == nil ? O_TRUNC : 0)
        let opened = FileDescriptor.open(path, flags, mode: 0o644)
        guard opened >= 0 else { return errno }
        if let offset, lseek(opened, off_t(offset), SEEK_SET) < 0 {
            let code = errno
            Glibc.close(opened)
            return code
        }
        descriptor = opened
        return nil
    }

    /// Writes all of `bytes`; returns the `errno` of a failure.
    func write(_ bytes: UnsafeRawBufferPointer) -> Int32? {
        FileDescriptor.writeAll(descriptor, bytes)
    }

    /// Closes the file, if open; returns the `errno` when closing failed (the last writes may not have
    /// reached the disk).
    mutating func close() -> Int32? {
        guard descriptor >= 0 else { return nil }
        let closed = Glibc.close(descriptor)
        descriptor = -1
        return closed == 0 ? nil : errno
    }
}

/// An answer's body kept in memory up to a limit: the rule every collecting sink keeps.
struct CappedBody {
    let limit: Int
    private(set) var bytes: [UInt8] = []
    /// True once a piece went past ``limit`` (cut there).
    private(set) var exceededCap = false

    init(limit: Int) { self.limit = limit }

    /// Empties it for a new answer (after a 1xx or a redirect), keeping the storage.
    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        exceededCap = false
    }

    /// Keeps `piece`, cut at the limit; false once the limit is passed (the sink then stops reading).
    mutating func append(_ piece: UnsafeRawBufferPointer) -> Bool {
        if bytes.count + piece.count > limit {
            bytes.append(contentsOf: piece.prefix(limit - bytes.count))
            exceededCap = true
            return false
        }
        bytes.append(contentsOf: piece)
        return true
    }
}
