import FoundationEssentials
import Glibc

/// A JSON value as the server sent it, kept whole so that no field of a receipt is lost.
public enum JSONValue: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number (JSON has one number type; integers up to 2^53 are exact).
    case number(Double)
    /// A string.
    case string(String)
    /// An array, in order.
    case array([JSONValue])
    /// An object; member order is not kept.
    case object([String: JSONValue])

    /// The member named `key` of an object, or nil.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The value as a string: strings as they are, integral numbers without a fraction, else nil.
    public var stringValue: String? {
        switch self {
        case .string(let value): return value
        case .number(let value):
            if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
            return String(value)
        case .bool(let value): return String(value)
        default: return nil
        }
    }

    /// The value as an integer, from a number or a numeric string.
    public var intValue: Int? {
        switch self {
        case .number(let value):
            return value == value.rounded() && abs(value) < 9e15 ? Int(value) : nil
        case .string(let value): return Int(value.trimmingBlanks)
        default: return nil
        }
    }

    /// Reads any JSON value: null, a Boolean, a number, a string, an array or an object.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Writes the value as the JSON it holds.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if value == value.rounded(), abs(value) < 9e15 {
                try container.encode(Int64(value))
            } else {
                try container.encode(value)
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The value as compact JSON text, members sorted and slashes not escaped, or `null` for a value
    /// JSON cannot express (a NaN or infinite number).
    public var description: String {
        guard let bytes = try? jsonBytes() else { return "null" }
        return String(decoding: bytes, as: UTF8.self)
    }
}
