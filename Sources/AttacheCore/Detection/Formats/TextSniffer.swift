/// Text: encoding (BOM or none), then JSON, XML and its children, HTML, vCard, iCalendar, CSV/TSV,
/// scripts, and plain text. Anything with a byte that never appears in text (the WHATWG "binary
/// data bytes") is not text.
enum TextSniffer {
    static func sniff(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        var encoding: String
        var view: ByteSpan
        var start = 0
        if head.be32(0) == 0xFFFE_0000 {
            (encoding, view) = ("utf-32le", narrow(head, from: 4, width: 4, little: true))
        } else if head.be32(0) == 0x0000_FEFF {
            (encoding, view) = ("utf-32be", narrow(head, from: 4, width: 4, little: false))
        } else if head.be24(0) == 0xEFBBBF {
            (encoding, view) = ("utf-8", head)
            start = 3
        } else if head.be16(0) == 0xFFFE {
            (encoding, view) = ("utf-16le", narrow(head, from: 2, width: 2, little: true))
        } else if head.be16(0) == 0xFEFF {
            (encoding, view) = ("utf-16be", narrow(head, from: 2, width: 2, little: false))
        } else if let wide = unmarkedWide(head) {
            encoding = wide.encoding
            view = narrow(head, from: 0, width: wide.width, little: wide.little)
        } else {
            (encoding, view) = ("utf-8", head)
        }
        guard start < view.count || !view.isEmpty else { return nil }
        guard !hasBinaryByte(view, from: start) else { return nil }
        let truncated = !source.headIsWhole
        if encoding == "utf-8" && !isUTF8(head, from: start, allowCutEnd: truncated) { encoding = "unknown-8bit" }
        var result = Sniffed(mimeType: subtype(view, from: start, truncated: truncated))
        result.metadata.textEncoding = encoding
        return result
    }

    /// Whether `b[start...]` holds a byte that never appears in text (the WHATWG binary data bytes:
    /// controls other than tab, line feed, form feed, carriage return and escape).
    private static func hasBinaryByte(_ b: ByteSpan, from start: Int) -> Bool {
        b.withUnsafeBytes { raw in
            let count = raw.count
            var index = start
            // Eight bytes at a time: a word without any byte below 0x20 needs no closer look.
            while index + 8 <= count {
                let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                let low = (word &- 0x2020_2020_2020_2020) & ~word & 0x8080_8080_8080_8080
                if low != 0 {
                    for offset in index..<index + 8 where isBinary(raw[offset]) { return true }
                }
                index += 8
            }
            while index < count {
                if isBinary(raw[index]) { return true }
                index += 1
            }
            return false
        }
    }

    @inline(__always) private static func isBinary(_ byte: UInt8) -> Bool {
        byte < 0x20 && (byte <= 0x08 || byte == 0x0B || (byte >= 0x0E && byte != 0x1B))
    }

    /// UTF-16 or UTF-32 without a BOM: ASCII text whose every other (or every fourth) byte is zero.
    private static func unmarkedWide(_ b: ByteSpan) -> (encoding: String, width: Int, little: Bool)? {
        let n = min(b.count, 512) & ~3
        guard n >= 8 else { return nil }
        func check(width: Int, little: Bool) -> Bool {
            for unit in stride(from: 0, to: n, by: width) {
                for index in 0..<width {
                    let byte = b[unit + index]
                    let isLow = little ? index == 0 : index == width - 1
                    if isLow ? byte == 0 : byte != 0 { return false }
                }
            }
            return true
        }
        if check(width: 4, little: true) { return ("utf-32le", 4, true) }
        if check(width: 4, little: false) { return ("utf-32be", 4, false) }
        if check(width: 2, little: true) { return ("utf-16le", 2, true) }
        if check(width: 2, little: false) { return ("utf-16be", 2, false) }
        return nil
    }

