import Testing
@testable import Attache

/// How one line of a response head, as curl hands it over, is read.
@Suite struct HeaderLineTests {
    private func parse(_ text: String) -> HeaderLine {
        Array(text.utf8).withUnsafeBytes { HeaderLine($0) }
    }

    @Test func statusLinesStartANewAnswer() {
        #expect(parse("HTTP/1.1 206 Partial Content\r\n") == .status(206))
        #expect(parse("HTTP/2 200 \r\n") == .status(200))
        #expect(parse("HTTP/1.1  100 Continue\r\n") == .status(100))
        #expect(parse("HTTP/1.1\r\n") == .status(0))
        #expect(parse("HTTP/1.1 404\r\n") == .status(404))
        #expect(parse("HTTP/1.1 20x OK\r\n") == .status(0))
        #expect(parse("HTTP/1.1 OK 200\r\n") == .status(0))
        #expect(parse("HTTP/1.1 2000000000000000000000 Big\r\n") == .status(0))
    }

    @Test func fieldsAreTrimmedOfSpacesTabsAndTheLineEnd() {
        #expect(parse("Content-Type: application/json\r\n") == .field(name: "Content-Type", value: "application/json"))
        #expect(parse("Retry-After:\t3 \r\n") == .field(name: "Retry-After", value: "3"))
        #expect(parse("X-Empty:\r\n") == .field(name: "X-Empty", value: ""))
        #expect(parse("Location: http://a/b:c\r\n") == .field(name: "Location", value: "http://a/b:c"))
        #expect(parse("X-Name: caf\u{e9}\n") == .field(name: "X-Name", value: "caf\u{e9}"))
    }

    @Test func theEmptyLineEndsTheHead() {
        #expect(parse("\r\n") == .other)
        #expect(parse("") == .other)
        #expect(parse("garbage\r\n") == .other)
    }

    /// A value Attache sends: anything but a control character other than tab, whatever the string's
    /// storage (a native String, a Substring, multi-byte scalars).
    @Test func fieldValuesRefuseControlCharactersOnly() {
        #expect(HeaderFieldSyntax.isValidValue("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        #expect(HeaderFieldSyntax.isValidValue("naïve 日本語 \t tab"))
        #expect(HeaderFieldSyntax.isValidValue(""))
        #expect(HeaderFieldSyntax.isValidValue("x, y"[...]))
        for bad in ["a\rb", "a\nb", "\u{0}", "a\u{7F}", "é\u{1B}"] {
            #expect(!HeaderFieldSyntax.isValidValue(bad), "\(Array(bad.utf8))")
            #expect(!HeaderFieldSyntax.isValidValue(("x" + bad).dropFirst()), "\(Array(bad.utf8))")
        }
    }
}
