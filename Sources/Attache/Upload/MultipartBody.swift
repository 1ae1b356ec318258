import FoundationEssentials
import Glibc

/// A `multipart/form-data` body (RFC 7578) whose exact length is known before it is sent.
///
/// Fields and file parts are added in order; file parts are ``AttacheCore/ByteSource``s that are read only
/// when the body is streamed, so a body over a 10 GB file costs a few hundred bytes of memory until then.
/// Names and filenames are written so that every common receiver (Werkzeug, PHP, Python's `email`,
/// `attache-server`) reads exactly one part with the same name: `"`, `\`, `/`, control
/// characters and white space at either end are written as `%XX`, and an empty name is refused.
///
/// ```swift
/// var body = MultipartBody()
/// try body.addField(name: "chatId", value: "42")
/// try body.addFile(name: "file", filename: "photo.jpg", contentType: "image/jpeg",
///                  source: try FileSource(path: "photo.jpg"))
/// let length = body.byteCount        // exact Content-Length
/// let reader = try body.makeReader() // stream it
/// ```
public struct MultipartBody: ByteSource {
    /// One part of the body.
    package struct Part: Sendable {
        /// The part's header block, ending with the blank line.
        let head: [UInt8]
        /// The part's content.
        let content: any ByteSource
        /// The form name.
        package let name: String
        /// The filename, for file parts.
        package let filename: String?
    }

    /// The boundary between parts, without the leading dashes.
    package let boundary: String
    /// The parts in order.
    package private(set) var parts: [Part] = []

    /// The value for the `Content-Type` header.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Creates an empty body with a fresh random boundary.
    public init() {
        self.boundary = MultipartBody.randomBoundary()
    }

    /// Creates an empty body with the given boundary.
    /// - Throws: ``AttacheCore/AttacheError/Code/invalidArgument`` when the boundary is empty, longer than 70
    ///   characters or contains characters RFC 2046 does not allow.
    package init(boundary: String) throws {
        let allowed = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=?")
        guard (1...70).contains(boundary.count), boundary.allSatisfy(allowed.contains),
            boundary.last != " "
        else {
            throw AttacheError(.invalidArgument, stage: .upload, "invalid multipart boundary")
        }
        self.boundary = boundary
    }

    /// Adds a text field. Repeat the call to send a name several times (`tags[]`).
    /// - Throws: ``AttacheCore/AttacheError/Code/invalidArgument`` when the name is empty.
    public mutating func addField(name: String, value: String) throws {
        let head = try header(name: name, filename: nil, contentType: nil)
        parts.append(Part(head: head, content: DataSource(value), name: name, filename: nil))
    }

    /// Adds a file part whose bytes come from `source` when the body is streamed.
    /// - Throws: ``AttacheCore/AttacheError/Code/invalidArgument`` when the name or filename is empty or the content
    ///   type holds a control character.
    public mutating func addFile(
        name: String, filename: String, contentType: String, source: any ByteSource
    ) throws {
        let head = try header(name: name, filename: filename, contentType: contentType)
        parts.append(Part(head: head, content: source, name: name, filename: filename))
    }

    /// The exact length of the encoded body in bytes.
    public var byteCount: Int64 {
        var total: Int64 = 0
        for part in parts {
            total += Int64(part.head.count) + part.content.byteCount + 2  // trailing CRLF
        }
        total += Int64(2 + boundary.utf8.count + 4)  // "--" boundary "--\r\n"
        return total
    }

    /// Opens a reader over the whole encoded body.
    public func makeReader() throws -> any ByteReader {
        var sources: [any ByteSource] = []
        sources.reserveCapacity(parts.count * 3 + 1)
        for part in parts {
            sources.append(DataSource(part.head))
            sources.append(part.content)
            sources.append(DataSource("\r\n"))
        }
        sources.append(DataSource("--\(boundary)--\r\n"))
        return try ConcatenatedSource(sources).makeReader()
    }

