import Foundation
import AttacheTestSupport
import Testing
@testable import Attache

/// `JSONValue.parse` reads answers directly; Foundation's `JSONDecoder` (decoding `JSONValue` through
/// `Codable`) is the reference it must agree with.
@Suite("JSONValue.parse against Foundation's JSONDecoder")
struct JSONParserTests {
    /// What Foundation makes of `text`, or nil when it refuses it.
    static func foundation(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    @Test("valid documents read as Foundation reads them", arguments: [
        #"{"errorCode":0,"data":{"fileId":"n1"}}"#,
        #"  {"a" : [1, 2.5, -3, 1e3, 1E-2, -0.0, 0, 12345678901234567890, 9007199254740993], "b": null}  "#,
        #"[true,false,null,"",[],{},[[[]]],{"":{"":""}}]"#,
        #""\u00e9\u4e2d\ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t""#,
        #"{"dup":1,"dup":2}"#,
        "\"caf\u{e9} \u{1F600}\"",
        "3", "-0", "0.5", "1.7976931348623157e308", "5e-324", "0e-400", "-0.000e-999", "null", "true",
        "\u{FEFF}{\"bom\":1}", "[1,]", "{\"a\":1,}", "[[],]",
    ])
    func validDocuments(text: String) throws {
        let bytes = Array(text.utf8)
        let expected = try #require(Self.foundation(bytes), "Foundation refuses \(text)")
        #expect(try JSONValue.parse(bytes) == expected)
    }

    @Test("invalid documents are refused with a DecodingError", arguments: [
        "", " ", "{", "}", "[,]", "[1,,]", "{,}", "{\"a\":1,,}", "{\"a\" 1}", "{a:1}", "[1 2]", "01", "1.", ".5", "-", "1e", "+1",
        "tru", "nul", "falsey", "\"open", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"a\u{1}b\"",
        "[1]x", "NaN", "Infinity", "1e400", "1e-400", "-2.5e-999", "0.1e-400", "'a'", "[\"\\ud800\\u0041\"]",
    ])
    func invalidDocuments(text: String) {
        let bytes = Array(text.utf8)
        #expect(Self.foundation(bytes) == nil, "Foundation accepts \(text)")
        #expect(throws: DecodingError.self) { try JSONValue.parse(bytes) }
    }

    @Test("bytes that are not UTF-8 inside a string are refused")
    func invalidUTF8() {
        // The last: `{"a":1,"a":"<FF>"}`, bad bytes in the value of a repeated key.
        for bytes: [UInt8] in [
            [0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0x5C, 0x6E, 0xED, 0xA0, 0x80, 0x22],
            Array(#"{"a":1,"a":""#.utf8) + [0xFF] + Array(#""}"#.utf8),
        ] {
            #expect(throws: DecodingError.self) { try JSONValue.parse(bytes) }
        }
    }

    @Test("nesting deeper than 512 is refused, not a crash")
    func deepNesting() throws {
        let deep = Array(String(repeating: "[", count: 100_000).utf8)
        #expect(throws: DecodingError.self) { try JSONValue.parse(deep) }
        let fine = Array((String(repeating: "[", count: 500) + String(repeating: "]", count: 500)).utf8)
        #expect(try JSONValue.parse(fine) == Self.foundation(fine))
    }

    @Test("random values written by JSONWriter read back whole, and as Foundation reads them")
    func roundTrips() throws {
        var generator = SeededGenerator.forTest("JSONParserTests")
        for _ in 0..<300 {
            let value = Self.randomValue(depth: 0, using: &generator)
            let bytes = try value.jsonBytes()
            let parsed = try JSONValue.parse(bytes)
            #expect(parsed == value, "\(value)")
            #expect(parsed == Self.foundation(bytes), "\(value)")
        }
    }

    @Test("mutated documents: never a crash, and valid exactly when Foundation says so")
    func mutations() throws {
        var generator = SeededGenerator.forTest("JSONParserTests")
        let alphabet = Array("{}[],:\"\\/ 0123456789.eE+-tfnulrsaxu\u{e9}".utf8)
        for _ in 0..<2_000 {
            var bytes = try Self.randomValue(depth: 0, using: &generator).jsonBytes()
            for _ in 0..<Int.random(in: 1...3, using: &generator) where !bytes.isEmpty {
                let at = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes.remove(at: at)
                case 1: bytes.insert(alphabet.randomElement(using: &generator)!, at: at)
                default: bytes[at] = alphabet.randomElement(using: &generator)!
                }
            }
            let ours = try? JSONValue.parse(bytes)
            guard String(validating: bytes, as: UTF8.self) != nil else {
                // Foundation checks a string's UTF-8 only when it decodes it, so it lets bad bytes by in
                // a value it skips (the later of two duplicate keys). RFC 8259 wants the whole text UTF-8.
                #expect(ours == nil, "\(bytes)")
                continue
            }
            #expect(ours == Self.foundation(bytes), "\(String(decoding: bytes, as: UTF8.self)) \(bytes) ours=\(String(describing: ours)) foundation=\(String(describing: Self.foundation(bytes)))")
        }
    }

    static func randomValue(depth: Int, using generator: inout SeededGenerator) -> JSONValue {
        switch Int.random(in: 0..<(depth > 3 ? 4 : 6), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2:
            return Bool.random(using: &generator)
                ? .number(Double(Int.random(in: -1_000_000...1_000_000, using: &generator)))
                : .number(Double.random(in: -1e6...1e6, using: &generator))
        case 3:
            let pieces = ["a", "é", "中", "😀", "\"", "\\", "/", "\n", "\u{1}", " ", "key"]
            return .string((0..<Int.random(in: 0...5, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined())
        case 4:
            return .array((0..<Int.random(in: 0...4, using: &generator)).map { _ in randomValue(depth: depth + 1, using: &generator) })
        default:
            var members: [String: JSONValue] = [:]
            for index in 0..<Int.random(in: 0...4, using: &generator) {
                members["k\(index)\(["", "é", "/"].randomElement(using: &generator)!)"] = randomValue(depth: depth + 1, using: &generator)
            }
            return .object(members)
        }
    }
}
