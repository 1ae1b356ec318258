import FoundationEssentials

/// An `Encoder` whose output is a ``ParameterValue`` tree instead of bytes.
///
/// Containers are reference boxes that the parent keeps, so a nested container can be filled after
/// the parent handed it out (the order in which `Encodable` implementations call things is free).
enum ParameterValueEncoder {
    static func encode(_ value: some Encodable) throws -> ParameterValue {
        let encoder = Encoding(codingPath: [])
        do {
            try encoder.encodeAny(value)
        } catch let error as AttacheError {
            throw error
        } catch {
            throw AttacheError(
                .invalidArgument, stage: .upload, "the parameters could not be encoded: \(error)",
                cause: ErrorDescription(text: "\(error)"))
        }
        guard let result = encoder.storage?.value else {
            throw AttacheError(.invalidArgument, stage: .upload, "the value encoded nothing")
        }
        return result
    }

    /// A thrown error's text, kept as a `Sendable` cause.
    struct ErrorDescription: Error, Sendable, CustomStringConvertible {
        let text: String
        var description: String { text }
    }

    /// A value under construction.
    final class Node {
        enum Kind {
            case value(ParameterValue)
            case keyed([String: Node])
            case unkeyed([Node])
        }
        var kind: Kind
        init(_ kind: Kind) { self.kind = kind }

        var value: ParameterValue {
            switch kind {
            case .value(let value): return value
            case .keyed(let members): return .dictionary(members.mapValues(\.value))
            case .unkeyed(let elements): return .array(elements.map(\.value))
            }
        }
    }

    final class Encoding: Encoder {
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }
        /// What this encoder produced; a container request creates it.
        var storage: Node?

