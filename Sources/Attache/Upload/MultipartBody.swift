import Foundation

/// A `multipart/form-data` body (RFC 7578) whose exact length is known before it is sent.
///
/// Fields and file parts are added in order; file parts are ``ByteSource``s that are read only when
/// the body is streamed, so a body over a 10 GB file costs a few hundred bytes of memory until then.
/// Names and filenames are escaped the way browsers and curl ≥ 7.81 do it: `"` → `%22`, CR → `%0D`,
/// LF → `%0A`, UTF-8 kept raw. Any other control character is refused.
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
    public struct Part: Sendable {
        /// The part's header block, ending with the blank line.
        let head: [UInt8]
        /// The part's content.
        let content: any ByteSource
        /// The form name.
        public let name: String
        /// The filename, for file parts.
        public let filename: String?
    }

    /// The boundary between parts, without the leading dashes.
    public let boundary: String
    /// The parts in order.
    public private(set) var parts: [Part] = []

    /// The value for the `Content-Type` header.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Creates an empty body with a fresh random boundary.
    public init() {
        self.boundary = MultipartBody.randomBoundary()
    }

    /// Creates an empty body with the given boundary.
    /// - Throws: ``AttacheError/Code/invalidArgument`` when the boundary is empty, longer than 70
    ///   characters or contains characters RFC 2046 does not allow.
    public init(boundary: String) throws {
        let allowed = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=?")
        guard (1...70).contains(boundary.count), boundary.allSatisfy(allowed.contains),
            boundary.last != " "
        else {
            throw AttacheError(.invalidArgument, stage: .upload, "invalid multipart boundary")
        }
        self.boundary = boundary
    }

    /// Adds a text field. Repeat the call to send a name several times (`tags[]`).
    /// - Throws: ``AttacheError/Code/invalidArgument`` when the name holds a control character other
    ///   than CR or LF.
    public mutating func addField(name: String, value: String) throws {
        let head = try header(name: name, filename: nil, contentType: nil)
        parts.append(Part(head: head, content: DataSource(value), name: name, filename: nil))
    }

    /// Adds a file part whose bytes come from `source` when the body is streamed.
    /// - Throws: ``AttacheError/Code/invalidArgument`` when the name, filename or content type holds a
    ///   forbidden control character.
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

    /// Escapes a name or filename for a quoted `Content-Disposition` parameter.
    ///
    /// Follows the WHATWG HTML form-data encoding that browsers and curl ≥ 7.81 use: `"` → `%22`,
    /// CR → `%0D`, LF → `%0A`, everything else (UTF-8 included) raw. Other C0 controls and DEL are
    /// refused: no receiving parser agrees on them.
    /// - Throws: ``AttacheError/Code/invalidArgument`` naming `what`.
    public static func escape(_ value: String, what: String = "name") throws -> String {
        var out = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out.append(contentsOf: "%22".unicodeScalars)
            case "\r": out.append(contentsOf: "%0D".unicodeScalars)
            case "\n": out.append(contentsOf: "%0A".unicodeScalars)
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                throw AttacheError(
                    .invalidArgument, stage: .upload,
                    "the \(what) contains control character U+\(String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 4))")
            default: out.append(scalar)
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
