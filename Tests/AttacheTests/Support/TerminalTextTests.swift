import Foundation
import Testing

@testable import AttacheCore

/// The one escaping rule for text written to a terminal (``TerminalText``, docs/EXIT-STATUS.md).
@Suite("terminal text")
struct TerminalTextTests {
    static let cases: [(String, String)] = [
        ("photo.jpg", "photo.jpg"),
        ("ünïcødé 写真 🙂.jpg", "ünïcødé 写真 🙂.jpg"),
        ("a\\b", "a\\b"),
        ("\u{1B}[2J", #"\x1b[2J"#),
        ("\u{1B}]0;title\u{7}", #"\x1b]0;title\x07"#),
        ("line\nforged\r", #"line\nforged\r"#),
        ("tab\there", #"tab\there"#),
        ("nul\u{0}del\u{7F}", #"nul\x00del\x7f"#),
        ("csi\u{9B}2J", #"csi\u{9b}2J"#),
        ("c1\u{80}\u{9F}\u{A0}end", "c1\\u{80}\\u{9f}\u{A0}end"),
        ("rtl\u{202E}gpj.exe", #"rtl\u{202e}gpj.exe"#),
        ("\u{2028}\u{2029}\u{2066}\u{2069}\u{202A}", #"\u{2028}\u{2029}\u{2066}\u{2069}\u{202a}"#),
        ("\u{2027}\u{202F}\u{2065}\u{206A}", "\u{2027}\u{202F}\u{2065}\u{206A}"),
    ]

    @Test("escapes C0, DEL, C1 and the format controls; leaves everything else", arguments: cases)
    func escaping(_ input: String, _ expected: String) {
        #expect(TerminalText.escaping(input) == expected)
        #expect(TerminalText.needsEscaping(input) == (input != expected))
        let escaped = Array(TerminalText.escaping(input).utf8)
        #expect(!escaped.contains { $0 < 0x20 || $0 == 0x7F })
        #expect(!zip(escaped, escaped.dropFirst()).contains { $0 == 0xC2 && $1 < 0xA0 })
    }

    @Test("every scalar below U+00A0 but printable ASCII is escaped")
    func everyControl() {
        for value in 0..<0xA0 {
            let text = String(Unicode.Scalar(UInt8(value)))
            let printable = (0x20..<0x7F).contains(value)
            #expect(TerminalText.needsEscaping(text) == !printable, "U+\(String(value, radix: 16))")
        }
    }

    @Test("JSON keeps the exact value with DEL and C1 escaped")
    func json() throws {
        let value = "a\u{7F}b\u{9B}c\u{85}d\u{A0}é\u{1B}"
        let encoder = JSONEncoder()
        let raw = [UInt8](try encoder.encode(["m": value]))
        let escaped = TerminalText.escapingJSONControls(raw)
        #expect(!escaped.contains(0x7F))
        #expect(!zip(escaped, escaped.dropFirst()).contains { $0 == 0xC2 && $1 < 0xA0 })
        #expect(String(decoding: escaped, as: UTF8.self).contains(#"\u007f"#))
        #expect(String(decoding: escaped, as: UTF8.self).contains(#"\u009b"#))
        let decoded = try JSONDecoder().decode([String: String].self, from: Data(escaped))
        #expect(decoded["m"] == value)
    }
}
