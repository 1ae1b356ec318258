import FoundationEssentials

extension JSONValue {
    /// The deepest nesting of arrays and objects ``parse(_:)`` accepts, as Foundation's `JSONDecoder`.
    static let maximumDepth = 512

    /// Parses `bytes` as JSON (RFC 8259: one value, whitespace around it, UTF-8), as leniently as
    /// Foundation's reader: one trailing comma in an array or object is accepted, and a repeated member
    /// name keeps its first value.
    ///
    /// Every answer of every upload goes through here, so this reads the bytes once, directly, where
    /// `JSONDecoder` decoding a `JSONValue` tried each type in turn through `Codable` (about 20 times the
    /// work for a short answer).
    /// - Throws: `DecodingError.dataCorrupted` naming the byte offset when the bytes are not valid JSON.
    package static func parse(_ bytes: some Collection<UInt8>) throws -> JSONValue {
        if let parsed = bytes.withContiguousStorageIfAvailable({ buffer in Result { try JSONParser.parse(buffer) } }) {
            return try parsed.get()
        }
        return try Array(bytes).withUnsafeBufferPointer { try JSONParser.parse($0) }
    }
}

/// A recursive-descent reader of one JSON document in a byte buffer.
private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        // A UTF-8 byte order mark, which RFC 8259 lets a parser ignore.
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { parser.index = 3 }
        parser.skipWhitespace()
        let value = try parser.value()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.failure("unexpected text after the JSON value") }
        return value
    }

    func failure(_ reason: String) -> DecodingError {
        DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: [], debugDescription: "The given data was not valid JSON: \(reason) at byte \(index)."))
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func value() throws -> JSONValue {
        guard index < bytes.count else { throw failure("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try number())
        default:
            throw failure("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw failure("unexpected end") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw failure("unexpected character")
        }
        index += count
    }

    /// Steps into an array or object at its opening bracket; returns whether `closing` follows at once
    /// (an empty one, then already left).
    mutating func enter(closing: UInt8) throws -> Bool {
        depth += 1
        guard depth <= JSONValue.maximumDepth else { throw failure("nested too deeply") }
        index += 1
        skipWhitespace()
        return leave(at: closing)
    }

    /// After an element or member: a comma, or `closing`. Returns whether the array or object ended. One
    /// trailing comma is accepted, as Foundation's reader accepts it.
    mutating func next(closing: UInt8) throws -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw failure("unexpected end") }
        if leave(at: closing) { return true }
        guard bytes[index] == UInt8(ascii: ",") else { throw failure("expected ',' or '\(UnicodeScalar(closing))'") }
        index += 1
        skipWhitespace()
        return leave(at: closing)
    }

    /// Leaves the array or object when `closing` is next.
    mutating func leave(at closing: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == closing else { return false }
        index += 1
        depth -= 1
        return true
    }

    mutating func object() throws -> JSONValue {
        var members: [String: JSONValue] = [:]
        if try enter(closing: UInt8(ascii: "}")) { return .object(members) }
        repeat {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            index += 1
            skipWhitespace()
            let member = try value()
            // A repeated name keeps its first value, as Foundation's reader does.
            if members[key] == nil { members[key] = member }
        } while try !next(closing: UInt8(ascii: "}"))
        return .object(members)
    }

    mutating func array() throws -> JSONValue {
        var elements: [JSONValue] = []
        if try enter(closing: UInt8(ascii: "]")) { return .array(elements) }
        repeat {
            elements.append(try value())
        } while try !next(closing: UInt8(ascii: "]"))
        return .array(elements)
    }

    /// A string, with `index` at its opening quote. Its bytes must be UTF-8; control characters must be
    /// escaped.
    mutating func string() throws -> String {
        index += 1
        let start = index
        // The common case: no escape, copied as it is.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = try utf8(start..<index)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw failure("unescaped control character in a string") }
            index += 1
        }
        var scalars: [UInt8] = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: scalars, as: UTF8.self) else { throw failure("a string is not UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw failure("unexpected end") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escaped)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"): scalars.append(contentsOf: String(try unicodeEscape()).utf8)
                default: throw failure("invalid escape")
                }
            default:
                guard byte >= 0x20 else { throw failure("unescaped control character in a string") }
                scalars.append(byte)
                index += 1
            }
        }
        throw failure("unterminated string")
    }

    func utf8(_ range: Range<Int>) throws -> String {
        guard let text = String(validating: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) else {
            throw failure("a string is not UTF-8")
        }
        return text
    }

    /// The scalar of `\uXXXX` (after the `u`), joining a surrogate pair.
    mutating func unicodeEscape() throws -> Unicode.Scalar {
        let first = try hexQuad()
        if (0xD800...0xDBFF).contains(first) {
            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw failure("a lone surrogate")
            }
            index += 2
            let second = try hexQuad()
            guard (0xDC00...0xDFFF).contains(second) else { throw failure("a lone surrogate") }
            let value = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
            guard let scalar = Unicode.Scalar(value) else { throw failure("an invalid escape") }
            return scalar
        }
        guard let scalar = Unicode.Scalar(UInt32(first)) else { throw failure("a lone surrogate") }
        return scalar
    }

    mutating func hexQuad() throws -> UInt16 {
        guard bytes.count - index >= 4 else { throw failure("unexpected end") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("invalid \\u escape")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// A number as RFC 8259 writes it: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    mutating func number() throws -> Double {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let mantissaEnd = index
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let digits = UnsafeBufferPointer(rebasing: bytes[start..<index])
        // Short integers (ids, error codes, sizes) directly; anything else through the standard library's
        // correctly rounded conversion.
        if isInteger, digits.count <= 16 {
            var magnitude: Int64 = 0
            for byte in digits where byte != UInt8(ascii: "-") { magnitude = magnitude * 10 + Int64(byte - UInt8(ascii: "0")) }
            return digits[0] == UInt8(ascii: "-") ? -Double(magnitude) : Double(magnitude)
        }
        guard let value = Double(String(decoding: digits, as: UTF8.self)), value.isFinite else {
            throw failure("a number out of range")
        }
        // A value that underflows to zero from digits that are not all zero (`1e-400`) is out of range
        // too, as it is for Foundation: the document does not say zero.
        if value == 0, bytes[start..<mantissaEnd].contains(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }) {
            throw failure("a number out of range")
        }
        return value
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
