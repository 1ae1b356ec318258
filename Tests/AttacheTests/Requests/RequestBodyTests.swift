import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

@Suite struct RequestBodyTests {
    private func bytes(of body: RequestBody) throws -> [UInt8] {
        try body.source.makeReader().readToEnd()
    }

    @Test func formBodyHasTheOldClientsContentTypeAndTheEncodedPairs() throws {
        let body = RequestBody.form(["name": "bang", "phone": ["mobile": "xx"]])
        #expect(body.contentType == "application/x-www-form-urlencoded; charset=utf-8")
        #expect(try bytes(of: body) == Array("name=bang&phone[mobile]=xx".utf8))
        #expect(body.length == 26)
        #expect(body.inMemoryBytes == Array("name=bang&phone[mobile]=xx".utf8))
        #expect(!body.isSensitive)
        let spaced = RequestBody.form(["q": "a b"], encoder: URLFormEncoder(spaceEncoding: .plus))
        #expect(try bytes(of: spaced) == Array("q=a+b".utf8))
    }

    @Test func jsonBodyIsCompactWithSortedKeys() throws {
        let value = JSONValue.object([
            "b": .array([.number(1), .number(2.5), .null, .bool(false)]),
            "a": .string("quote \" slash / back \\ newline \n tab \t bell \u{7} é"),
        ])
        let body = try RequestBody.json(value)
        #expect(body.contentType == "application/json")
        #expect(
            String(decoding: try bytes(of: body), as: UTF8.self)
                == #"{"a":"quote \" slash / back \\ newline \n tab \t bell \u0007 é","b":[1,2.5,null,false]}"#)
        // Foundation's parser reads back the same value.
        let parsed = try JSONSerialization.jsonObject(with: Data(try bytes(of: body))) as? [String: Any]
        #expect(parsed?["a"] as? String == "quote \" slash / back \\ newline \n tab \t bell \u{7} é")
        #expect(throws: AttacheError.self) { try RequestBody.json(.number(.nan)) }
    }

    struct Message: Encodable {
        let text: String
        let chatId: Int
        let url: String
    }

    @Test func jsonBodyOfAnEncodable() throws {
        let body = try RequestBody.json(encoding: Message(text: "hi", chatId: 42, url: "a/b"))
        #expect(String(decoding: try bytes(of: body), as: UTF8.self) == #"{"chatId":42,"text":"hi","url":"a/b"}"#)
    }

    @Test func propertyListBody() throws {
        let body = RequestBody.propertyList(.dictionary(["a": .integer(1)]))
        #expect(body.contentType == "application/x-plist")
        #expect(String(decoding: try bytes(of: body), as: UTF8.self).contains("<key>a</key>\n\t<integer>1</integer>"))
    }

    @Test func fileBodyIsStreamedAndRereadOnEveryAttempt() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attache-body-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("f.bin").path
        let content = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try Data(content).write(to: URL(fileURLWithPath: path))
        let body = try RequestBody.file(path: path, contentType: "application/octet-stream")
        #expect(body.length == 200_000)
        #expect(body.inMemoryBytes == nil)
        #expect(try bytes(of: body) == content)
        #expect(try bytes(of: body) == content)
        let missing = #expect(throws: AttacheError.self) { try RequestBody.file(path: path + ".missing") }
        #expect(missing?.code == .fileNotFound)
    }

    @Test func multipartBodyCarriesItsBoundary() throws {
        var multipart = try MultipartBody(boundary: "b0undary")
        try multipart.addField(name: "a", value: "1")
        let body = RequestBody.multipart(multipart)
        #expect(body.contentType == "multipart/form-data; boundary=b0undary")
        #expect(body.length == multipart.byteCount)
        #expect(try bytes(of: body).count == Int(multipart.byteCount))
    }

    @Test func rawBytesAndText() throws {
        #expect(try bytes(of: .bytes([1, 2, 3], contentType: "x/y")) == [1, 2, 3])
        #expect(RequestBody.text("é").contentType == "text/plain; charset=utf-8")
        #expect(RequestBody.text("é").length == 2)
    }
}

@Suite struct ParameterValueTests {
    @Test func literalsBuildTheExpectedCases() {
        let value: ParameterValue = ["s": "x", "i": 1, "d": 1.5, "b": true, "n": nil, "a": [1], "o": ["k": "v"]]
        guard case .dictionary(let members) = value else {
            Issue.record("not a dictionary")
            return
        }
        #expect(members["s"] == .string("x"))
        #expect(members["i"] == .integer(1))
        #expect(members["d"] == .number(1.5))
        #expect(members["b"] == .bool(true))
        #expect(members["n"] == .null)
        #expect(members["a"] == .array([.integer(1)]))
        #expect(members["o"] == .dictionary(["k": .string("v")]))
    }

    @Test func convertsToJSON() {
        let value: ParameterValue = ["a": 1, "b": .set(["y", "x"]), "c": .date(Date(timeIntervalSince1970: 5)), "d": nil]
        #expect(
            value.jsonValue
                == .object([
                    "a": .number(1), "b": .array([.string("x"), .string("y")]), "c": .number(5), "d": .null,
                ]))
    }

    @Test func jsonNumbersBecomeIntegersWhenExact() {
        #expect(ParameterValue(JSONValue.number(3)) == .integer(3))
        #expect(ParameterValue(JSONValue.number(-0.5)) == .number(-0.5))
        #expect(ParameterValue(JSONValue.number(1e300)) == .number(1e300))
    }

    enum Kind: String, Encodable { case photo }
    struct Nested: Encodable {
        let kind: Kind
        let list: [Int]
        let optional: Int?
        let explicitNull: Int?
        let big: UInt64
        let map: [String: Bool]

        enum CodingKeys: String, CodingKey { case kind, list, optional, explicitNull, big, map }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(kind, forKey: .kind)
            try container.encode(list, forKey: .list)
            try container.encodeIfPresent(optional, forKey: .optional)
            try container.encodeNil(forKey: .explicitNull)
            try container.encode(big, forKey: .big)
            var nested = container.nestedContainer(keyedBy: CodingKeys.self, forKey: .map)
            try nested.encode(true, forKey: .kind)
        }
    }

    @Test func encodableValuesBecomeParameterTrees() throws {
        let value = try ParameterValue(
            encoding: Nested(kind: .photo, list: [1, 2], optional: nil, explicitNull: nil, big: .max, map: [:]))
        #expect(
            value
                == .dictionary([
                    "kind": .string("photo"), "list": .array([.integer(1), .integer(2)]), "explicitNull": .null,
                    "big": .string("18446744073709551615"), "map": .dictionary(["kind": .bool(true)]),
                ]))
    }

    struct Throwing: Encodable {
        struct Failure: Error {}
        func encode(to encoder: any Encoder) throws { throw Failure() }
    }

    @Test func anEncodingFailureIsAnAttacheError() {
        let error = #expect(throws: AttacheError.self) { try ParameterValue(encoding: Throwing()) }
        #expect(error?.code == .invalidArgument)
    }
}
