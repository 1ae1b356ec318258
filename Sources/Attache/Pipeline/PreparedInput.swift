import FoundationEssentials
import Glibc

/// An attachment's bytes made ready for the stages: a file on disk, or bytes in memory. A stream is read
/// to its end here, into memory up to ``Attachment/streamMemoryLimit`` and into a spool file in a
/// private directory (mode 0700, the file 0600) beyond, which ``remove()`` deletes.
struct PreparedInput: Sendable {
    enum Content: Sendable {
        case file(String)
        case memory([UInt8])
    }

    let content: Content
    private let spoolDirectory: String?

    init(_ attachment: Attachment, filename: String) async throws {
        switch attachment.content {
        case .file:
            content = .file(attachment.path)
            spoolDirectory = nil
        case .bytes(let bytes):
            content = .memory(bytes)
            spoolDirectory = nil
        case .stream(let stream, let expected):
            (content, spoolDirectory) = try await Self.drain(stream, expected: expected, filename: filename)
        }
    }

    /// Deletes the spool, if there is one.
    func remove() {
        if let spoolDirectory { try? FileManager.default.removeItem(atPath: spoolDirectory) }
    }

    /// Writes `bytes` to a new file `name` in `directory` (mode 0600) and returns its path.
    static func write(_ bytes: [UInt8], into directory: String, name: String) throws -> String {
        let path = PathText.appending(name, to: directory)
        let spool = try Spool(path: path)
        defer { spool.close() }
        try spool.append(bytes)
        return path
    }

    private static func drain(_ stream: AttachmentStream, expected: Int64?, filename: String) async throws
        -> (Content, String?)
    {
        if let expected, expected < 0 {
            throw AttacheError(.invalidArgument, stage: .read, "a stream's byte count cannot be negative")
        }
        let limit = Attachment.streamMemoryLimit
        var memory: [UInt8] = []
        if let expected, expected <= Int64(limit) { memory.reserveCapacity(Int(expected)) }
        var spool: Spool?
        var directory: String?
        var total: Int64 = 0
        do {
            try await stream.forEachChunk { chunk in
                total += Int64(chunk.count)
                if let expected, total > expected {
                    throw AttacheError(
                        .corruptInput, stage: .read, "the stream yielded more than the \(expected) bytes it declared")
                }
                if let open = spool {
                    try open.append(chunk)
                } else if memory.count + chunk.count <= limit {
                    memory += chunk
                } else {
                    // Past the memory limit: everything so far, and all that follows, goes to a spool
                    // file named like the attachment (detection reads its extension).
                    let made = try AttachmentPipeline.makeWorkDirectory()
                    directory = made
                    let name = PlatformPath.displayName(PathText.lastComponent(filename))
                    let open = try Spool(path: PathText.appending(name.isEmpty ? "input" : name, to: made))
                    spool = open
                    try open.append(memory)
                    memory = []
                    try open.append(chunk)
                }
                try Task.checkCancellation()
            }
        } catch {
            spool?.close()
            if let directory { try? FileManager.default.removeItem(atPath: directory) }
            if let error = error as? AttacheError { throw error }
            if error is CancellationError { throw error }
            throw AttacheError(
                .fileUnreadable, stage: .read, "the attachment's stream failed: \(error)",
                cause: error)
        }
        if let expected, total != expected {
            spool?.close()
            if let directory { try? FileManager.default.removeItem(atPath: directory) }
            throw AttacheError(
                .corruptInput, stage: .read, "the stream ended after \(total) of the \(expected) bytes it declared")
        }
        if let spool {
            spool.close()
            return (.file(spool.path), directory)
        }
        return (.memory(memory), nil)
    }
}

/// A new file written front to back, mode 0600.
private final class Spool: @unchecked Sendable {
    let path: String
    private var descriptor: Int32

    init(path: String) throws {
        self.path = path
        descriptor = PlatformPath.withCString(path) { open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }
        guard descriptor >= 0 else {
            throw AttacheError(
                .fileUnwritable, stage: .read, "cannot create a spool file", file: path, cause: NativeError.posix())
        }
    }

    func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            if let code = FileDescriptor.writeAll(descriptor, raw) {
                throw AttacheError.system("cannot write the spool file", errno: code, .fileUnwritable, stage: .read, file: path)
            }
        }
    }

    func close() {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        descriptor = -1
    }

    deinit { close() }
}
