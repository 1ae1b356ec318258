import Foundation
import Testing
@testable import Attache

/// The encoder against AFNetworking's documented and tested outputs, and every option.
@Suite struct URLFormEncoderTests {
    // MARK: AFNetworking's own examples

    /// The example in AFNetworking 2's `AFURLRequestSerialization.h` (the old clients' version).
    @Test func reproducesAFNetworkingsDocumentedExample() {
        let parameters: Parameters = [
            "name": "bang", "phone": ["mobile": "xx"], "families": ["father"], "nums": .set([1, 2]),
        ]
        #expect(URLFormEncoder().encode(parameters) == "families[]=father&name=bang&nums=1&nums=2&phone[mobile]=xx")
    }

    /// AFNetworking's `testQueryStringFromParameters`.
    @Test func reproducesAFNetworkingsQueryStringTest() {
        #expect(URLFormEncoder().encode(["key": "value", "key1": "value&"]) == "key=value&key1=value%26")
        #expect(URLFormEncoder.afNetworking3.encode(["key": "value", "key1": "value&"]) == "key=value&key1=value%26")
    }

    /// AFNetworking 3's `testNestedDictionaryQueryStringFromParameters`: brackets escaped in names.
    @Test func reproducesAFNetworking3sNestedDictionaryTest() {
        let parameters: Parameters = ["key": ["key1": "value"], "key2": "value&"]
        #expect(URLFormEncoder.afNetworking3.encode(parameters) == "key%5Bkey1%5D=value&key2=value%26")
        #expect(URLFormEncoder().encode(parameters) == "key[key1]=value&key2=value%26")
    }

