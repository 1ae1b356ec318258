import Attache
import AttacheCore
import Foundation
import AttacheTestSupport
import Testing

/// What independent parsers make of the request bodies and queries Attache writes: PHP's
/// nested-parameter parser (its built-in server, `Tools/params_router.php`) for queries and form
/// bodies, Python's `json` and `plistlib` for JSON and property-list bodies.
@Suite("Request encoding read by other parsers", .serialized)
struct RequestEncodingLiveTests {
    /// Parameters every array encoding carries intact through PHP: nested dictionaries, flat arrays,
    /// arrays of one-member dictionaries, reserved characters and Unicode in names and values.
    static let common: Parameters = [
        "name": "bang",
        "phone": ["mobile": "xx", "home": ["area": 10, "number": "555 1234"]],
        "families": ["father", "mother", "a&b=c"],
        "reserved": "!*'();:@&=+$,/?%#[] and a space",
        "unicode": "漢字 é 😀",
        "ключ": ["ü": "ø"],
        "num": 1.5,
        "int": -7,
        "flag": true,
        "off": false,
        "gone": nil,
        "empty": "",
        "people": [["id": 1], ["id": 2]],
    ]

    /// Nested arrays and arrays of several-member dictionaries, which only indices keep apart
    /// (`a[][]=1&a[][]=2` means two one-element lists to PHP, as to Rack).
    static let deep: Parameters = [
        "matrix": [[1, 2], [3]],
        "rows": [["id": 1, "tag": "x"], ["id": 2, "tag": "y"]],
    ]

    static let encoders: [(name: String, encoder: URLFormEncoder, parameters: Parameters)] = [
        ("default (AFNetworking 2)", URLFormEncoder(), common),
        ("AFNetworking 3", .afNetworking3, common.filter { $0.key != "gone" }),
        ("plus for spaces", URLFormEncoder(spaceEncoding: .plus), common),
        ("literal booleans", URLFormEncoder(boolEncoding: .literal), common),
        ("indices", URLFormEncoder(arrayEncoding: .indexInBrackets), common.merging(deep) { $1 }),
        ("empty nulls", URLFormEncoder(nilEncoding: .emptyValue), common),
    ]

    @Test func phpReadsQueriesAndFormBodiesAsTheParametersWere() async throws {
        let php = try await ReceiverProcess.start(
            name: "php", ["php", "-n", "-S", "127.0.0.1:0", ServiceProcess.tools + "/params_router.php"])
        defer { kill(php.process.processIdentifier, SIGKILL) }
        let base = "http://127.0.0.1:\(php.port)/params"
        for (name, encoder, parameters) in Self.encoders {
            let expected = Self.phpView(parameters, encoder: encoder)

            let query = try await Self.send("GET", encoder.url(base, appending: parameters), body: nil)
            #expect(query["get"] == expected, "\(name): PHP's $_GET differs for \(encoder.encode(parameters))")

            let form = try await Self.send("POST", base, body: .form(parameters, encoder: encoder))
            #expect(form["post"] == expected, "\(name): PHP's $_POST differs for \(encoder.encode(parameters))")
            #expect(form["contentType"] == .string("application/x-www-form-urlencoded; charset=utf-8"))
        }
        // A set is the same name repeated: PHP keeps the last one (of the sorted order), as it does for
        // AFNetworking's sets; a servlet or `parse_qs` reader gets them all.
        let set = try await Self.send("POST", base, body: .form(["nums": .set([2, 10, 1])]))
        #expect(set["post"] == .object(["nums": .string("2")]))
        await php.stop()
    }

    @Test func pythonReadsJSONBodiesAsTheValueWas() async throws {
        let value = JSONValue.object([
            "text": .string("quote \" backslash \\ newline \n control \u{1} slash / 漢字 😀"),
            "numbers": .array([.number(0), .number(-1), .number(1.5), .number(1e-7), .number(123_456_789_012)]),
            "flags": .array([.bool(true), .bool(false), .null]),
            "nested": .object(["empty": .object([:]), "list": .array([])]),
        ])
        let body = try RequestBody.json(value)
        let script = "import json, sys; print(json.dumps(json.load(sys.stdin), sort_keys=True))"
        let output = try await run("python3", ["-c", script], input: Data(body.inMemoryBytes ?? []))
        #expect(try JSONValue.parse(Array(output)) == value)
    }

