/// Text made safe to write to a terminal: file names and server messages can hold escape sequences
/// (`ESC [ 2 J` clears the screen, `ESC ] 8 ;;` forges a link, `ESC ] 52` writes the clipboard), and a
/// line feed or carriage return inside a name can forge or hide a line of output.
///
/// The rule, applied to every line Attache writes for people (error lines, progress lines, the plain
/// output of `upload`, `batch`, `download`, `encrypt`, `recompress` and `detect`, log lines):
///
/// | character | written as |
/// |---|---|
/// | tab, line feed, carriage return | `\t`, `\n`, `\r` |
/// | any other C0 control U+0000–U+001F, and DEL U+007F | `\xHH` (two lower-case hex digits: `\x1b`) |
/// | C1 controls U+0080–U+009F | `\u{HH}` (`\u{9b}`, the one-character CSI) |
/// | line and paragraph separators U+2028, U+2029; bidirectional overrides and isolates U+202A–U+202E, U+2066–U+2069 | `\u{HHHH}` (`\u{202e}`) |
/// | a file-name byte that is not UTF-8, held as U+10FF80–U+10FFFF (``PlatformPath``) | `\xHH`, the byte (`caf\xe9.txt`) |
///
/// Everything else, other non-ASCII text included, is written as it is, and a backslash stays a
/// backslash: this is a display form, not a reversible encoding. `--json` output is the exact form:
/// JSON escapes every control character there (see ``escapingJSONControls(_:)``).
///
/// ```swift
/// let line = "attache: " + TerminalText.escaping(name)
/// ```
package enum TerminalText {
    /// `text` with the characters of the rule above replaced by their escapes; `text` itself when it
    /// has none (the common case costs one scan of its bytes).
    package static func escaping(_ text: String) -> String {
        guard needsEscaping(text) else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 16)
        append(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `text` holds a character that ``escaping(_:)`` replaces.
    package static func needsEscaping(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte < 0x20 || byte == 0x7F { return true }
                if byte == 0xC2, index + 1 < bytes.count, bytes[index + 1] < 0xA0 { return true }
                if byte == 0xE2, index + 2 < bytes.count, isFormatControl(bytes[index + 1], bytes[index + 2]) {
                    return true
                }
                if byte == 0xF4, index + 3 < bytes.count, isRawPathByte(bytes[index + 1], bytes[index + 2]) {
                    return true
                }
                index += 1
            }
            return false
        }
    }

    /// Appends the UTF-8 of `text` to `bytes`, escaped by the rule above.
    package static func append(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { source in
            var index = 0
            while index < source.count {
                let byte = source[index]
                if byte < 0x20 || byte == 0x7F {
                    switch byte {
                    case 0x09: appendASCII("\\t", to: &bytes)
                    case 0x0A: appendASCII("\\n", to: &bytes)
                    case 0x0D: appendASCII("\\r", to: &bytes)
                    default:
                        appendASCII("\\x", to: &bytes)
                        appendHex(UInt32(byte), digits: 2, to: &bytes)
                    }
                    index += 1
                } else if byte == 0xC2, index + 1 < source.count, source[index + 1] < 0xA0 {
                    // U+0080…U+009F: C2 80…C2 9F.
                    appendASCII("\\u{", to: &bytes)
                    appendHex(UInt32(source[index + 1]), digits: 2, to: &bytes)
                    bytes.append(UInt8(ascii: "}"))
                    index += 2
                } else if byte == 0xF4, index + 3 < source.count, isRawPathByte(source[index + 1], source[index + 2]) {
                    // U+10FF80…U+10FFFF: F4 8F BE 80…F4 8F BF BF, standing for the byte 0x80…0xFF.
                    let raw = (UInt32(source[index + 2] & 0x03) << 6) | UInt32(source[index + 3] & 0x3F)
                    appendASCII("\\x", to: &bytes)
                    appendHex(raw, digits: 2, to: &bytes)
                    index += 4
                } else if byte == 0xE2, index + 2 < source.count, isFormatControl(source[index + 1], source[index + 2]) {
                    let scalar = 0x2000 | (UInt32(source[index + 1] & 0x3F) << 6) | UInt32(source[index + 2] & 0x3F)
                    appendASCII("\\u{", to: &bytes)
                    appendHex(scalar, digits: 4, to: &bytes)
                    bytes.append(UInt8(ascii: "}"))
                    index += 3
                } else {
                    bytes.append(byte)
                    index += 1
                }
            }
        }
    }

    /// JSON text with DEL and the C1 controls, which JSON allows raw inside strings, written as
    /// `\u007f` and `\u0080`…`\u009f`: the same JSON value, and no byte a terminal acts on.
    ///
    /// Only valid where every such character is inside a string (always true of valid JSON, whose
    /// structure is ASCII and has no controls). C0 controls are escaped by every JSON encoder already.
    package static func escapingJSONControls(_ json: [UInt8]) -> [UInt8] {
        guard json.contains(where: { $0 == 0x7F || $0 == 0xC2 }) else { return json }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(json.count + 12)
        var index = 0
        while index < json.count {
            let byte = json[index]
            if byte == 0x7F {
                appendASCII("\\u007f", to: &bytes)
                index += 1
            } else if byte == 0xC2, index + 1 < json.count, json[index + 1] < 0xA0 {
                appendASCII("\\u00", to: &bytes)
                appendHex(UInt32(json[index + 1]), digits: 2, to: &bytes)
                index += 2
            } else {
                bytes.append(byte)
                index += 1
            }
        }
        return bytes
    }

    /// U+2028, U+2029, U+202A…U+202E (E2 80 A8…AE) and U+2066…U+2069 (E2 81 A6…A9).
    @inline(__always)
    private static func isFormatControl(_ second: UInt8, _ third: UInt8) -> Bool {
        (second == 0x80 && (0xA8...0xAE).contains(third)) || (second == 0x81 && (0xA6...0xA9).contains(third))
    }

    private static func appendASCII(_ text: StaticString, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private static func appendHex(_ value: UInt32, digits: Int, to bytes: inout [UInt8]) {
        let hex: StaticString = "0123456789abcdef"
        for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
            bytes.append(hex.utf8Start[Int((value >> UInt32(shift)) & 0xF)])
        }
    }

    /// Whether F4 `second` `third` … begins U+10FF80…U+10FFFF, a raw file-name byte.
    private static func isRawPathByte(_ second: UInt8, _ third: UInt8) -> Bool {
        second == 0x8F && (third == 0xBE || third == 0xBF)
    }
}
