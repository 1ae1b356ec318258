import FoundationEssentials
import Glibc

/// A JSON Pointer (RFC 6901): the path to one value inside a JSON document, such as
/// `/result/document/file_id` or `/files/0/id`.
///
/// Each reference token is an object member name or, on an array, a decimal index (`0`, `12`; no
/// leading zeros, `-` names no element). `~1` in a token stands for `/` and `~0` for `~`; any other `~`
/// is an error. The empty pointer `""` is the whole document.
///
/// ```swift
/// let pointer = try JSONPointer("/result/photo/2/file_id")
/// let fileId = pointer.resolve(in: answer)?.stringValue
/// ```
public struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
    /// The reference tokens, unescaped, in order.
    package let tokens: [String]

    /// Parses the string form of a pointer.
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `configuration`) when the text is not empty and does
    ///   not start with `/`, or holds a `~` not followed by `0` or `1`.
    public init(_ text: String) throws {
        guard !text.isEmpty else {
            tokens = []
            return
        }
        guard text.first == "/" else {
            throw AttacheError(
                .invalidArgument, stage: .configuration,
                "a JSON pointer is empty or starts with \"/\" (RFC 6901), got \"\(text.prefix(80))\"")
        }
        var tokens: [String] = []
        var current = ""
        var escaping = false
        for character in text.dropFirst() {
            if escaping {
                switch character {
                case "0": current.append("~")
                case "1": current.append("/")
                default:
                    throw AttacheError(
                        .invalidArgument, stage: .configuration,
                        "\"~\(character)\" in a JSON pointer: only ~0 (for ~) and ~1 (for /) are escapes")
                }
                escaping = false
            } else if character == "~" {
                escaping = true
            } else if character == "/" {
                tokens.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        guard !escaping else {
            throw AttacheError(
                .invalidArgument, stage: .configuration, "a JSON pointer ends in a lone \"~\" (write ~0 for ~)")
        }
        tokens.append(current)
        self.tokens = tokens
    }

    /// Creates a pointer from unescaped tokens.
    package init(tokens: [String]) {
        self.tokens = tokens
    }

    /// The value the pointer selects in `document`, or nil when there is none (a missing member, an index
    /// past the end or not a valid index, a token applied to a string or number).
    package func resolve(in document: JSONValue) -> JSONValue? {
        var value = document
        for token in tokens {
            switch value {
            case .object(let members):
                guard let member = members[token] else { return nil }
                value = member
            case .array(let elements):
                guard let index = Self.arrayIndex(token), index < elements.count else { return nil }
                value = elements[index]
            default:
                return nil
            }
        }
        return value
    }

    /// The string form, escaped: `/a~1b/0`.
    public var description: String {
        tokens.map { "/" + $0.replacing("~", with: "~0").replacing("/", with: "~1") }
            .joined()
    }

    /// `0` or a decimal number without leading zeros, as RFC 6901 section 4 allows for array indices.
    private static func arrayIndex(_ token: String) -> Int? {
        guard !token.isEmpty, token.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            token == "0" || token.first != "0", token.utf8.count <= 18
        else { return nil }
        return Int(token)
    }
}
