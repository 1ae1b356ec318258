import Foundation

extension Duration {
    /// The duration in whole milliseconds, rounded down.
    var milliseconds: Int64 {
        let parts = components
        return parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000
    }
}

/// One line of a response head as curl's header callback hands it over.
enum HeaderLine: Equatable {
    /// `HTTP/1.1 206 Partial Content`: a new response begins (after a redirect or 100 Continue).
    case status(Int)
    case field(name: String, value: String)
    /// The empty line that ends the head, or anything unparseable.
    case other

    init(_ bytes: UnsafeRawBufferPointer) {
        let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if line.hasPrefix("HTTP/") {
            let parts = line.split(separator: " ")
            self = .status(parts.count > 1 ? Int(parts[1]) ?? 0 : 0)
        } else if let colon = line.firstIndex(of: ":") {
            self = .field(
                name: String(line[..<colon]).trimmingCharacters(in: .whitespaces),
                value: String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        } else {
            self = .other
        }
    }
}