    private func header(name: String, filename: String?, contentType: String?) throws -> [UInt8] {
        var text = "--\(boundary)\r\nContent-Disposition: form-data; name=\""
        text += try Self.escape(name, what: "part name")
        text += "\""
        if let filename {
            text += "; filename=\"" + (try Self.escape(filename, what: "filename")) + "\""
        }
        text += "\r\n"
        if let contentType {
            guard !contentType.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
            else {
                throw AttacheError(
                    .invalidArgument, stage: .upload, "the content type contains a control character")
            }
            text += "Content-Type: \(contentType)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// Writes a name or filename as the value of a quoted `Content-Disposition` parameter.
    ///
    /// The value sent is the name itself, or a clearly replaced form of it: these characters become
    /// `%XX` (the uppercase hex of each of their UTF-8 bytes), everything else, `%` and non-ASCII
    /// included, goes as raw UTF-8:
    /// - `"`, CR and LF, as the WHATWG form-data encoding that browsers and curl ≥ 7.81 use;
    /// - `\`: Werkzeug ≥ 2.3, PHP, Python's `email` and RFC 7230 read it as an escape (`a\` made
    ///   Werkzeug see no file at all), browsers send it raw; only `%5C` reads the same everywhere;
    /// - `/`: PHP keeps only what follows the last `/` or `\` of a filename;
    /// - the other C0 controls and DEL, which no two parsers treat alike when raw;
    /// - white space (Unicode `White_Space`) at the start or the end, which Python's
    ///   `get_filename()` and others strip;
    /// - a `%` followed by `22`, which becomes `%2522`: Werkzeug ≥ 2.3 turns every `%22` back into
    ///   `"`, and would otherwise show a quote the name never had.
    ///
    /// Receivers do not decode these escapes (browsers' names are read the same way), except that
    /// Werkzeug ≥ 2.3 shows `%22` as the `"` it stands for. `RFC 5987`'s `filename*` is not sent:
    /// RFC 7578 §4.2 forbids it in `multipart/form-data`.
    ///
    /// ```swift
    /// try MultipartBody.escape(#"say "hi"\.txt"#)  // "say %22hi%22%5C.txt"
    /// ```
    /// - Throws: ``AttacheCore/AttacheError/Code/invalidArgument`` when `value` is empty (PHP reads an empty
    ///   filename as "no file"); the message names `what`.
    package static func escape(_ value: String, what: String = "name") throws -> String {
        // The common case, printable ASCII with nothing to replace (no space, quote, slash, backslash or
        // percent sign), goes as it is without the scalar-by-scalar pass below.
        if !value.isEmpty,
            value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C && $0 != 0x2F && $0 != 0x25 })
        {
            return value
        }
        let scalars = Array(value.unicodeScalars)
        guard !scalars.isEmpty else {
            throw AttacheError(.invalidArgument, stage: .upload, "the \(what) is empty")
        }
        let leading = scalars.prefix { $0.properties.isWhitespace }.count
        let trailing = leading == scalars.count ? 0 : scalars.reversed().prefix { $0.properties.isWhitespace }.count
        var out = String.UnicodeScalarView()
        for (index, scalar) in scalars.enumerated() {
            let atEdge = index < leading || index >= scalars.count - trailing
            let replaced: Bool
            switch scalar {
            case "\"", "\\", "/": replaced = true
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: replaced = true
            case "%": replaced = scalars[(index + 1)...].starts(with: ["2", "2"])
            default: replaced = atEdge
            }
            guard replaced else {
                out.append(scalar)
                continue
            }
            for byte in String(scalar).utf8 {
                out.append(contentsOf: ("%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)).unicodeScalars)
            }
        }
        return String(out)
    }

    /// A boundary of a 31-character prefix and 32 random hex digits: 63 characters, under RFC 2046's 70.
    static func randomBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        let hex = (0..<2).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }
        return "----------------AttacheBoundary" + hex.joined()
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
