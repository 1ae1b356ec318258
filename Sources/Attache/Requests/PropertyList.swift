package import FoundationEssentials

/// A property-list value: what AFNetworking's `AFPropertyListRequestSerializer` sent as a body and
/// what some old servers answer with.
///
/// ```swift
/// let value: PropertyListValue = .dictionary(["name": .string("bang"), "count": .integer(2)])
/// let xml = value.xmlBytes()                       // <?xml ...?><!DOCTYPE plist ...><plist version="1.0">...
/// let back = try PropertyListValue(xml: xml)       // the same value
/// ```
package enum PropertyListValue: Sendable, Hashable {
    /// `<string>`.
    case string(String)
    /// `<integer>`.
    case integer(Int64)
    /// `<real>`.
    case real(Double)
    /// `<true/>` or `<false/>`.
    case bool(Bool)
    /// `<date>`, whole seconds in UTC.
    case date(Date)
    /// `<data>`, base64 in the XML.
    case data([UInt8])
    /// `<array>`.
    case array([PropertyListValue])
    /// `<dict>`; keys are written sorted, as `NSPropertyListSerialization` writes them.
    case dictionary([String: PropertyListValue])
}

extension PropertyListValue {
    /// Converts parameters: strings, numbers, booleans and dates map to their own kinds, a set to an
    /// array in its sorted form (see ``URLFormEncoder``), a dictionary to a `<dict>`.
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `.upload`) for a ``ParameterValue/null``
    ///   anywhere: a property list has no null, and dropping it silently would change the meaning.
    package init(_ value: ParameterValue) throws {
        switch value {
        case .string(let text): self = .string(text)
        case .integer(let number): self = .integer(number)
        case .number(let number): self = .real(number)
        case .bool(let flag): self = .bool(flag)
        case .date(let date): self = .date(date)
        case .null:
            throw AttacheError(.invalidArgument, stage: .upload, "a property list cannot hold a null value")
        case .array(let elements): self = .array(try elements.map(PropertyListValue.init))
        case .set(let elements):
            let sorted = elements.sorted {
                $0.sortText.utf8.lexicographicallyPrecedes($1.sortText.utf8)
            }
            self = .array(try sorted.map(PropertyListValue.init))
        case .dictionary(let members): self = .dictionary(try members.mapValues(PropertyListValue.init))
        }
    }

    /// Converts parameters at the top level to a `<dict>`.
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` for a null anywhere.
    package init(_ parameters: Parameters) throws {
        self = try PropertyListValue(ParameterValue.dictionary(parameters))
    }

    /// Converts a JSON value: integral numbers that are exact in a `Double` become `<integer>`, other
    /// numbers `<real>`.
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` for a JSON `null` anywhere.
    package init(_ json: JSONValue) throws {
        self = try PropertyListValue(ParameterValue(json))
    }

    /// The value as JSON: data becomes its base64 text, a date its ISO 8601 text.
    package var jsonValue: JSONValue {
        switch self {
        case .string(let text): .string(text)
        case .integer(let number): .number(Double(number))
        case .real(let number): .number(number)
        case .bool(let flag): .bool(flag)
        case .date(let date): .string(UTCTimestamp.iso8601(date))
        case .data(let bytes): .string(Base64.encode(bytes, alphabet: .standard))
        case .array(let elements): .array(elements.map(\.jsonValue))
        case .dictionary(let members): .object(members.mapValues(\.jsonValue))
        }
    }

    /// The member named `key` of a dictionary, or nil.
    package subscript(key: String) -> PropertyListValue? {
        if case .dictionary(let members) = self { return members[key] }
        return nil
    }
}

extension ParameterValue {
    /// The text a set is ordered by: a scalar's encoded text, else a canonical rendering.
    var sortText: String {
        switch self {
        case .string(let text): text
        case .integer(let number): String(number)
        case .number(let number): URLFormEncoder.text(number)
        case .bool(let flag): flag ? "1" : "0"
        case .date(let date): URLFormEncoder.text(date.timeIntervalSince1970)
        case .null: ""
        case .array(let elements): "[" + elements.map(\.sortText).joined(separator: ",") + "]"
        case .set(let elements): "[" + elements.map(\.sortText).sorted().joined(separator: ",") + "]"
        case .dictionary(let members):
            "{" + members.keys.sorted().map { "\($0):\(members[$0]?.sortText ?? "")" }.joined(separator: ",") + "}"
        }
    }
}

