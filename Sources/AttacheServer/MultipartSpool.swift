import Attache
import Foundation
import Hummingbird
import Glibc

/// One part of a received multipart body: a file part spooled to a temporary file, or a text field
/// kept in memory.
struct SpooledPart: Sendable {
    /// The `name` parameter, exactly as received (still percent-escaped if the client escaped it; see
    /// ``ContentDisposition``).
    var name: String
    /// The `filename` parameter as received; `nil` for a text field.
    var filename: String?
    /// The part's `Content-Type` header, if it had one.
    var contentType: String?
    /// The number of body bytes.
    var size: Int64
    /// Lowercase hex SHA-256 of the body (file parts only).
    var sha256: String?
    /// Where the body was spooled (file parts only).
    var temporaryPath: String?
    /// The value (text fields only).
    var value: String?

    var isFile: Bool { filename != nil }
}

/// Why a multipart body was refused.
enum MultipartRejection: Error, Sendable {
    /// The body is not valid multipart: bad syntax, no boundary, or no closing delimiter.
    case malformed(String)
    /// A text field exceeded the in-memory limit.
    case fieldTooLarge(name: String, limit: Int)
}

/// Streams a multipart body through ``MultipartReader`` into temporary files.
///
/// File parts go to disk chunk by chunk while their SHA-256 is computed, so no part is ever held in
/// memory whole; text fields are kept in memory up to a limit. All work happens in ``consume(_:)``
/// and ``finish()``, which do blocking file I/O and are meant to run on `BlockingPool`. The reader
/// and the open files are not thread-safe; the mutex serialises callers (in practice one request's
/// task, one call at a time) and is what makes the type `Sendable`.
final class MultipartSpool: Sendable {
    private let state: LockedValue<State>

    /// - Parameters:
    ///   - boundary: the boundary from the request's `Content-Type`.
    ///   - temporaryDirectory: where file parts are spooled.
    ///   - fieldLimit: the largest text field kept in memory.
    init(boundary: String, temporaryDirectory: String, fieldLimit: Int) {
        state = LockedValue(State(boundary: boundary, temporaryDirectory: temporaryDirectory, fieldLimit: fieldLimit))
    }

    /// Feeds the next bytes of the body.
    /// - Throws: ``MultipartRejection`` for bad input, ``AttacheError`` when a temporary file fails.
    func consume(_ buffers: [ByteBuffer]) throws {
        try state.withLock { state in
            for buffer in buffers {
                try buffer.withUnsafeReadableBytes { try state.reader.read($0) }
            }
        }
    }

    /// Checks that the body ended properly and returns its parts, file parts still in their
    /// temporary files (the caller moves or deletes them).
    /// - Throws: ``MultipartRejection/malformed(_:)`` when the closing delimiter never came.
    func finish() throws -> [SpooledPart] {
        try state.withLock { state in
            try state.reader.finish()
            return state.collector.parts
        }
    }

    /// Deletes every temporary file this spool created.
    func discard() {
        state.withLock { state in state.collector.discard() }
    }

    private struct State: ~Copyable {
        var reader: MultipartReader
        let collector: PartCollector

        init(boundary: String, temporaryDirectory: String, fieldLimit: Int) {
            collector = PartCollector(temporaryDirectory: temporaryDirectory, fieldLimit: fieldLimit)
            reader = MultipartReader(boundary: boundary, delegate: collector)
        }
    }
}

/// Turns what ``MultipartReader`` finds into spooled parts.
private final class PartCollector: MultipartReader.Delegate {
    private let temporaryDirectory: String
    private let fieldLimit: Int
    private(set) var parts: [SpooledPart] = []
    private var headers: [(String, String)] = []
    private var current: OpenPart?
    private var temporaryPaths: [String] = []

    private enum Sink {
        case file(SpoolFile, SHA256Hasher)
        case field([UInt8])
    }

    private struct OpenPart {
        var part: SpooledPart
        var sink: Sink
    }

    init(temporaryDirectory: String, fieldLimit: Int) {
        self.temporaryDirectory = temporaryDirectory
        self.fieldLimit = fieldLimit
    }

    func header(name: String, value: String) throws {
        headers.append((name, value))
    }

    func body(_ bytes: UnsafeRawBufferPointer) throws {
        if current == nil { current = try open() }
        switch current!.sink {
        case .file(let file, _):
            try file.write(bytes)
        case .field(var value):
            guard value.count + bytes.count <= fieldLimit else {
                throw MultipartRejection.fieldTooLarge(name: current!.part.name, limit: fieldLimit)
            }
            current!.sink = .field([])  // keep the buffer uniquely referenced while appending
            value.append(contentsOf: bytes)
            current!.sink = .field(value)
        }
        current!.part.size += Int64(bytes.count)
    }

    func partComplete() throws {
        if current == nil { current = try open() }
        var part = current!.part
        switch current!.sink {
        case .file(let file, let hasher):
            try file.close()
            part.sha256 = try hasher.finalizeHex()
        case .field(let value):
            part.value = String(decoding: value, as: UTF8.self)
        }
        parts.append(part)
        current = nil
        headers = []
    }

    func discard() {
        current = nil
        for path in temporaryPaths { unlink(path) }
        temporaryPaths = []
    }