    /// Code units as bytes: ASCII stays, anything wider becomes 0x80 (a harmless non-ASCII byte).
    private static func narrow(_ b: ByteSpan, from start: Int, width: Int, little: Bool) -> ByteSpan {
        var result: [UInt8] = []
        result.reserveCapacity((b.count - start) / width)
        var unit = start
        while unit + width <= b.count {
            var value: UInt32 = 0
            for index in 0..<width {
                let byte = UInt32(b[unit + (little ? width - 1 - index : index)])
                value = value << 8 | byte
            }
            result.append(value < 0x80 ? UInt8(value) : 0x80)
            unit += width
        }
        return ByteSpan(result)
    }

    /// Whether `b[start...]` is valid UTF-8; a sequence cut by the end of a prefix is allowed.
    static func isUTF8(_ span: ByteSpan, from start: Int, allowCutEnd: Bool) -> Bool {
        span.withUnsafeBytes { isUTF8($0, from: start, allowCutEnd: allowCutEnd) }
    }

    private static func isUTF8(_ b: UnsafeRawBufferPointer, from start: Int, allowCutEnd: Bool) -> Bool {
        var index = start
        let count = b.count
        while index < count {
            // ASCII runs eight bytes at a time.
            if index + 8 <= count, b.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                index += 8
                continue
            }
            let byte = b[index]
            if byte < 0x80 {
                index += 1
                continue
            }
            let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2
            guard byte >= 0xC2 && byte <= 0xF4 else { return false }
            let minimum: UInt32 = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000
            var value = UInt32(byte) & (0xFF >> (length + 1))
            for offset in 1..<length {
                guard index + offset < count else { return allowCutEnd }
                let next = b[index + offset]
                guard next & 0xC0 == 0x80 else { return false }
                value = value << 6 | UInt32(next & 0x3F)
            }
            if value < minimum || value > 0x10FFFF || (0xD800...0xDFFF).contains(value) { return false }
            index += length
        }
        return true
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0C }

    private static func lower(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }

    /// Case-insensitive ASCII match of `text` (given in lower case) at `offset`.
    private static func matchesIgnoringCase(_ b: ByteSpan, _ text: StaticString, at offset: Int) -> Bool {
        let length = text.utf8CodeUnitCount
        guard b.has(length, at: offset) else { return false }
        for index in 0..<length where lower(b[offset + index]) != text.utf8Start[index] { return false }
        return true
    }

    static func subtype(_ b: ByteSpan, from start: Int, truncated: Bool) -> String {
        var index = start
        while index < b.count, isSpace(b[index]) { index += 1 }
        guard index < b.count else { return "text/plain" }
        switch b[index] {
        case 0x3C:  // <
            if let markup = markup(b, from: index) { return markup }
        case 0x7B, 0x5B:  // { [
            var parser = JSONScanner(bytes: b, position: index, truncated: truncated)
            if parser.document() { return "application/json" }
        case 0x23 where b.matches("#!", at: index):
            let line = index..<(b.firstIndex(of: 0x0A, from: index) ?? b.count)
            if b.firstIndex(of: "python", in: line) != nil { return "text/x-python" }
            if b.firstIndex(of: "node", in: line) != nil { return "text/javascript" }
            return "text/x-shellscript"
        default:
            break
        }
        if matchesIgnoringCase(b, "begin:vcard", at: index) { return "text/vcard" }
        if matchesIgnoringCase(b, "begin:vcalendar", at: index) { return "text/calendar" }
        if b.matches("WEBVTT", at: index) { return "text/vtt" }
        if let table = delimited(b, from: start, truncated: truncated) { return table }
        return "text/plain"
    }

    private static let htmlTags: [StaticString] = [
        "!doctype html", "html", "head", "script", "iframe", "h1", "div", "font", "table", "a", "style",
        "title", "b", "body", "br", "p", "meta", "link",
    ]

    /// A document starting with `<`: XML (by declaration or a closed root element), SVG, HTML.
    private static func markup(_ b: ByteSpan, from start: Int) -> String? {
        var index = start
        var isXML = false
        // Skip the prolog: declaration, processing instructions, comments, doctype.
        for _ in 0..<64 {
            while index < b.count, isSpace(b[index]) { index += 1 }
            guard b.u8(index) == 0x3C else { return isXML ? "application/xml" : nil }
            if b.matches("<?", at: index) {
                if b.matches("<?xml", at: index) { isXML = true }
                guard let end = b.firstIndex(of: "?>", in: index..<b.count) else { return isXML ? "application/xml" : nil }
                index = end + 2
            } else if b.matches("<!--", at: index) {
                guard let end = b.firstIndex(of: "-->", in: index..<b.count) else { return isXML ? "application/xml" : "text/html" }
                index = end + 3
            } else if matchesIgnoringCase(b, "<!doctype", at: index) {
                if matchesIgnoringCase(b, "<!doctype html", at: index) && !isXML { return "text/html" }
                var depth = 0
                var cursor = index
                while cursor < b.count {
                    if b[cursor] == 0x5B { depth += 1 }
                    if b[cursor] == 0x5D { depth -= 1 }
                    if b[cursor] == 0x3E && depth <= 0 { break }
                    cursor += 1
                }
                if matchesIgnoringCase(b, "<!doctype svg", at: index) { return "image/svg+xml" }
                index = cursor + 1
            } else {
                break
            }
        }
        guard b.u8(index) == 0x3C else { return isXML ? "application/xml" : nil }
        var nameEnd = index + 1
        while nameEnd < b.count, !isSpace(b[nameEnd]), b[nameEnd] != 0x3E, b[nameEnd] != 0x2F { nameEnd += 1 }
        // The root element's local name (after any namespace prefix), compared without case.
        var localStart = index + 1
        if let colon = b.firstIndex(of: 0x3A, from: localStart), colon < nameEnd { localStart = colon + 1 }
        func isName(_ text: StaticString) -> Bool {
            nameEnd - localStart == text.utf8CodeUnitCount && matchesIgnoringCase(b, text, at: localStart)
        }
        if isName("svg") { return "image/svg+xml" }
        if isName("html") { return isXML ? "application/xhtml+xml" : "text/html" }
        if isName("rss") { return "application/rss+xml" }
        if isName("feed") { return isXML ? "application/atom+xml" : nil }
        if isName("kml") { return "application/vnd.google-earth.kml+xml" }
        if isName("gpx") { return "application/gpx+xml" }
        if !isXML {
            for tag in htmlTags {
                if matchesIgnoringCase(b, tag, at: index + 1),
                    let after = b.u8(index + 1 + tag.utf8CodeUnitCount), after == 0x3E || after == 0x20 || isSpace(UInt8(after))
                {
                    return "text/html"
                }
            }
            // An element closed later in the text is XML without a declaration.
            if nameEnd > localStart {
                let name = b.span(index + 1..<nameEnd)
                var cursor = nameEnd
                while let open = b.firstIndex(of: 0x3C, from: cursor) {
                    if b.u8(open + 1) == 0x2F, b.matches(bytes: name, at: open + 2) { return "application/xml" }
                    cursor = open + 1
                }
            }
            return nil
        }
        return "application/xml"
    }

    /// CSV (comma, semicolon, pipe) or TSV: at least two records with the same number of delimiters
    /// outside quotes, and either a third record or two delimiters per record.
    private static func delimited(_ b: ByteSpan, from start: Int, truncated: Bool) -> String? {
        // Without a line feed there is at most one record.
        guard b.firstIndex(of: 0x0A, from: max(0, start)) != nil else { return nil }
        // Comma, tab, semicolon, pipe, in that order. Each pass usually ends at the first line.
        if let table = delimited(b, from: start, truncated: truncated, by: 0x2C) { return table }
        if let table = delimited(b, from: start, truncated: truncated, by: 0x09) { return table }
        if let table = delimited(b, from: start, truncated: truncated, by: 0x3B) { return table }
        return delimited(b, from: start, truncated: truncated, by: 0x7C)
    }

    private static func delimited(_ b: ByteSpan, from start: Int, truncated: Bool, by delimiter: UInt8) -> String? {
        // Records seen and the delimiter count of the first one: every record must have as many.
        var records = 0
        var expected = 0
        var current = 0
        var quoted = false
        let count = b.count
        var index = max(0, start)
        let consistent = b.withUnsafeBytes { raw -> Bool in
            while index < count, records < 64 {
                let byte = raw[index]
                if byte == 0x22 {
                    quoted.toggle()
                } else if !quoted && byte == delimiter {
                    current += 1
                } else if !quoted && byte == 0x0A {
                    if records == 0 { expected = current }
                    records += 1
                    if current == 0 || current != expected { return false }
                    current = 0
                }
                index += 1
            }
            return true
        }
        guard consistent else { return nil }
        // The last record counts when the whole file was seen and it is not an empty last line.
        if !truncated && index >= count && current > 0 {
            if records > 0 && current != expected { return nil }
            if records == 0 { expected = current }
            records += 1
        }
        guard records >= 2, records >= 3 || expected >= 2 else { return nil }
        return delimiter == 0x09 ? "text/tab-separated-values" : "text/csv"
    }
}

