// TEMPORARY stand-in for the parameter and body types that land on main separately; deleted at the merge.
import FoundationEssentials

public indirect enum ParameterValue: Sendable, Hashable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case null
    case array([ParameterValue])
    case dictionary([String: ParameterValue])
}

public typealias Parameters = [String: ParameterValue]

public struct URLFormEncoder: Sendable {
    public init() {}
    public func encode(_ parameters: Parameters) -> String {
        var pairs: [String] = []
        func add(_ key: String, _ value: ParameterValue) {
            switch value {
            case .string(let s): pairs.append("\(key)=\(s)")
            case .int(let i): pairs.append("\(key)=\(i)")
            case .bool(let b): pairs.append("\(key)=\(b ? 1 : 0)")
            case .null: pairs.append(key)
            case .array(let a): for v in a { add(key + "[]", v) }
            case .dictionary(let d): for (k, v) in d.sorted(by: { $0.key < $1.key }) { add("\(key)[\(k)]", v) }
            }
        }
        for (k, v) in parameters.sorted(by: { $0.key < $1.key }) { add(k, v) }
        return pairs.joined(separator: "&")
    }
}

public struct RequestBody: Sendable {
    public var contentType: String
    public var length: Int64
    let bytes: [UInt8]
    public var inMemoryBytes: [UInt8]? { bytes }
    public func makeSource() throws -> any ByteSource { DataSource(bytes) }
    public static func form(_ parameters: Parameters, encoder: URLFormEncoder = .init()) -> RequestBody {
        bytes(Array(encoder.encode(parameters).utf8), contentType: "application/x-www-form-urlencoded; charset=utf-8")
    }
    public static func json(_ value: JSONValue) -> RequestBody {
        bytes(Array(value.description.utf8), contentType: "application/json")
    }
    public static func bytes(_ bytes: [UInt8], contentType: String) -> RequestBody {
        RequestBody(contentType: contentType, length: Int64(bytes.count), bytes: bytes)
    }
}

extension JSONValue {
    init(parameter: ParameterValue) {
        switch parameter {
        case .string(let s): self = .string(s)
        case .int(let i): self = .number(Double(i))
        case .bool(let b): self = .bool(b)
        case .null: self = .null
        case .array(let a): self = .array(a.map(JSONValue.init(parameter:)))
        case .dictionary(let d): self = .object(d.mapValues(JSONValue.init(parameter:)))
        }
    }
}

extension ParameterValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: ParameterValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, ParameterValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { $1 }))
    }
    public init(nilLiteral: ()) { self = .null }
}
