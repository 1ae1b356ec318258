import FoundationEssentials
import Glibc

/// One line of a response head as curl's header callback hands it over.
enum HeaderLine: Equatable {
    /// `HTTP/1.1 206 Partial Content`: a new response begins (after a redirect or 100 Continue).
    case status(Int)
    case field(name: String, value: String)
    /// The empty line that ends the head, or anything unparseable.
    case other

    /// Parses on the bytes, trimming spaces, tabs, CR and LF: this runs for every line of every answer, and
    /// Foundation's character-set trimming cost more than the rest of a small upload's head handling.
    init(_ bytes: UnsafeRawBufferPointer) {
        let line = Self.trimmed(bytes)
        if line.starts(with: "HTTP/".utf8) {
            // `HTTP/1.1 200 OK`: the digits after the first space, read in place.
            var code = 0
            if let space = line.firstIndex(of: 0x20) {
                var index = space + 1
                while index < line.endIndex, line[index] == 0x20 { index += 1 }
                let start = index
                while index < line.endIndex, (0x30...0x39).contains(line[index]), index - start < 9 {
                    code = code * 10 + Int(line[index] - 0x30)
                    index += 1
                }
                if index < line.endIndex, line[index] != 0x20 { code = 0 }
            }
            self = .status(code)
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            self = .field(
                name: String(decoding: Self.trimmed(UnsafeRawBufferPointer(rebasing: line[..<colon])), as: UTF8.self),
                value: String(
                    decoding: Self.trimmed(UnsafeRawBufferPointer(rebasing: line[(colon + 1)...])), as: UTF8.self))
        } else {
            self = .other
        }
    }

    private static func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = 0
        var end = bytes.count
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
    }
}