    /// AFNetworking's `testPercentEscapingString` (with `/` and `?` kept) and its URL-encodable test.
    @Test func reproducesAFNetworkingsPercentEscaping() {
        let afNetworking = URLFormEncoder.afNetworking3
        #expect(
            afNetworking.encode(["key": ":#[]@!$&'()*+,;=?/"])
                == "key=%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D?/")
        #expect(
            afNetworking.encode(["key": " :#[]@!$&'()*+,;=/?"])
                == "key=%20%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D/?")
        // The default escapes `/` and `?` too: only RFC 3986's unreserved characters stay.
        #expect(
            URLFormEncoder().encode(["key": " :#[]@!$&'()*+,;=/?%"])
                == "key=%20%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D%2F%3F%25")
        #expect(URLFormEncoder().encode(["key": "AZaz09-._~"]) == "key=AZaz09-._~")
    }

    /// AFNetworking's test that already-escaped text is escaped again (`%` → `%25`).
    @Test func escapesPercentSignsOfAlreadyEscapedText() {
        #expect(
            URLFormEncoder().encode(["key": "%20%21%22%23%24%25%26%27%28%29%2A%2B%2C%2F"])
                == "key=%2520%2521%2522%2523%2524%2525%2526%2527%2528%2529%252A%252B%252C%252F")
    }

    @Test func percentEncodesUnicodeAsUTF8() {
        #expect(URLFormEncoder().encode(["q": "漢字"]) == "q=%E6%BC%A2%E5%AD%97")
        #expect(URLFormEncoder().encode(["emoji": "😀é"]) == "emoji=%F0%9F%98%80%C3%A9")
        #expect(URLFormEncoder().encode(["ключ": "x"]) == "%D0%BA%D0%BB%D1%8E%D1%87=x")
    }

    // MARK: Structure

    @Test func nestsDictionariesArraysAndSets() {
        let parameters: Parameters = [
            "a": ["b": ["c": 1]],
            "list": [["x": 1], ["x": 2]],
            "matrix": [[1, 2], [3]],
        ]
        #expect(
            URLFormEncoder().encode(parameters)
                == "a[b][c]=1&list[][x]=1&list[][x]=2&matrix[][]=1&matrix[][]=2&matrix[][]=3")
    }

    @Test func sortsSetElementsByTheirTextAsAFNetworkingDoes() {
        // `description` order: "10" sorts before "2".
        #expect(URLFormEncoder().encode(["n": .set([2, 10, 1])]) == "n=1&n=10&n=2")
        #expect(URLFormEncoder().encode(["s": .set(["b", "a", "B"])]) == "s=B&s=a&s=b")
    }

    @Test func sortsKeysByCodePointAtEveryLevel() {
        let parameters: Parameters = ["b": ["z": 1, "a": 2, "B": 3], "a": 0, "A": 0]
        #expect(URLFormEncoder().encode(parameters) == "A=0&a=0&b[B]=3&b[a]=2&b[z]=1")
        let unsorted = URLFormEncoder(sortsKeys: false).encode(parameters)
        #expect(unsorted.split(separator: "&").sorted() == ["A=0", "a=0", "b[B]=3", "b[a]=2", "b[z]=1"])
    }

    @Test func leavesOutEmptyContainers() {
        #expect(URLFormEncoder().encode(["a": [], "b": [:], "c": "x"]) == "c=x")
        #expect(URLFormEncoder().encode([:]) == "")
    }

    // MARK: Options

    @Test func arrayEncodings() {
        let parameters: Parameters = ["a": ["x", "y"]]
        #expect(URLFormEncoder(arrayEncoding: .brackets).encode(parameters) == "a[]=x&a[]=y")
        #expect(URLFormEncoder(arrayEncoding: .noBrackets).encode(parameters) == "a=x&a=y")
        #expect(URLFormEncoder(arrayEncoding: .indexInBrackets).encode(parameters) == "a[0]=x&a[1]=y")
        #expect(
            URLFormEncoder(arrayEncoding: .indexInBrackets).encode(["a": [["b": 1], ["b": 2]]])
                == "a[0][b]=1&a[1][b]=2")
        #expect(URLFormEncoder(arrayEncoding: .brackets, bracketEncoding: .percentEscaped).encode(parameters)
            == "a%5B%5D=x&a%5B%5D=y")
    }

    @Test func boolEncodings() {
        #expect(URLFormEncoder().encode(["t": true, "f": false]) == "f=0&t=1")
        #expect(URLFormEncoder(boolEncoding: .literal).encode(["t": true, "f": false]) == "f=false&t=true")
    }

    @Test func numbers() {
        let parameters: Parameters = ["i": -42, "d": 1.5, "w": 2.0, "s": 0.1, "big": .integer(.max), "tiny": 1e-7]
        #expect(
            URLFormEncoder().encode(parameters)
                == "big=9223372036854775807&d=1.5&i=-42&s=0.1&tiny=1e-07&w=2")
    }

    @Test func dateEncodings() {
        let date = Date(timeIntervalSince1970: 1_700_000_000.5)
        let whole = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(URLFormEncoder().encode(["d": .date(whole)]) == "d=1700000000")
        #expect(URLFormEncoder().encode(["d": .date(date)]) == "d=1700000000.5")
        #expect(URLFormEncoder(dateEncoding: .millis).encode(["d": .date(date)]) == "d=1700000000500")
        #expect(URLFormEncoder(dateEncoding: .iso8601).encode(["d": .date(date)]) == "d=2023-11-14T22%3A13%3A20Z")
        #expect(
            URLFormEncoder(dateEncoding: .iso8601).encode(["d": .date(Date(timeIntervalSince1970: -86_401))])
                == "d=1969-12-30T23%3A59%3A59Z")
        #expect(URLFormEncoder(dateEncoding: .custom { _ in "a b" }).encode(["d": .date(date)]) == "d=a%20b")
    }

    @Test func nilEncodings() {
        let parameters: Parameters = ["a": nil, "b": "x", "c": ["d": nil]]
        #expect(URLFormEncoder(nilEncoding: .dropKey).encode(parameters) == "b=x")
        #expect(URLFormEncoder(nilEncoding: .emptyValue).encode(parameters) == "a=&b=x&c[d]=")
        #expect(URLFormEncoder(nilEncoding: .keyOnly).encode(parameters) == "a&b=x&c[d]")
        #expect(URLFormEncoder(nilEncoding: .nullLiteral).encode(parameters) == "a=null&b=x&c[d]=null")
    }

    @Test func spaceEncodings() {
        #expect(URLFormEncoder().encode(["q": "a b+c"]) == "q=a%20b%2Bc")
        #expect(URLFormEncoder(spaceEncoding: .plus).encode(["q": "a b+c"]) == "q=a+b%2Bc")
        #expect(URLFormEncoder(spaceEncoding: .plus).encode(["a b": "x"]) == "a+b=x")
    }

    @Test func bracketsInValuesAreAlwaysEscapedAndInNamesOnRequest() {
        #expect(URLFormEncoder().encode(["a[b]": "[c]"]) == "a[b]=%5Bc%5D")
        #expect(URLFormEncoder(bracketEncoding: .percentEscaped).encode(["a[b]": "[c]"]) == "a%5Bb%5D=%5Bc%5D")
    }

    // MARK: Pairs, Encodable, URLs

    @Test func pairsAreUnescapedAndInOrder() {
        let pairs = URLFormEncoder().pairs(["phone": ["mobile": "a b&"], "families": ["father", "mother"], "n": nil])
        #expect(pairs.map(\.name) == ["families[]", "families[]", "phone[mobile]"])
        #expect(pairs.map(\.value) == ["father", "mother", "a b&"])
        let keyOnly = URLFormEncoder(nilEncoding: .keyOnly).pairs(["n": nil])
        #expect(keyOnly.map(\.name) == ["n"] && keyOnly.map(\.value) == [""])
    }

    struct Search: Encodable {
        struct Phone: Encodable { let mobile: String }
        let q: String
        let page: Int
        let phone: Phone
        let tags: [String]
        let ids: Set<Int>
        let missing: String?
        let when: Date
        let token: Data
    }

    @Test func encodesEncodableValues() throws {
        let value = Search(
            q: "a b", page: 2, phone: .init(mobile: "xx"), tags: ["t1", "t2"], ids: [3, 1], missing: nil,
            when: Date(timeIntervalSince1970: 60), token: Data([0xFF, 0xEE]))
        #expect(
            try URLFormEncoder().encode(value)
                == "ids=1&ids=3&page=2&phone[mobile]=xx&q=a%20b&tags[]=t1&tags[]=t2&token=%2F%2B4%3D&when=60")
        let dictionary: [String: [String: Int]] = ["outer": ["inner": 1]]
        #expect(try URLFormEncoder().encode(dictionary) == "outer[inner]=1")
    }

    @Test func refusesAnEncodableThatIsNotKeyed() {
        #expect(throws: AttacheError.self) { try URLFormEncoder().encode([1, 2, 3]) }
        #expect(throws: AttacheError.self) { try URLFormEncoder().encode("text") }
    }

    @Test func convertsJSONValues() {
        let json = JSONValue.object([
            "n": .number(3), "x": .number(1.25), "s": .string("v"), "a": .array([.bool(true), .null]),
        ])
        #expect(URLFormEncoder().encode(ParameterValue.parametersOrEmpty(json)) == "a[]=1&n=3&s=v&x=1.25")
    }

    @Test func appendsAQueryToAURL() {
        let encoder = URLFormEncoder()
        #expect(encoder.url("http://h/p", appending: ["a": 1]) == "http://h/p?a=1")
        #expect(encoder.url("http://h/p?x=y", appending: ["a": 1]) == "http://h/p?x=y&a=1")
        #expect(encoder.url("http://h/p?", appending: ["a": 1]) == "http://h/p?a=1")
        #expect(encoder.url("http://h/p#top", appending: ["a": 1]) == "http://h/p?a=1#top")
        #expect(encoder.url("http://h/p", appending: [:]) == "http://h/p")
    }
}

extension ParameterValue {
    /// The members of a JSON object as parameters (tests only).
    static func parametersOrEmpty(_ json: JSONValue) -> Parameters {
        if case .dictionary(let members) = ParameterValue(json) { return members }
        return [:]
    }
}