    /// Starts a part from the headers collected since the last one.
    private func open() throws -> OpenPart {
        var disposition: [String: String]?
        var contentType: String?
        for (name, value) in headers {
            switch name.lowercased() {
            case "content-disposition": disposition = ContentDisposition.parameters(of: value)
            case "content-type": contentType = value
            default: break
            }
        }
        guard let disposition, let name = disposition["name"] else {
            throw MultipartRejection.malformed("malformed multipart body: a part has no Content-Disposition name")
        }
        var part = SpooledPart(name: name, filename: disposition["filename"], contentType: contentType, size: 0)
        if part.isFile {
            let path = temporaryDirectory + "/" + randomIdentifier() + ".part"
            let hasher = try SHA256Hasher()
            let file = try SpoolFile(creating: path, hasher: hasher)
            temporaryPaths.append(path)
            part.temporaryPath = path
            return OpenPart(part: part, sink: .file(file, hasher))
        }
        return OpenPart(part: part, sink: .field([]))
    }
}

/// Parsing of `Content-Disposition: form-data; name="a"; filename="b"`.
enum ContentDisposition {
    /// The parameters, names lowercased, values as received: quoted strings lose their quotes, percent
    /// escapes are kept.
    ///
    /// A quoted value runs from its opening quote to the next `"`, and a backslash in it is an ordinary
    /// character. That is how the WHATWG form-data encoding that browsers, curl ≥ 7.81 and Attache use
    /// writes values: `"` is sent as `%22`, never as `\"`. Reading `\` as an escape (RFC 7230's
    /// quoted-pair) stored a file named `end\` from a browser as `end"`.
    static func parameters(of value: String) -> [String: String] {
        // Bytes, not Characters: a `"` followed by a combining mark is one Character, and would hide
        // the quote that opens or closes a name beginning with that mark.
        let bytes = Array(value.utf8)
        let quote = UInt8(ascii: "\""), semicolon = UInt8(ascii: ";"), equals = UInt8(ascii: "=")
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        func trimmed(_ range: Range<Int>) -> Range<Int> {
            var lower = range.lowerBound, upper = range.upperBound
            while lower < upper, isBlank(bytes[lower]) { lower += 1 }
            while upper > lower, isBlank(bytes[upper - 1]) { upper -= 1 }
            return lower..<upper
        }
        var result: [String: String] = [:]
        // Skip the disposition type.
        guard var index = bytes.firstIndex(of: semicolon) else { return result }
        while index < bytes.count {
            while index < bytes.count, isBlank(bytes[index]) || bytes[index] == semicolon { index += 1 }
            guard let equalsIndex = bytes[index...].firstIndex(of: equals) else { break }
            let key = text(trimmed(index..<equalsIndex)).lowercased()
            index = equalsIndex + 1
            while index < bytes.count, isBlank(bytes[index]) { index += 1 }
            let parameter: String
            if index < bytes.count, bytes[index] == quote {
                let end = bytes[(index + 1)...].firstIndex(of: quote) ?? bytes.count
                parameter = text((index + 1)..<end)
                index = min(end + 1, bytes.count)
            } else {
                let end = bytes[index...].firstIndex(of: semicolon) ?? bytes.count
                parameter = text(trimmed(index..<end))
                index = end
            }
            if result[key] == nil { result[key] = parameter }
        }
        return result
    }
}

/// A temporary file being written; owns its descriptor.
///
/// Writes are gathered into a buffer first: a body arrives in the network's pieces, some of them a
/// few bytes long (a seam held back in case it began a boundary), and a syscall and a digest update
/// per piece would cost more than the bytes. When given a hasher, it sees exactly the bytes that reach the disk.
final class SpoolFile {
    private var descriptor: Int32
    private let path: String
    private let hasher: SHA256Hasher?
    private var pending: [UInt8] = []
    private static let bufferSize = 256 * 1024

    /// - Throws: ``AttacheError/Code/fileUnwritable``.
    init(creating path: String, hasher: SHA256Hasher? = nil) throws {
        self.path = path
        self.hasher = hasher
        descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Self.failure("cannot create a temporary file", path) }
        pending.reserveCapacity(Self.bufferSize)
    }

    deinit { if descriptor >= 0 { Glibc.close(descriptor) } }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        if pending.count + bytes.count > Self.bufferSize { try flush() }
        if bytes.count >= Self.bufferSize {
            try hasher?.update(bytes)
            try writeFully(bytes)
        } else {
            pending.append(contentsOf: bytes)
        }
    }

    private func flush() throws {
        guard !pending.isEmpty else { return }
        try pending.withUnsafeBytes { bytes in
            try hasher?.update(bytes)
            try writeFully(bytes)
        }
        pending.removeAll(keepingCapacity: true)
    }

    private func writeFully(_ bytes: UnsafeRawBufferPointer) throws {
        if let code = FileDescriptor.writeAll(descriptor, bytes) {
            throw AttacheError.system("cannot write a temporary file", errno: code, .fileUnwritable, stage: .upload, file: path)
        }
    }

    func close() throws {
        try flush()
        let status = Glibc.close(descriptor)
        descriptor = -1
        guard status == 0 else { throw Self.failure("cannot close a temporary file", path) }
    }

    private static func failure(_ message: String, _ path: String) -> AttacheError {
        AttacheError.system(message, .fileUnwritable, stage: .upload, file: path)
    }
}

/// 26 characters of lowercase RFC 4648 base32 (130 random bits): file ids and temporary names.
func randomIdentifier() -> String {
    let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
    var generator = SystemRandomNumberGenerator()
    return String(decoding: (0..<26).map { _ in alphabet[Int(generator.next() & 31)] }, as: UTF8.self)
}
