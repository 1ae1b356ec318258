import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

@Suite("JSONPointer and the XML answer reader")
struct JSONPointerTests {
    /// The example document of RFC 6901, section 5.
    static let document = try! JSONValue.parse(
        Array(
            #"{"foo":["bar","baz"],"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8,"~1":9}"#.utf8))

    @Test("RFC 6901's examples", arguments: [
        ("/foo/0", JSONValue.string("bar")), ("/", .number(0)), ("/a~1b", .number(1)), ("/c%d", .number(2)),
        ("/e^f", .number(3)), ("/g|h", .number(4)), ("/i\\j", .number(5)), ("/k\"l", .number(6)), ("/ ", .number(7)),
        ("/m~0n", .number(8)), ("/~01", .number(9)), ("/foo", .array([.string("bar"), .string("baz")])),
    ])
    func examples(pointer: String, expected: JSONValue) throws {
        #expect(try JSONPointer(pointer).resolve(in: Self.document) == expected)
    }

    @Test func emptyPointerIsTheWholeDocument() throws {
        #expect(try JSONPointer("").resolve(in: Self.document) == Self.document)
        #expect(try JSONPointer("").tokens.isEmpty)
    }

    @Test("array indices: no leading zeros, no '-', not past the end", arguments: ["/foo/01", "/foo/-", "/foo/2", "/foo/x", "/foo/0/x", "/missing"])
    func nothingSelected(pointer: String) throws {
        #expect(try JSONPointer(pointer).resolve(in: Self.document) == nil)
    }

    @Test("malformed pointers are errors", arguments: ["foo", "#/foo", "/a~2b", "/a~", "/~"])
    func malformed(pointer: String) {
        #expect(throws: AttacheError.self) { try JSONPointer(pointer) }
    }

    @Test func descriptionEscapes() throws {
        let pointer = JSONPointer(tokens: ["a/b", "m~n", "0"])
        #expect(pointer.description == "/a~1b/m~0n/0")
        #expect(try JSONPointer(pointer.description) == pointer)
    }

    @Test("XML: elements become members, repeats an array, CDATA and entities decoded")
    func xml() throws {
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- a comment -->
            <ListPart xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Part><N>1</N></Part><Part><N>2</N></Part>\
            <Name><![CDATA[a <b> & c]]></Name><Empty/><Text>x &lt;&#65;&#x42;&gt; &apos;y&apos;</Text></ListPart>
            """
        let document = try #require(XMLAnswerReader.read(Array(text.utf8)))
        #expect(document.root == "ListPart")
        #expect(document.value["Part"] == .array([.object(["N": .string("1")]), .object(["N": .string("2")])]))
        #expect(document.value["Name"] == .string("a <b> & c"))
        #expect(document.value["Empty"] == .string(""))
        #expect(document.value["Text"] == .string("x <AB> 'y'"))
    }

    @Test("XML: a DOCTYPE, mismatched tags, text outside the root, an unknown entity are unreadable", arguments: [
        #"<!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>"#, "<a><b></a></b>", "text<a/>", "<a>&nbsp;</a>", "<a>", "<a></a><b></b>",
        String(repeating: "<a>", count: 100) + String(repeating: "</a>", count: 100),
    ])
    func unreadableXML(text: String) {
        #expect(XMLAnswerReader.read(Array(text.utf8)) == nil)
    }
}
