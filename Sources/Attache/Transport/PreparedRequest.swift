internal import AttacheCore

/// A request checked once and ready to send: its URL parsed, its headers checked.
///
/// An operation prepares its request once, before its first attempt; every attempt and every
/// transport then uses the parsed form, so no URL is parsed twice. Reads the request's members
/// directly (`prepared.method`, `prepared.url`).
///
/// ```swift
/// let prepared = try TransportRequest(method: "GET", url: "https://example.com/f").prepared()
/// let response = try await CurlTransport.shared.send(prepared, sink: nil)
/// ```
@dynamicMemberLookup
package struct PreparedRequest: Sendable {
    /// The request as it was given.
    package let request: TransportRequest
    /// Its URL, parsed.
    let target: HTTPURL

    /// Checks `request`.
    ///
    /// - Throws: ``TransportError`` `.invalidArgument` when the URL is not `http://` or `https://` with
    ///   a host, or a header's name or value cannot be sent (the message names the header, never its
    ///   value: it may be a secret).
    package init(_ request: TransportRequest) throws {
        guard let target = HTTPURL(request.url) else {
            throw TransportError(
                .invalidArgument,
                "the URL must be http:// or https:// with a host: \(URLRedaction.redacting(request.url))")
        }
        try Self.check(request.connection.headers)
        try Self.check(request.headers)
        self.init(checked: request, target: target)
    }

    /// The same request with `headers` as its own headers (an attempt's `Range`, say): only the
    /// headers are checked, the URL stays parsed.
    ///
    /// - Throws: ``TransportError`` `.invalidArgument` naming a header that cannot be sent.
    package func replacingHeaders(_ headers: [HeaderField]) throws -> PreparedRequest {
        try Self.check(headers)
        var request = request
        request.headers = headers
        return PreparedRequest(checked: request, target: target)
    }

    /// The request with `fields` added, each replacing the fields of its name; only `fields` are checked
    /// (the others were when the request was prepared). For the trace context an attempt carries.
    /// - Throws: ``TransportError`` `.invalidArgument` when a field is not a valid header field.
    package func setting(_ fields: [HeaderField]) throws -> PreparedRequest {
        try Self.check(fields)
        var request = request
        request.headers.removeAll { header in fields.contains { $0.name.equalsIgnoringASCIICase(header.name) } }
        request.headers.append(contentsOf: fields)
        return PreparedRequest(checked: request, target: target)
    }

    private static func check(_ headers: [HeaderField]) throws {
        for header in headers {
            guard HeaderFieldSyntax.isValidName(header.name), HeaderFieldSyntax.isValidValue(header.value) else {
                throw TransportError(.invalidArgument, "invalid header \"\(header.name)\"")
            }
        }
    }

    /// A request whose headers were checked already (a redirect's next hop), at `target`.
    init(checked request: TransportRequest, target: HTTPURL) {
        self.request = request
        self.target = target
    }

    /// A member of the request.
    package subscript<Value>(dynamicMember keyPath: KeyPath<TransportRequest, Value>) -> Value {
        request[keyPath: keyPath]
    }
}

extension TransportRequest {
    /// The request checked and parsed for sending.
    ///
    /// - Throws: ``TransportError`` `.invalidArgument` (see ``PreparedRequest/init(_:)``).
    package func prepared() throws -> PreparedRequest {
        try PreparedRequest(self)
    }
}

/// An `http` or `https` URL with a host, parsed from its text in one pass over its bytes.
///
/// Only what the transport needs is kept: whether it is `https` and its host (lower-cased, without
/// user info or port), for the redirect rules, and the explicit port, for telemetry's `server.port`. curl
/// parses the URL again for the connection.
struct HTTPURL: Sendable, Hashable {
    /// The URL as given.
    let string: String
    let isHTTPS: Bool
    /// The host, lower-cased; an IPv6 literal keeps its brackets.
    let host: String
    /// The port the URL names, or nil when it names none (the scheme's default applies).
    let port: Int?

    /// Parses `string`; nil when it is not an `http`/`https` URL with a host, or holds a byte a URL may
    /// not hold (a space, a control character, a non-ASCII byte, one of `"<>\^`{|}`).
    init?(_ string: String) {
        // On the string's own storage: no copy of the bytes, and a host of up to 15 bytes is a small
        // string (no allocation at all).
        let parsed =
            string.utf8.withContiguousStorageIfAvailable { Self.parse($0) } ?? Self.parse(Array(string.utf8))
        guard let parsed else { return nil }
        self.string = string
        self.isHTTPS = parsed.isHTTPS
        self.host = parsed.host
        self.port = parsed.port
    }

    private static func parse<Bytes: RandomAccessCollection<UInt8>>(
        _ bytes: Bytes
    ) -> (isHTTPS: Bool, host: String, port: Int?)? where Bytes.Index == Int {
        guard bytes.allSatisfy(isURLByte), let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let scheme = bytes[bytes.startIndex..<colon]
        let isHTTPS: Bool
        if scheme.count == 4, scheme.elementsEqual("http".utf8, by: { $0 | 0x20 == $1 }) {
            isHTTPS = false
        } else if scheme.count == 5, scheme.elementsEqual("https".utf8, by: { $0 | 0x20 == $1 }) {
            isHTTPS = true
        } else {
            return nil
        }
        guard bytes[(colon + 1)...].starts(with: "//".utf8) else { return nil }
        let authorityStart = colon + 3
        let authorityEnd =
            bytes[authorityStart...].firstIndex {
                $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
            } ?? bytes.endIndex
        var authority = bytes[authorityStart..<authorityEnd]
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[(at + 1)...] }
        let hostEnd: Int
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostEnd = close + 1
        } else {
            hostEnd = authority.firstIndex(of: UInt8(ascii: ":")) ?? authority.endIndex
        }
        let portText = authority[hostEnd...]
        var port: Int?
        if let first = portText.first {
            guard first == UInt8(ascii: ":"), portText.dropFirst().allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            // Up to five digits; a longer run is no port (nil rather than an overflow).
            let digits = portText.dropFirst()
            if !digits.isEmpty, digits.count <= 5 { port = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) } }
        }
        let host = authority[authority.startIndex..<hostEnd]
        guard !host.isEmpty else { return nil }
        guard host.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else {
            return (isHTTPS, String(decoding: host, as: UTF8.self), port)
        }
        return (isHTTPS, String(decoding: host.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self), port)
    }

    private static func isURLByte(_ byte: UInt8) -> Bool {
        guard byte > 0x20, byte < 0x7F else { return false }
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\\"), UInt8(ascii: "^"),
            UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "|"), UInt8(ascii: "}"):
            return false
        default:
            return true
        }
    }
}

extension TransportRequest {
    /// The request checked and parsed for an operation of `stage`.
    ///
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` of `stage`.
    func prepared(for stage: AttacheError.Stage) throws -> PreparedRequest {
        do {
            return try PreparedRequest(self)
        } catch {
            throw error.attributed(to: stage)
        }
    }
}
