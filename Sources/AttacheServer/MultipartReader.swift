import Glibc

/// A streaming reader of `multipart/form-data` bodies (RFC 7578 over RFC 2046's multipart syntax).
///
/// Bytes go in as they arrive, in pieces of any size; the reader tells its ``Delegate`` about each
/// part's header fields, its body (as slices of the bytes given, never copied, except for the few
/// bytes held back at a seam that might begin a delimiter) and its end. Every part body ends at the
/// first `CRLF--boundary`, which RFC 2046 forbids inside a body, so finding it is a search for one
/// byte string: `memchr` finds each carriage return and `memcmp` checks the rest.
///
/// What it accepts:
/// - a preamble before the first delimiter, and an epilogue after the closing one (both ignored);
/// - transport padding (spaces and tabs) after a delimiter, before its line break;
/// - header lines `Name: value`, with obsolete folding (a line that begins with a space or a tab
///   continues the previous value).
///
/// What it refuses, with ``MultipartRejection/malformed(_:)``: a header line with no colon, a header
/// block over ``headerLimit`` bytes, and anything but `--` or a line break after a delimiter.
/// ``finish()`` refuses a body that ended before its closing delimiter.
struct MultipartReader: ~Copyable {
    /// Receives what the reader finds, in the order of the body.
    protocol Delegate: AnyObject {
        /// One header field of the part that is starting (name as sent, value without surrounding blanks).
        func header(name: String, value: String) throws
        /// The next bytes of the current part's body (valid only during the call). A part with an empty
        /// body gets no call.
        func body(_ bytes: UnsafeRawBufferPointer) throws
        /// The current part's body ended.
        func partComplete() throws
    }

    /// The largest header block of one part, in bytes.
    static let headerLimit = 16 * 1024

    private enum State {
        /// Before the first delimiter: bytes are skipped.
        case preamble
        /// After a delimiter, until its line break (a new part) or `--` (the end).
        case afterDelimiter
        /// Collecting a part's header block, up to the empty line.
        case headers
        /// Inside a part's body.
        case body
        /// After the closing delimiter: bytes are skipped.
        case epilogue
    }

    private let delimiter: [UInt8]
    private let delegate: any Delegate
    private var state = State.preamble
    /// Bytes held over from the last piece: in `.preamble` and `.body`, a prefix of the delimiter that
    /// the piece ended with; in `.afterDelimiter` and `.headers`, what has been read of them so far.
    private var carry: [UInt8]

    /// Whether the closing delimiter has been read.
    var isComplete: Bool {
        if case .epilogue = state { return true }
        return false
    }

    /// - Parameter boundary: the `boundary` parameter of the body's content type.
    init(boundary: String, delegate: any Delegate) {
        delimiter = Array("\r\n--\(boundary)".utf8)
        self.delegate = delegate
        // The first delimiter may open the body without a line break before it: reading as if one
        // came first lets a single search find both.
        carry = [0x0D, 0x0A]
    }

    /// Reads the next bytes of the body.
    mutating func read(_ bytes: UnsafeRawBufferPointer) throws {
        var rest = bytes
        while !rest.isEmpty {
            switch state {
            case .preamble, .body:
                rest = try readBody(rest)
            case .afterDelimiter:
                rest = try readAfterDelimiter(rest)
            case .headers:
                rest = try readHeaders(rest)
            case .epilogue:
                return
            }
        }
    }

    /// Checks that the body ended with its closing delimiter.
    func finish() throws {
        switch state {
        case .epilogue:
            return
        case .preamble:
            throw MultipartRejection.malformed("malformed multipart body: no part found for the declared boundary")
        case .afterDelimiter, .headers, .body:
            throw MultipartRejection.malformed("malformed multipart body: it ends before the closing boundary")
        }
    }

    // MARK: - States

    /// Body (or preamble) bytes up to the next delimiter; returns what follows it.
    private mutating func readBody(_ bytes: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer {
        var bytes = bytes
        if !carry.isEmpty {
            // The last piece ended with the first `carry.count` bytes of the delimiter.
            let needed = delimiter.count - carry.count
            let compared = min(needed, bytes.count)
            let matches = delimiter.withUnsafeBytes { pattern in
                memcmp(pattern.baseAddress! + carry.count, bytes.baseAddress!, compared) == 0
            }
            if matches {
                if compared == needed {
                    carry.removeAll(keepingCapacity: true)
                    try delimiterFound()
                    return UnsafeRawBufferPointer(rebasing: bytes[needed...])
                }
                carry.append(contentsOf: bytes)
                return UnsafeRawBufferPointer(start: nil, count: 0)
            }
            // Not a delimiter after all: the held bytes were body. No later byte of them can start
            // one, as a carriage return is only the delimiter's first byte (boundaries have none).
            let held = carry
            carry.removeAll(keepingCapacity: true)
            if case .body = state { try held.withUnsafeBytes { try delegate.body($0) } }
        }
        guard let base = bytes.baseAddress else { return bytes }
        if let found = Self.find(delimiter, in: bytes) {
            if case .body = state, found > 0 {
                try delegate.body(UnsafeRawBufferPointer(start: base, count: found))
            }
            try delimiterFound()
            bytes = UnsafeRawBufferPointer(rebasing: bytes[(found + delimiter.count)...])
            return bytes
        }
        // No whole delimiter: hold back an ending that could be the start of one.
        let held = Self.heldBack(delimiter, atEndOf: bytes)
        if case .body = state, bytes.count - held > 0 {
            try delegate.body(UnsafeRawBufferPointer(start: base, count: bytes.count - held))
        }
        carry.append(contentsOf: bytes[(bytes.count - held)...])
        return UnsafeRawBufferPointer(start: nil, count: 0)
    }

    private mutating func delimiterFound() throws {
        if case .body = state { try delegate.partComplete() }
        state = .afterDelimiter
    }

    /// After a delimiter: blanks, then `--` (the end) or a line break (a part's headers).
    private mutating func readAfterDelimiter(_ bytes: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if carry.isEmpty, byte == 0x20 || byte == 0x09 { continue }
            carry.append(byte)
            guard carry.count == 2 else { continue }
            switch (carry[0], carry[1]) {
            case (0x2D, 0x2D):
                state = .epilogue
            case (0x0D, 0x0A):
                state = .headers
            default:
                throw MultipartRejection.malformed("malformed multipart body: a boundary is followed by neither a line break nor '--'")
            }
            // The headers begin after the line break, which ``readHeaders(_:)`` counts as read.
            if case .epilogue = state { carry.removeAll(keepingCapacity: true) }
            return UnsafeRawBufferPointer(rebasing: bytes[index...])
        }
        return UnsafeRawBufferPointer(start: nil, count: 0)
    }