        init(codingPath: [any CodingKey], storage: Node? = nil) {
            self.codingPath = codingPath
            self.storage = storage
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            let node: Node
            if let existing = storage, case .keyed = existing.kind {
                node = existing
            } else if let existing = storage {
                existing.kind = .keyed([:])
                node = existing
            } else {
                node = Node(.keyed([:]))
                storage = node
            }
            return KeyedEncodingContainer(Keyed<Key>(node: node, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            let node: Node
            if let existing = storage, case .unkeyed = existing.kind {
                node = existing
            } else if let existing = storage {
                existing.kind = .unkeyed([])
                node = existing
            } else {
                node = Node(.unkeyed([]))
                storage = node
            }
            return Unkeyed(node: node, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            Single(encoder: self)
        }

        func set(_ value: ParameterValue) {
            if let storage {
                storage.kind = .value(value)
            } else {
                storage = Node(.value(value))
            }
        }

        /// Encodes `value`, recognising the types that have a parameter form of their own.
        func encodeAny<T: Encodable>(_ value: T) throws {
            if let special = try ParameterValueEncoder.special(value) {
                set(special)
            } else {
                try value.encode(to: self)
            }
        }
    }

    /// Types encoded as one parameter value rather than through their own `encode(to:)`.
    static func special(_ value: some Encodable) throws -> ParameterValue? {
        switch value {
        case let date as Date: return .date(date)
        case let data as Data: return .string(Base64.encode(data, alphabet: .standard))
        case let url as URL: return .string(url.absoluteString)
        case let parameter as ParameterValue: return parameter
        case let json as JSONValue: return ParameterValue(json)
        case let decimal as Decimal: return .string(decimal.description)
        case let set as any SetEncodable: return .set(try set.parameterElements())
        default: return nil
        }
    }

    /// Encodes a child value at `key` and returns its node.
    static func child(_ value: some Encodable, codingPath: [any CodingKey]) throws -> Node {
        let encoder = Encoding(codingPath: codingPath)
        try encoder.encodeAny(value)
        return encoder.storage ?? Node(.value(.dictionary([:])))
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let node: Node
        let codingPath: [any CodingKey]

        private func put(_ child: Node, for key: Key) {
            guard case .keyed(var members) = node.kind else { return }
            node.kind = .keyed([:])  // drop the reference so the dictionary is mutated in place
            members[key.stringValue] = child
            node.kind = .keyed(members)
        }

        mutating func encodeNil(forKey key: Key) throws { put(Node(.value(.null)), for: key) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { put(Node(.value(.bool(value))), for: key) }
        mutating func encode(_ value: String, forKey key: Key) throws { put(Node(.value(.string(value))), for: key) }
        mutating func encode(_ value: Double, forKey key: Key) throws { put(Node(.value(.number(value))), for: key) }
        mutating func encode(_ value: Float, forKey key: Key) throws {
            put(Node(.value(.number(Double(value)))), for: key)
        }
        mutating func encode(_ value: Int, forKey key: Key) throws { put(Node(.value(.integer(Int64(value)))), for: key) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { put(Node(.value(.integer(Int64(value)))), for: key) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { put(Node(.value(.integer(Int64(value)))), for: key) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { put(Node(.value(.integer(Int64(value)))), for: key) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { put(Node(.value(.integer(value))), for: key) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { put(Node(.value(try integer(value))), for: key) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { put(Node(.value(.integer(Int64(value)))), for: key) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { put(Node(.value(.integer(Int64(value)))), for: key) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { put(Node(.value(.integer(Int64(value)))), for: key) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { put(Node(.value(try integer(value))), for: key) }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            put(try ParameterValueEncoder.child(value, codingPath: codingPath + [key]), for: key)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type, forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            let child = Node(.keyed([:]))
            put(child, for: key)
            return KeyedEncodingContainer(Keyed<NestedKey>(node: child, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let child = Node(.unkeyed([]))
            put(child, for: key)
            return Unkeyed(node: child, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Encoder { superEncoder(named: "super") }

        mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key.stringValue) }

        private func superEncoder(named name: String) -> any Encoder {
            let child = Node(.keyed([:]))
            if case .keyed(var members) = node.kind {
                node.kind = .keyed([:])
                members[name] = child
                node.kind = .keyed(members)
            }
            return Encoding(codingPath: codingPath + [IndexKey(stringValue: name)], storage: child)
        }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let node: Node
        let codingPath: [any CodingKey]

        var count: Int {
            if case .unkeyed(let elements) = node.kind { return elements.count }
            return 0
        }

        private func append(_ child: Node) {
            guard case .unkeyed(var elements) = node.kind else { return }
            node.kind = .unkeyed([])
            elements.append(child)
            node.kind = .unkeyed(elements)
        }

        private var nextPath: [any CodingKey] { codingPath + [IndexKey(intValue: count)] }

        mutating func encodeNil() throws { append(Node(.value(.null))) }
        mutating func encode(_ value: Bool) throws { append(Node(.value(.bool(value)))) }
        mutating func encode(_ value: String) throws { append(Node(.value(.string(value)))) }
        mutating func encode(_ value: Double) throws { append(Node(.value(.number(value)))) }
        mutating func encode(_ value: Float) throws { append(Node(.value(.number(Double(value))))) }
        mutating func encode(_ value: Int) throws { append(Node(.value(.integer(Int64(value))))) }
        mutating func encode(_ value: Int8) throws { append(Node(.value(.integer(Int64(value))))) }
        mutating func encode(_ value: Int16) throws { append(Node(.value(.integer(Int64(value))))) }
        mutating func encode(_ value: Int32) throws { append(Node(.value(.integer(Int64(value))))) }
        mutating func encode(_ value: Int64) throws { append(Node(.value(.integer(value)))) }
        mutating func encode(_ value: UInt) throws { append(Node(.value(try integer(value)))) }
        mutating func encode(_ value: UInt8) throws { append(Node(.value(.integer(Int64(value))))) }
        mutating func encode(_ value: UInt16) throws { append(Node(.value(.integer(Int64(value))))) }
        mutating func encode(_ value: UInt32) throws { append(Node(.value(.integer(Int64(value))))) }
        mutating func encode(_ value: UInt64) throws { append(Node(.value(try integer(value)))) }

        mutating func encode<T: Encodable>(_ value: T) throws {
            append(try ParameterValueEncoder.child(value, codingPath: nextPath))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
            -> KeyedEncodingContainer<NestedKey>
        {
            let child = Node(.keyed([:]))
            let path = nextPath
            append(child)
            return KeyedEncodingContainer(Keyed<NestedKey>(node: child, codingPath: path))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let child = Node(.unkeyed([]))
            let path = nextPath
            append(child)
            return Unkeyed(node: child, codingPath: path)
        }

        mutating func superEncoder() -> any Encoder {
            let child = Node(.keyed([:]))
            let path = nextPath
            append(child)
            return Encoding(codingPath: path, storage: child)
        }
    }

    struct Single: SingleValueEncodingContainer {
        let encoder: Encoding
        var codingPath: [any CodingKey] { encoder.codingPath }

        mutating func encodeNil() throws { encoder.set(.null) }
        mutating func encode(_ value: Bool) throws { encoder.set(.bool(value)) }
        mutating func encode(_ value: String) throws { encoder.set(.string(value)) }
        mutating func encode(_ value: Double) throws { encoder.set(.number(value)) }
        mutating func encode(_ value: Float) throws { encoder.set(.number(Double(value))) }
        mutating func encode(_ value: Int) throws { encoder.set(.integer(Int64(value))) }
        mutating func encode(_ value: Int8) throws { encoder.set(.integer(Int64(value))) }
        mutating func encode(_ value: Int16) throws { encoder.set(.integer(Int64(value))) }
        mutating func encode(_ value: Int32) throws { encoder.set(.integer(Int64(value))) }
        mutating func encode(_ value: Int64) throws { encoder.set(.integer(value)) }
        mutating func encode(_ value: UInt) throws { encoder.set(try integer(value)) }
        mutating func encode(_ value: UInt8) throws { encoder.set(.integer(Int64(value))) }
        mutating func encode(_ value: UInt16) throws { encoder.set(.integer(Int64(value))) }
        mutating func encode(_ value: UInt32) throws { encoder.set(.integer(Int64(value))) }
        mutating func encode(_ value: UInt64) throws { encoder.set(try integer(value)) }

        mutating func encode<T: Encodable>(_ value: T) throws {
            if let special = try ParameterValueEncoder.special(value) {
                encoder.set(special)
            } else {
                try value.encode(to: encoder)
            }
        }
    }

    struct IndexKey: CodingKey {
        let stringValue: String
        let intValue: Int?
        init(stringValue: String) {
            self.stringValue = stringValue
            intValue = nil
        }
        init(intValue: Int) {
            stringValue = String(intValue)
            self.intValue = intValue
        }
    }

    static func integer(_ value: some BinaryInteger) throws -> ParameterValue {
        guard let exact = Int64(exactly: value) else {
            // Larger than Int64: its decimal text, which a form or query carries just as well.
            return .string(String(value))
        }
        return .integer(exact)
    }
}

/// A `Set` whose elements can become parameter values; lets the encoder keep a set a set.
protocol SetEncodable {
    func parameterElements() throws -> Set<ParameterValue>
}

extension Set: SetEncodable where Element: Encodable {
    func parameterElements() throws -> Set<ParameterValue> {
        var result = Set<ParameterValue>()
        for element in self { result.insert(try ParameterValueEncoder.encode(element)) }
        return result
    }
}
