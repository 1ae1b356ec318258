public import FoundationEssentials

/// A request parameter: a scalar, or a nested array, set or dictionary of parameters.
///
/// This is what `URLFormEncoder` turns into a query or form body (`a[b]=1&a[]=2`), and what the
/// property-list and JSON bodies can be built from. Literals work, so plain dictionaries read naturally:
///
/// ```swift
/// let parameters: Parameters = [
///     "name": "bang",
///     "phone": ["mobile": "xx"],
///     "families": ["father"],
///     "nums": .set([1, 2]),
/// ]
/// URLFormEncoder().encode(parameters)
/// // "families[]=father&name=bang&nums=1&nums=2&phone[mobile]=xx"
/// ```
///
/// A value can also come from a ``JSONValue``.
public enum ParameterValue: Sendable, Hashable {
    /// Text, sent as its UTF-8 bytes.
    case string(String)
    /// A whole number.
    case integer(Int64)
    /// A floating-point number; integral values up to 2⁵³ are written without a fraction (`2`, not `2.0`).
    case number(Double)
    /// A boolean, written as `1`/`0` or `true`/`false` (`URLFormEncoder/BoolEncoding`).
    case bool(Bool)
    /// A point in time, written as `URLFormEncoder/DateEncoding` says.
    case date(Date)
    /// No value: dropped, empty or `null` (`URLFormEncoder/NilEncoding`).
    case null
    /// An ordered list: `a[]=x&a[]=y` (or another `URLFormEncoder/ArrayEncoding`).
    case array([ParameterValue])
    /// An unordered collection, written as the same key repeated (`a=1&a=2`) in sorted order, as
    /// AFNetworking writes an `NSSet`.
    case set(Set<ParameterValue>)
    /// Named members: `a[b]=x`.
    case dictionary([String: ParameterValue])
}

/// Top-level request parameters: names to values.
public typealias Parameters = [String: ParameterValue]

extension ParameterValue: ExpressibleByStringLiteral {
    /// A ``string(_:)`` literal.
    public init(stringLiteral value: String) { self = .string(value) }
}

extension ParameterValue: ExpressibleByIntegerLiteral {
    /// An ``integer(_:)`` literal.
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension ParameterValue: ExpressibleByFloatLiteral {
    /// A ``number(_:)`` literal.
    public init(floatLiteral value: Double) { self = .number(value) }
}

extension ParameterValue: ExpressibleByBooleanLiteral {
    /// A ``bool(_:)`` literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension ParameterValue: ExpressibleByArrayLiteral {
    /// An ``array(_:)`` literal.
    public init(arrayLiteral elements: ParameterValue...) { self = .array(elements) }
}

extension ParameterValue: ExpressibleByDictionaryLiteral {
    /// A ``dictionary(_:)`` literal; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, ParameterValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension ParameterValue: ExpressibleByNilLiteral {
    /// The ``null`` literal.
    public init(nilLiteral: ()) { self = .null }
}

extension ParameterValue {
    /// A value from a JSON value: integral numbers that fit in `Int64` (and are exact in a `Double`)
    /// become ``integer(_:)``, other numbers ``number(_:)``, objects ``dictionary(_:)``.
    package init(_ json: JSONValue) {
        switch json {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .string(let value): self = .string(value)
        case .number(let value):
            if let whole = ParameterValue.exactInteger(value) {
                self = .integer(whole)
            } else {
                self = .number(value)
            }
        case .array(let values): self = .array(values.map(ParameterValue.init))
        case .object(let members): self = .dictionary(members.mapValues(ParameterValue.init))
        }
    }

    /// A value from any `Encodable`, the way `JSONEncoder` would see it: structs and dictionaries
    /// become ``dictionary(_:)``, arrays ``array(_:)``, `Date` ``date(_:)``, `nil` in an `Optional` that
    /// is encoded explicitly ``null`` (synthesised `Codable` leaves absent optionals out), `Data` its
    /// base64 text, `URL` its absolute string, a `Set` ``set(_:)`` when it is encoded as a `Set`.
    ///
    /// ```swift
    /// struct Query: Encodable { let page: Int; let tags: [String] }
    /// let value = try ParameterValue(encoding: Query(page: 2, tags: ["a", "b"]))
    /// ```
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `.upload`) when the value's `encode(to:)`
    ///   throws or encodes nothing.
    package init(encoding value: some Encodable) throws {
        self = try ParameterValueEncoder.encode(value)
    }

    /// Top-level parameters from an `Encodable` that encodes as a keyed container (a struct, a class,
    /// a `[String: ...]` dictionary).
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` when the value is not a dictionary at the top.
    package static func parameters(encoding value: some Encodable) throws -> Parameters {
        guard case .dictionary(let members) = try ParameterValue(encoding: value) else {
            throw AttacheError(
                .invalidArgument, stage: .upload,
                "request parameters must encode as a keyed container (a struct or a dictionary)")
        }
        return members
    }

    /// The value as JSON, for parameters that go into a JSON body (system parameters merged into one):
    /// integers and numbers as numbers, a date as seconds since 1970, a set as an array in the order
    /// `URLFormEncoder` writes it.
    package var jsonValue: JSONValue {
        switch self {
        case .string(let text): .string(text)
        case .integer(let number): .number(Double(number))
        case .number(let number): .number(number)
        case .bool(let flag): .bool(flag)
        case .date(let date): .number(date.timeIntervalSince1970)
        case .null: .null
        case .array(let elements): .array(elements.map(\.jsonValue))
        case .set(let elements):
            .array(elements.sorted { $0.sortText.utf8.lexicographicallyPrecedes($1.sortText.utf8) }.map(\.jsonValue))
        case .dictionary(let members): .object(members.mapValues(\.jsonValue))
        }
    }

    /// `value` as an `Int64` when it is integral and exactly representable (|value| ≤ 2⁵³).
    static func exactInteger(_ value: Double) -> Int64? {
        guard value.isFinite, value == value.rounded(.towardZero), abs(value) <= 9_007_199_254_740_992 else {
            return nil
        }
        return Int64(value)
    }
}
