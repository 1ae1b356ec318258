import FoundationEssentials
import Glibc

/// Reads the small XML documents object stores answer with (S3's `PostResponse` and `Error`, MinIO's and
/// GCS's of the same shape) into a ``JSONValue``, so that a receipt keeps every element.
///
/// Each element becomes a member named after it: an element with child elements becomes an object of them
/// (a name that repeats becomes an array, in document order), any other element the string of its text
/// (entities and CDATA decoded; `<Key/>` is `""`). Attributes (S3 sends only `xmlns`) are not kept. The
/// prolog, comments and processing instructions are skipped; a document type declaration makes the answer
/// unreadable (nil), so no entity is ever expanded. Nesting deeper than 64 elements is unreadable too.
///
/// This reads answers, not XML at large: it needs no XML library, so the package links none.
enum XMLAnswerReader {
    /// A document: its root element's name and its content.
    struct Document: Equatable {
        /// The root element's name (`PostResponse`, `Error`).
        var root: String
        /// The root's content: an object of its child elements, or its text.
        var value: JSONValue
    }

    private struct Frame {
        var name: String
        var text: [UInt8] = []
        var children: [(name: String, value: JSONValue)] = []
    }

    private static let maximumDepth = 64

    /// The document in `bytes`, or nil when they are not a well-formed document of this subset.
    static func read(_ bytes: [UInt8]) -> Document? {
        var index = 0
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        var stack: [Frame] = []
        var document: Document?

        while index < bytes.count {
            if bytes[index] != UInt8(ascii: "<") {
                let end = bytes[index...].firstIndex(of: UInt8(ascii: "<")) ?? bytes.count
                let text = bytes[index..<end]
                if stack.isEmpty {
                    guard text.allSatisfy(isSpace) else { return nil }
                } else {
                    guard let decoded = decodeEntities(text) else { return nil }
                    stack[stack.count - 1].text += decoded
                }
                index = end
                continue
            }
            if starts(bytes, at: index, with: "<?") {
                guard let end = find(bytes, "?>", from: index + 2) else { return nil }
                index = end + 2
            } else if starts(bytes, at: index, with: "<!--") {
                guard let end = find(bytes, "-->", from: index + 4) else { return nil }
                index = end + 3
            } else if starts(bytes, at: index, with: "<![CDATA[") {
                guard !stack.isEmpty, let end = find(bytes, "]]>", from: index + 9) else { return nil }
                stack[stack.count - 1].text += bytes[(index + 9)..<end]
                index = end + 3
            } else if starts(bytes, at: index, with: "<!") {
                // A document type declaration (and with it entity definitions) is never read.
                return nil
            } else if starts(bytes, at: index, with: "</") {
                guard let close = bytes[index...].firstIndex(of: UInt8(ascii: ">")), let frame = stack.popLast()
                else { return nil }
                let name = String(decoding: bytes[(index + 2)..<close], as: UTF8.self)
                    .trimmingBlanks
                guard name == frame.name else { return nil }
                let value = value(of: frame)
                if stack.isEmpty {
                    guard document == nil else { return nil }
                    document = Document(root: frame.name, value: value)
                } else {
                    stack[stack.count - 1].children.append((frame.name, value))
                }
                index = close + 1
            } else {
                guard document == nil, stack.count < maximumDepth,
                    let (name, end, selfClosing) = openTag(bytes, at: index)
                else { return nil }
                if selfClosing {
                    if stack.isEmpty {
                        document = Document(root: name, value: .string(""))
                    } else {
                        stack[stack.count - 1].children.append((name, .string("")))
                    }
                } else {
                    stack.append(Frame(name: name))
                }
                index = end
            }
        }
        guard stack.isEmpty else { return nil }
        return document
    }

    /// True when `bytes`, after white space and a byte-order mark, begin like an XML document.
    static func looksLikeXML(_ bytes: [UInt8]) -> Bool {
        var rest = bytes[...]
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        return rest.drop(while: isSpace).first == UInt8(ascii: "<")
    }

    private static func value(of frame: Frame) -> JSONValue {
        guard !frame.children.isEmpty else { return .string(String(decoding: frame.text, as: UTF8.self)) }
        var members: [String: JSONValue] = [:]
        var repeated: Set<String> = []
        for (name, value) in frame.children {
            switch members[name] {
            case nil:
                members[name] = value
            case .array(let values) where repeated.contains(name):
                members[name] = .array(values + [value])
            case let first?:
                members[name] = .array([first, value])
                repeated.insert(name)
            }
        }
        return .object(members)
    }

    /// Reads `<name attr="…" …>` or `<name …/>` at `start`: the name, the index after the tag, and
    /// whether it closes itself.
    private static func openTag(_ bytes: [UInt8], at start: Int) -> (String, Int, Bool)? {
        var index = start + 1
        while index < bytes.count, !isSpace(bytes[index]), bytes[index] != UInt8(ascii: ">"),
            bytes[index] != UInt8(ascii: "/")
        {
            index += 1
        }
        guard index > start + 1 else { return nil }
        let name = String(decoding: bytes[(start + 1)..<index], as: UTF8.self)
        var quote: UInt8?
        while index < bytes.count {
            let byte = bytes[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: ">") {
                let selfClosing = bytes[index - 1] == UInt8(ascii: "/")
                return (name, index + 1, selfClosing)
            } else if byte == UInt8(ascii: "<") {
                return nil
            }
            index += 1
        }
        return nil
    }

    /// Text with the five predefined entities and character references replaced; nil for an `&` that
    /// starts none of them.
    private static func decodeEntities(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.contains(UInt8(ascii: "&")) else { return Array(text) }
        var output: [UInt8] = []
        output.reserveCapacity(text.count)
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text[index]
            guard byte == UInt8(ascii: "&") else {
                output.append(byte)
                index += 1
                continue
            }
            guard let semicolon = text[index...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else { return nil }
            let entity = String(decoding: text[(index + 1)..<semicolon], as: UTF8.self)
            guard let decoded = XMLEntity.decode(entity) else { return nil }
            output += decoded
            index = semicolon + 1
        }
        return output
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private static func starts(_ bytes: [UInt8], at index: Int, with prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        return prefix.withUTF8Buffer { buffer in
            buffer.indices.allSatisfy { bytes[index + $0] == buffer[$0] }
        }
    }

    private static func find(_ bytes: [UInt8], _ needle: StaticString, from start: Int) -> Int? {
        var index = start
        while index < bytes.count {
            if starts(bytes, at: index, with: needle) { return index }
            index += 1
        }
        return nil
    }
}

/// XML's five predefined entities and character references (`&#38;`, `&#x26;`): the one decoder for
/// the answer reader and the property-list reader.
enum XMLEntity {
    /// The UTF-8 bytes `&name;` stands for, or nil for an entity XML does not predefine or a reference
    /// to no Unicode scalar.
    static func decode(_ name: String) -> [UInt8]? {
        switch name {
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "amp": return [UInt8(ascii: "&")]
        case "quot": return [UInt8(ascii: "\"")]
        case "apos": return [UInt8(ascii: "'")]
        default:
            let code: UInt32?
            if name.hasPrefix("#x") || name.hasPrefix("#X") {
                code = UInt32(name.dropFirst(2), radix: 16)
            } else if name.hasPrefix("#") {
                code = UInt32(name.dropFirst(), radix: 10)
            } else {
                code = nil
            }
            guard let code, let scalar = Unicode.Scalar(code) else { return nil }
            return Array(String(Character(scalar)).utf8)
        }
    }
}