/// A JSON syntax check that accepts a document cut off by the end of a prefix.
struct JSONScanner {
    let bytes: ByteSpan
    var position: Int
    let truncated: Bool
    private var depth = 0

    init(bytes: ByteSpan, position: Int, truncated: Bool) {
        self.bytes = bytes
        self.position = position
        self.truncated = truncated
    }

    /// One complete value followed only by white space, or a value cut by the end of a prefix.
    mutating func document() -> Bool {
        switch value() {
        case .cut: return truncated
        case .invalid: return false
        case .ok:
            skipSpace()
            return position >= bytes.count
        }
    }

    private enum Outcome { case ok, invalid, cut }

    private mutating func skipSpace() {
        while position < bytes.count {
            let byte = bytes[position]
            guard byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D else { return }
            position += 1
        }
    }

    private mutating func value() -> Outcome {
        skipSpace()
        guard position < bytes.count else { return .cut }
        switch bytes[position] {
        case 0x7B: return container(close: 0x7D, keyed: true)
        case 0x5B: return container(close: 0x5D, keyed: false)
        case 0x22: return string()
        case 0x74: return literal("true")
        case 0x66: return literal("false")
        case 0x6E: return literal("null")
        case 0x2D, 0x30...0x39: return number()
        default: return .invalid
        }
    }