    /// A part's header block, up to and including the empty line that ends it. `carry` starts as the
    /// line break that ended the delimiter's line, so that a part with no header at all (an empty line
    /// at once) ends its block like any other: at the first `CRLF CRLF`.
    private mutating func readHeaders(_ bytes: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer {
        let blockEnd: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A]
        let before = carry.count
        let limit = Self.headerLimit + 2 + blockEnd.count
        let taken = min(bytes.count, limit - before)
        carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[..<taken]))
        let searchFrom = max(0, before - (blockEnd.count - 1))
        let found = carry.withUnsafeBytes { block in
            Self.find(blockEnd, in: UnsafeRawBufferPointer(rebasing: block[searchFrom...])).map { $0 + searchFrom }
        }
        guard let end = found else {
            if carry.count >= limit {
                throw MultipartRejection.malformed("malformed multipart body: a part's headers exceed \(Self.headerLimit) bytes")
            }
            return UnsafeRawBufferPointer(start: nil, count: 0)
        }
        let block = end >= 2 ? Array(carry[2..<end]) : []
        let consumed = end + blockEnd.count - before
        carry.removeAll(keepingCapacity: true)
        try Self.parseHeaders(block, into: delegate)
        state = .body
        return UnsafeRawBufferPointer(rebasing: bytes[consumed...])
    }

    // MARK: - Helpers

    /// Splits a header block into fields; folded lines join the field before them.
    private static func parseHeaders(_ block: [UInt8], into delegate: any Delegate) throws {
        guard !block.isEmpty else { return }
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = 0, index = 0
        while index < block.count {
            if block[index] == 0x0D, index + 1 < block.count, block[index + 1] == 0x0A {
                lines.append(block[lineStart..<index])
                index += 2
                lineStart = index
            } else {
                index += 1
            }
        }
        lines.append(block[lineStart...])
        var fields: [(name: [UInt8], value: [UInt8])] = []
        for line in lines {
            if let first = line.first, first == 0x20 || first == 0x09 {
                guard !fields.isEmpty else {
                    throw MultipartRejection.malformed("malformed multipart body: a part's headers begin with a continuation line")
                }
                fields[fields.count - 1].value += [0x20] + trimmed(line)
            } else {
                guard let colon = line.firstIndex(of: 0x3A), colon > line.startIndex else {
                    throw MultipartRejection.malformed("malformed multipart body: a header line has no name")
                }
                fields.append((Array(line[..<colon]), trimmed(line[(colon + 1)...])))
            }
        }
        for field in fields {
            try delegate.header(
                name: String(decoding: field.name, as: UTF8.self), value: String(decoding: field.value, as: UTF8.self))
        }
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var lower = bytes.startIndex, upper = bytes.endIndex
        while lower < upper, bytes[lower] == 0x20 || bytes[lower] == 0x09 { lower += 1 }
        while upper > lower, bytes[upper - 1] == 0x20 || bytes[upper - 1] == 0x09 { upper -= 1 }
        return Array(bytes[lower..<upper])
    }

    /// The offset of the first occurrence of `pattern` (which starts with a carriage return) in `bytes`.
    static func find(_ pattern: [UInt8], in bytes: UnsafeRawBufferPointer) -> Int? {
        let length = pattern.count
        guard let base = bytes.baseAddress, bytes.count >= length else { return nil }
        return pattern.withUnsafeBytes { pattern in
            var offset = 0
            while offset <= bytes.count - length {
                guard let hit = memchr(base + offset, Int32(pattern[0]), bytes.count - length + 1 - offset) else {
                    return nil
                }
                let position = base.distance(to: UnsafeRawPointer(hit))
                if memcmp(hit, pattern.baseAddress!, length) == 0 { return position }
                offset = position + 1
            }
            return nil
        }
    }

    /// How many bytes at the end of `bytes` are a proper prefix of `pattern` (at most one candidate:
    /// the pattern's first byte, a carriage return, appears in it nowhere else).
    static func heldBack(_ pattern: [UInt8], atEndOf bytes: UnsafeRawBufferPointer) -> Int {
        let window = min(bytes.count, pattern.count - 1)
        var start = bytes.count - window
        while start < bytes.count {
            if bytes[start] == pattern[0] {
                let count = bytes.count - start
                let matches = pattern.withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress! + start, count) == 0 }
                if matches { return count }
            }
            start += 1
        }
        return 0
    }
}