    @Test func pythonsPlistlibReadsPropertyListBodiesAndWeReadItsOutput() async throws {
        let value = PropertyListValue.dictionary([
            "name": .string("bang & <co> 漢字"),
            "count": .integer(-3),
            "big": .integer(.max),
            "ratio": .real(0.1),
            "whole": .real(2),
            "ok": .bool(true),
            "no": .bool(false),
            "when": .date(Date(timeIntervalSince1970: 1_700_000_000)),
            "blob": .data((0..<200).map { UInt8($0) }),
            "list": .array([.string("a"), .array([]), .dictionary([:]), .integer(1)]),
        ])
        let body = RequestBody.propertyList(value)
        // plistlib reads our bytes; its own description of what it read comes back as JSON, with data
        // and dates in their text forms (the same conversions as `jsonValue`).
        let script = """
            import json, plistlib, sys, base64, datetime
            def plain(v):
                if isinstance(v, bytes): return base64.b64encode(v).decode()
                if isinstance(v, datetime.datetime): return v.strftime('%Y-%m-%dT%H:%M:%SZ')
                if isinstance(v, dict): return {k: plain(x) for k, x in v.items()}
                if isinstance(v, list): return [plain(x) for x in v]
                return v
            print(json.dumps(plain(plistlib.loads(sys.stdin.buffer.read()))))
            """
        let output = try await run("python3", ["-c", script], input: Data(body.inMemoryBytes ?? []))
        #expect(try JSONValue.parse(Array(output)) == value.jsonValue)

        // And the other way: plistlib writes, we read.
        let writer = """
            import plistlib, sys, datetime
            sys.stdout.buffer.write(plistlib.dumps({'name': 'bang & <co> 漢字', 'count': -3, 'big': 2**63 - 1,
                'ratio': 0.1, 'whole': 2.0, 'ok': True, 'no': False,
                'when': datetime.datetime(2023, 11, 14, 22, 13, 20), 'blob': bytes(range(200)),
                'list': ['a', [], {}, 1]}))
            """
        let written = try await run("python3", ["-c", writer])
        #expect(try PropertyListValue(xml: Array(written)) == value)
    }

    // MARK: Helpers

    /// Sends one request through the transport and parses the JSON answer.
    static func send(_ method: String, _ url: String, body: RequestBody?) async throws -> JSONValue {
        var headers: [HeaderField] = []
        if let type = body?.contentType { headers.append(HeaderField(name: "Content-Type", value: type)) }
        let response = try await CurlTransport.shared.send(
            TransportRequest(method: method, url: url, headers: headers, body: body?.source).prepared())
        try #require(response.status == 200, "\(method) \(url): \(response.status)")
        return try JSONValue.parse(response.body)
    }

    /// What PHP's parser makes of `parameters` written by `encoder`: every scalar a string, arrays
    /// lists, dictionaries objects, empty containers and dropped nulls absent, a set its last element.
    static func phpView(_ parameters: Parameters, encoder: URLFormEncoder) -> JSONValue {
        .object(parameters.compactMapValues { phpView($0, encoder: encoder) })
    }

    static func phpView(_ value: ParameterValue, encoder: URLFormEncoder) -> JSONValue? {
        switch value {
        case .string(let text): return .string(text)
        case .integer(let number): return .string(String(number))
        case .number(let number): return .string(number == number.rounded() ? String(Int64(number)) : String(number))
        case .bool(let flag):
            return .string(encoder.boolEncoding == .numeric ? (flag ? "1" : "0") : (flag ? "true" : "false"))
        case .date: return nil
        case .null:
            switch encoder.nilEncoding {
            case .dropKey: return nil
            case .emptyValue, .keyOnly: return .string("")
            case .nullLiteral: return .string("null")
            }
        case .array(let elements):
            let mapped = elements.compactMap { phpView($0, encoder: encoder) }
            return mapped.isEmpty ? nil : .array(mapped)
        case .set(let elements):
            return elements.compactMap { phpView($0, encoder: encoder) }
                .max { ($0.stringValue ?? "").utf8.lexicographicallyPrecedes(($1.stringValue ?? "").utf8) }
        case .dictionary(let members):
            let mapped = members.compactMapValues { phpView($0, encoder: encoder) }
            return mapped.isEmpty ? nil : .object(mapped)
        }
    }
}
