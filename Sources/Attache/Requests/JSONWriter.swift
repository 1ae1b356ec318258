import FoundationEssentials

/// Writes a ``JSONValue`` as compact UTF-8 JSON (RFC 8259) with object keys sorted by their UTF-8
/// bytes, so the same value always gives the same bytes (a signature or a sealed body over it is
/// stable).
///
/// Strings escape `"`, `\` and the C0 controls (`\n`, `\r`, `\t`, `\b`, `\f`, else `\u00XX`) and
/// nothing else: `/` and non-ASCII characters go as they are. Integral numbers up to 2⁵³ are written
/// without a fraction (`2`), others in the shortest form that reads back exactly (`0.1`, `1e-07`).
enum JSONWriter {
    /// The JSON bytes of `value`.
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `.upload`) for a NaN or infinite number,
    ///   which JSON cannot express.
    static func bytes(_ value: JSONValue) throws -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(128)
        try write(value, to: &output)
        return output
    }

    private static func write(_ value: JSONValue, to output: inout [UInt8]) throws {
        switch value {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let flag): output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let number):
            guard number.isFinite else {
                throw AttacheError(.invalidArgument, stage: .upload, "JSON cannot express the number \(number)")
            }
            if let whole = ParameterValue.exactInteger(number) {
                withDecimalDigits(whole) { output.append(contentsOf: $0) }
            } else {
                output.append(contentsOf: String(describing: number).utf8)
            }
        case .string(let text): appendString(text, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                try write(element, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            var first = true
            for key in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                appendString(key, to: &output)
                output.append(UInt8(ascii: ":"))
                if let member = members[key] { try write(member, to: &output) }
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    static func appendString(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        // Most names and values need no escape: copied whole.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            output.append(contentsOf: text.utf8)
            output.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): output.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: output.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x08: output.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: output.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0..<0x20:
                output.append(contentsOf: "\\u00".utf8)
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0x0F)])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}

extension JSONValue {
    /// Compact JSON with sorted keys (see the rules of the writer in `JSONWriter.swift`): the bytes a
    /// ``RequestBody/json(_:)`` body carries.
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` for a NaN or infinite number.
    package func jsonBytes() throws -> [UInt8] {
        try JSONWriter.bytes(self)
    }
}