// MARK: - Writing

extension PropertyListValue {
    /// The XML property list, as `NSPropertyListSerialization` writes it: the XML declaration, Apple's
    /// DOCTYPE, `<plist version="1.0">`, one element per line indented by tabs, dictionary keys sorted
    /// (by UTF-8 bytes), `&`, `<` and `>` escaped, data as base64 lines of at most 76 columns (a tab
    /// counted as 8), dates as `2023-11-14T22:13:20Z`, reals in the shortest form that reads back
    /// exactly (`0.1`; Apple writes `0.10000000000000001`, which reads back as the same double).
    package func xmlBytes() -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        output.append(contentsOf: Self.prologue.utf8)
        write(to: &output, depth: 0)
        output.append(contentsOf: "</plist>\n".utf8)
        return output
    }

    /// ``xmlBytes()`` as a string.
    package var xmlString: String { String(decoding: xmlBytes(), as: UTF8.self) }

    static let prologue = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """

    private func write(to output: inout [UInt8], depth: Int) {
        func indent(_ level: Int) { output.append(contentsOf: repeatElement(0x09, count: level)) }
        func element(_ name: String, _ text: String) {
            indent(depth)
            output.append(contentsOf: "<\(name)>".utf8)
            Self.appendEscaped(text, to: &output)
            output.append(contentsOf: "</\(name)>\n".utf8)
        }
        switch self {
        case .string(let text): element("string", text)
        case .integer(let number): element("integer", String(number))
        case .real(let number): element("real", Self.realText(number))
        case .bool(let flag):
            indent(depth)
            output.append(contentsOf: (flag ? "<true/>\n" : "<false/>\n").utf8)
        case .date(let date): element("date", UTCTimestamp.iso8601(date))
        case .data(let bytes):
            indent(depth)
            output.append(contentsOf: "<data>\n".utf8)
            // Lines as Apple and Python's plistlib wrap them: 76 columns less the indentation.
            let width = max(16, 76 - 8 * depth)
            let chunk = width / 4 * 3
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + chunk)
                indent(depth)
                output.append(contentsOf: Base64.encode(bytes[start..<end], alphabet: .standard).utf8)
                output.append(0x0A)
                start = end
            }
            indent(depth)
            output.append(contentsOf: "</data>\n".utf8)
        case .array(let elements):
            indent(depth)
            if elements.isEmpty {
                output.append(contentsOf: "<array/>\n".utf8)
                return
            }
            output.append(contentsOf: "<array>\n".utf8)
            for element in elements { element.write(to: &output, depth: depth + 1) }
            indent(depth)
            output.append(contentsOf: "</array>\n".utf8)
        case .dictionary(let members):
            indent(depth)
            if members.isEmpty {
                output.append(contentsOf: "<dict/>\n".utf8)
                return
            }
            output.append(contentsOf: "<dict>\n".utf8)
            for key in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                indent(depth + 1)
                output.append(contentsOf: "<key>".utf8)
                Self.appendEscaped(key, to: &output)
                output.append(contentsOf: "</key>\n".utf8)
                members[key]?.write(to: &output, depth: depth + 1)
            }
            indent(depth)
            output.append(contentsOf: "</dict>\n".utf8)
        }
    }

    static func realText(_ number: Double) -> String {
        if number.isNaN { return "nan" }
        if number.isInfinite { return number < 0 ? "-infinity" : "+infinity" }
        if let whole = ParameterValue.exactInteger(number) { return String(whole) }
        return String(describing: number)
    }

    private static func appendEscaped(_ text: String, to output: inout [UInt8]) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "&"): output.append(contentsOf: "&amp;".utf8)
            case UInt8(ascii: "<"): output.append(contentsOf: "&lt;".utf8)
            case UInt8(ascii: ">"): output.append(contentsOf: "&gt;".utf8)
            default: output.append(byte)
            }
        }
    }
}

// MARK: - Reading

extension PropertyListValue {
    /// Reads an XML property list (the format ``xmlBytes()`` writes, and Apple's and Python's).
    ///
    /// A small, strict reader for answers of old servers: the XML declaration, comments, a DOCTYPE and
    /// CDATA sections are understood; the five predefined entities and numeric character references are
    /// decoded; nesting deeper than 512 levels is refused. Binary property lists are not read.
    /// - Throws: ``AttacheCore/AttacheError`` `.corruptInput` (stage `.interpret`) naming what is wrong and where.
    package init(xml bytes: some Collection<UInt8>) throws {
        var reader = PropertyListXMLReader(bytes: Array(bytes))
        self = try reader.document()
    }
}

/// A recursive-descent reader of XML property lists over UTF-8 bytes.
struct PropertyListXMLReader {
    let bytes: [UInt8]
    var position = 0
    static let maximumDepth = 512

    init(bytes: [UInt8]) { self.bytes = bytes }

    enum Tag: Equatable {
        case open(String)
        case close(String)
        case empty(String)
    }

    mutating func document() throws -> PropertyListValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        guard let first = try nextTag() else { throw failure("no element") }
        let value: PropertyListValue
        if first == .open("plist") {
            guard let tag = try nextTag() else { throw failure("an empty <plist>") }
            value = try self.value(startingWith: tag, depth: 0)
            guard try nextTag() == .close("plist") else { throw failure("expected </plist>") }
        } else {
            value = try self.value(startingWith: first, depth: 0)
        }
        try skipMisc()
        guard position == bytes.count else { throw failure("content after the property list") }
        return value
    }

    private mutating func value(startingWith tag: Tag, depth: Int) throws -> PropertyListValue {
        guard depth < Self.maximumDepth else { throw failure("nesting deeper than \(Self.maximumDepth) levels") }
        switch tag {
        case .empty("true"): return .bool(true)
        case .empty("false"): return .bool(false)
        case .empty("array"): return .array([])
        case .empty("dict"): return .dictionary([:])
        case .empty("string"): return .string("")
        case .empty("data"): return .data([])
        case .open("true"):
            _ = try text(until: "true")
            return .bool(true)
        case .open("false"):
            _ = try text(until: "false")
            return .bool(false)
        case .open("string"): return .string(try text(until: "string"))
        case .open("integer"):
            let text = try self.text(until: "integer").trimmingWhiteSpace
            if let number = Int64(text) { return .integer(number) }
            // Above Int64.max: kept as its bit pattern, as Core Foundation keeps a UInt64.
            if let number = UInt64(text) { return .integer(Int64(bitPattern: number)) }
            // Apple's reader also takes hexadecimal (`0x1F`, `-0x1F`).
            let negative = text.hasPrefix("-")
            let digits = negative ? text.dropFirst() : Substring(text)
            if digits.hasPrefix("0x") || digits.hasPrefix("0X"), let number = Int64(digits.dropFirst(2), radix: 16) {
                return .integer(negative ? -number : number)
            }
            throw failure("not an integer: \(text.prefix(40))")
        case .open("real"):
            let text = try self.text(until: "real").trimmingWhiteSpace
            switch text.lowercased() {
            case "nan": return .real(.nan)
            case "+infinity", "infinity", "inf", "+inf": return .real(.infinity)
            case "-infinity", "-inf": return .real(-.infinity)
            default:
                guard let number = Double(text) else { throw failure("not a real: \(text.prefix(40))") }
                return .real(number)
            }
        case .open("date"):
            let text = try self.text(until: "date").trimmingWhiteSpace
            guard let date = UTCTimestamp.parse(text) else { throw failure("not a date: \(text.prefix(40))") }
            return .date(date)
        case .open("data"):
            let text = try self.text(until: "data").filter { !$0.isWhitespace }
            guard let decoded = try? Base64.decode(text, alphabet: .standard) else {
                throw failure("<data> is not base64")
            }
            return .data(decoded)
        case .open("array"):
            var elements: [PropertyListValue] = []
            while true {
                guard let next = try nextTag() else { throw failure("unterminated <array>") }
                if next == .close("array") { return .array(elements) }
                elements.append(try value(startingWith: next, depth: depth + 1))
            }
        case .open("dict"):
            var members: [String: PropertyListValue] = [:]
            while true {
                guard let next = try nextTag() else { throw failure("unterminated <dict>") }
                if next == .close("dict") { return .dictionary(members) }
                let key: String
                switch next {
                case .open("key"): key = try text(until: "key")
                case .empty("key"): key = ""
                default: throw failure("expected <key> in <dict>")
                }
                guard let valueTag = try nextTag() else { throw failure("a <key> without a value") }
                members[key] = try value(startingWith: valueTag, depth: depth + 1)
            }
        case .open(let name), .empty(let name):
            throw failure("unexpected element <\(name.prefix(40))>")
        case .close(let name):
            throw failure("unexpected </\(name.prefix(40))>")
        }
    }

    /// Skips white space, comments, processing instructions and a DOCTYPE; returns the next tag, nil at
    /// the end. Text other than white space between elements is an error.
    private mutating func nextTag() throws -> Tag? {
        try skipMisc()
        guard position < bytes.count else { return nil }
        guard bytes[position] == UInt8(ascii: "<") else { throw failure("text outside an element") }
        position += 1
        var closing = false
        if position < bytes.count, bytes[position] == UInt8(ascii: "/") {
            closing = true
            position += 1
        }
        let nameStart = position
        while position < bytes.count, !Self.isNameEnd(bytes[position]) { position += 1 }
        let name = String(decoding: bytes[nameStart..<position], as: UTF8.self)
        guard !name.isEmpty else { throw failure("an element without a name") }
        // Attributes (only <plist version="1.0"> has any) are skipped, quotes respected.
        var quote: UInt8? = nil
        while position < bytes.count {
            let byte = bytes[position]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: ">") {
                let selfClosing = position > nameStart && bytes[position - 1] == UInt8(ascii: "/")
                position += 1
                if closing { return .close(name) }
                return selfClosing ? .empty(name) : .open(name)
            }
            position += 1
        }
        throw failure("unterminated tag <\(name.prefix(40))>")
    }

    private mutating func skipMisc() throws {
        while position < bytes.count {
            let byte = bytes[position]
            if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                position += 1
            } else if starts(with: "<?") {
                try skip(past: "?>")
            } else if starts(with: "<!--") {
                try skip(past: "-->")
            } else if starts(with: "<!DOCTYPE") {
                // A DOCTYPE may carry an internal subset in brackets.
                var depth = 0
                while position < bytes.count {
                    let current = bytes[position]
                    position += 1
                    if current == UInt8(ascii: "[") { depth += 1 }
                    if current == UInt8(ascii: "]") { depth -= 1 }
                    if current == UInt8(ascii: ">"), depth <= 0 { break }
                }
            } else {
                return
            }
        }
    }

    /// The decoded text up to `</name>`, which is consumed.
    private mutating func text(until name: String) throws -> String {
        var output: [UInt8] = []
        while position < bytes.count {
            if starts(with: "<![CDATA[") {
                position += 9
                let start = position
                try skip(past: "]]>")
                output.append(contentsOf: bytes[start..<(position - 3)])
                continue
            }
            if starts(with: "<!--") {
                try skip(past: "-->")
                continue
            }
            let byte = bytes[position]
            if byte == UInt8(ascii: "<") {
                guard let tag = try nextTag(), tag == .close(name) else {
                    throw failure("expected </\(name)>")
                }
                return String(decoding: output, as: UTF8.self)
            }
            if byte == UInt8(ascii: "&") {
                try entity(into: &output)
                continue
            }
            output.append(byte)
            position += 1
        }
        throw failure("unterminated <\(name)>")
    }

    private mutating func entity(into output: inout [UInt8]) throws {
        guard let end = bytes[position...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
            throw failure("an unterminated entity")
        }
        let name = String(decoding: bytes[(position + 1)..<end], as: UTF8.self)
        position = end + 1
        guard let decoded = XMLEntity.decode(name) else { throw failure("unknown entity &\(name);") }
        output += decoded
    }

    private func starts(with text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard bytes.count - position >= count else { return false }
        let pattern = UnsafeBufferPointer(start: text.utf8Start, count: count)
        for index in 0..<count where bytes[position + index] != pattern[index] { return false }
        return true
    }

    private mutating func skip(past terminator: StaticString) throws {
        while position < bytes.count {
            if starts(with: terminator) {
                position += terminator.utf8CodeUnitCount
                return
            }
            position += 1
        }
        throw failure("unterminated markup")
    }

    private static func isNameEnd(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == UInt8(ascii: ">")
            || byte == UInt8(ascii: "/")
    }

    private func failure(_ what: String) -> AttacheError {
        AttacheError(.corruptInput, stage: .interpret, "the property list is malformed at byte \(position): \(what)")
    }
}