    private mutating func container(close: UInt8, keyed: Bool) -> Outcome {
        depth += 1
        defer { depth -= 1 }
        guard depth < 512 else { return .invalid }
        position += 1
        skipSpace()
        guard position < bytes.count else { return .cut }
        if bytes[position] == close {
            position += 1
            return .ok
        }
        while true {
            if keyed {
                skipSpace()
                guard position < bytes.count else { return .cut }
                guard bytes[position] == 0x22 else { return .invalid }
                let key = string()
                guard key == .ok else { return key }
                skipSpace()
                guard position < bytes.count else { return .cut }
                guard bytes[position] == 0x3A else { return .invalid }
                position += 1
            }
            let element = value()
            guard element == .ok else { return element }
            skipSpace()
            guard position < bytes.count else { return .cut }
            if bytes[position] == close {
                position += 1
                return .ok
            }
            guard bytes[position] == 0x2C else { return .invalid }
            position += 1
        }
    }

    private mutating func string() -> Outcome {
        position += 1
        while position < bytes.count {
            let byte = bytes[position]
            if byte == 0x22 {
                position += 1
                return .ok
            }
            if byte < 0x20 { return .invalid }
            position += byte == 0x5C ? 2 : 1
        }
        return .cut
    }

    private mutating func literal(_ text: StaticString) -> Outcome {
        for index in 0..<text.utf8CodeUnitCount {
            guard position < bytes.count else { return .cut }
            guard bytes[position] == text.utf8Start[index] else { return .invalid }
            position += 1
        }
        return .ok
    }

    private mutating func number() -> Outcome {
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            guard (0x30...0x39).contains(byte) || byte == 0x2B || byte == 0x2D || byte == 0x2E || byte == 0x45 || byte == 0x65
            else { break }
            position += 1
        }
        if position >= bytes.count { return .cut }
        return position > start ? .ok : .invalid
    }
}
