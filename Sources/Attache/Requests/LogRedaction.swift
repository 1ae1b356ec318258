public import FoundationEssentials

/// What request logs never show: credential headers, secret query and form fields, secret JSON
/// members, and any literal secret the caller names.
///
/// Applied to every line ``RequestClient`` logs (debug and trace), to the equivalent `curl` command line,
/// and to URLs in its error messages. A field is secret when its name, or one bracketed part of a nested
/// name (`user[password]`, `auth[token][]`), matches one of ``fieldNames`` without regard to case.
/// ``RequestClient`` also masks, in every line about a request, the values it sent in secret headers and
/// fields, so that an answer echoing them back (a debug endpoint, an error page) does not leak them;
/// values shorter than 4 characters are not masked that way.
public struct LogRedaction: Sendable, Hashable {
    /// The text that replaces a secret.
    public static let mask = "<redacted>"

    /// Header names whose values are never shown, lower case. Default: `authorization`,
    /// `proxy-authorization`, `cookie`, `set-cookie`, `x-api-key`, `x-auth-token`, `x-amz-security-token`.
    public var headerNames: Set<String>
    /// Query, form and JSON field names whose values are never shown, lower case. Default: `token`,
    /// `access_token`, `refresh_token`, `id_token`, `password`, `passwd`, `pass`, `secret`,
    /// `client_secret`, `sign`, `signature`, `key`, `api_key`, `apikey`, `auth`, `session`.
    public var fieldNames: Set<String>
    /// Literal values replaced wherever they appear in a logged line (a token read from the
    /// environment, a password); values shorter than 4 characters are ignored, they would mask too much.
    public var secretValues: [String]

    /// The defaults above, no literal values.
    public init(
        headerNames: Set<String> = LogRedaction.defaultHeaderNames,
        fieldNames: Set<String> = LogRedaction.defaultFieldNames, secretValues: [String] = []
    ) {
        self.headerNames = Set(headerNames.map { $0.lowercased() })
        self.fieldNames = Set(fieldNames.map { $0.lowercased() })
        self.secretValues = secretValues
    }

    /// The default header names: `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`,
    /// `X-Api-Key`, `X-Auth-Token` and `X-Amz-Security-Token`, the same credential headers a redirect to another host drops.
    public static let defaultHeaderNames: Set<String> = CredentialHeaders.names
    /// The default field names.
    public static let defaultFieldNames: Set<String> = [
        "token", "access_token", "refresh_token", "id_token", "password", "passwd", "pass", "secret",
        "client_secret", "sign", "signature", "key", "api_key", "apikey", "auth", "session",
    ]

    /// Whether a header's value is hidden.
    public func isSecret(header name: String) -> Bool { headerNames.contains(name.lowercased()) }

    /// Whether a (possibly nested, possibly percent-encoded) field name is secret.
    public func isSecret(field name: String) -> Bool {
        let decoded = Self.percentDecoded(name, plusAsSpace: true).lowercased()
        if fieldNames.contains(decoded) { return true }
        return decoded.split(whereSeparator: { $0 == "[" || $0 == "]" }).contains { fieldNames.contains(String($0)) }
    }

    /// `Name: value` with the value masked when the header is secret.
    package func headerLine(name: String, value: String) -> String {
        scrub("\(name): \(isSecret(header: name) ? Self.mask : value)")
    }

    /// The URL with user info masked and secret query values masked; the rest is kept for reading.
    public func url(_ url: String) -> String {
        var parts = URLParts(url)
        if let userInfo = parts.userInfo { parts.base.replaceSubrange(userInfo, with: "***") }
        if let query = parts.query { parts.base += "?" + form(String(query)) }
        return scrub(parts.base + parts.fragment)
    }

    /// A URL cut up for redaction: everything before the query, where its user info is, the query and
    /// the fragment.
    package struct URLParts {
        /// The scheme, authority and path.
        public var base: String
        /// The user info in ``base`` (without its `@`), when there is one.
        public var userInfo: Range<String.Index>?
        /// The text after `?`, when there is one.
        public var query: Substring?
        /// `#` and the rest, or empty.
        public var fragment: Substring

        public init(_ url: String) {
            // Searched in the UTF-8 bytes (`#` and `?` are ASCII, so each found index is a character
            // boundary): a search by Character breaks graphemes at every step, and this runs per attempt
            // when tracing is on.
            let bytes = url.utf8
            var end = bytes.endIndex
            fragment = ""
            if let hash = bytes.firstIndex(of: UInt8(ascii: "#")) {
                fragment = url[hash...]
                end = hash
            }
            if let mark = bytes[..<end].firstIndex(of: UInt8(ascii: "?")) {
                query = url[bytes.index(after: mark)..<end]
                end = mark
            }
            base = String(url[..<end])
            if let authorityStart = Self.authorityStart(base) {
                let authorityEnd = base[authorityStart...].firstIndex(of: "/") ?? base.endIndex
                if let at = base[authorityStart..<authorityEnd].lastIndex(of: "@") { userInfo = authorityStart..<at }
            }
        }

        /// Where the authority starts: after the first `://`. A scan of the bytes: the generic
        /// `firstRange(of:)` stood out in profiles of a batch with tracing on (it runs per attempt).
        private static func authorityStart(_ url: String) -> String.Index? {
            let bytes = url.utf8
            var index = bytes.startIndex
            while let colon = bytes[index...].firstIndex(of: UInt8(ascii: ":")) {
                let rest = bytes[bytes.index(after: colon)...]
                if rest.starts(with: "//".utf8) { return bytes.index(colon, offsetBy: 3) }
                index = bytes.index(after: colon)
            }
            return nil
        }
    }

    /// `application/x-www-form-urlencoded` text (a query or a form body) with secret values masked.
    package func form(_ text: String) -> String {
        let pairs = text.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            let name = pair[..<equals]
            return isSecret(field: String(name)) ? "\(name)=\(Self.mask)" : String(pair)
        }
        return scrub(pairs.joined(separator: "&"))
    }

    /// A JSON value with the members of secret names masked, at any depth.
    package func json(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            var copy: [String: JSONValue] = [:]
            for (name, member) in members {
                copy[name] = isSecret(field: name) || isSecret(header: name) ? .string(Self.mask) : json(member)
            }
            return .object(copy)
        case .array(let items): return .array(items.map(json))
        default: return value
        }
    }

    /// The values of secret fields in form text (a query or a form body), as sent and decoded: a
    /// server that echoes them back must not get them into the log through its answer.
    package func secretValues(inForm text: String) -> [String] {
        text.split(separator: "&").flatMap { pair -> [String] in
            guard let equals = pair.firstIndex(of: "="), isSecret(field: String(pair[..<equals])) else { return [] }
            let raw = String(pair[equals...].dropFirst())
            return [raw, Self.percentDecoded(raw, plusAsSpace: true)]
        }
    }

    /// The values of secret members of a JSON value, at any depth (strings and numbers as text).
    package func secretValues(inJSON value: JSONValue) -> [String] {
        switch value {
        case .object(let members):
            return members.flatMap { name, member -> [String] in
                guard isSecret(field: name) || isSecret(header: name) else { return secretValues(inJSON: member) }
                return Self.leaves(member)
            }
        case .array(let items): return items.flatMap(secretValues(inJSON:))
        default: return []
        }
    }

    /// The secret parts of a header's value: the whole value, the credential after a scheme
    /// (`Bearer X`, `Basic X` and the password inside X), and each cookie's value.
    package func secretValues(inHeader name: String, value: String) -> [String] {
        guard isSecret(header: name) else { return [] }
        var values = [value]
        if let credential = value.split(separator: " ").last.map(String.init) {
            values.append(credential)
            if value.lowercased().hasPrefix("basic "), let decoded = try? Base64.decode(credential),
                let text = String(validating: decoded, as: UTF8.self), let colon = text.firstIndex(of: ":")
            {
                values += [text, String(text[text.index(after: colon)...])]
            }
        }
        for cookie in value.split(separator: ";") {
            if let equals = cookie.firstIndex(of: "=") { values.append(String(cookie[cookie.index(after: equals)...])) }
        }
        return values
    }

    private static func leaves(_ value: JSONValue) -> [String] {
        switch value {
        case .string(let text): return [text]
        case .number, .bool: return [value.description]
        case .array(let items): return items.flatMap(leaves)
        case .object(let members): return members.values.flatMap(leaves)
        case .null: return []
        }
    }

    /// `text` with every literal secret value masked.
    package func scrub(_ text: String) -> String {
        var text = text
        // Longest first, so that a value containing another is masked whole.
        for secret in secretValues.sorted(by: { $0.count > $1.count }) where secret.count >= 4 {
            text = text.replacing(secret, with: Self.mask)
        }
        return text
    }

    /// Percent-decodes `text` as leniently as a redactor must: a malformed escape is kept as it is, and
    /// bytes that are not UTF-8 become U+FFFD.
    static func percentDecoded(_ text: String, plusAsSpace: Bool) -> String {
        guard text.contains("%") || (plusAsSpace && text.contains("+")) else { return text }
        return String(decoding: PercentDecoding.decodingLeniently(text.utf8, plusAsSpace: plusAsSpace), as: UTF8.self)
    }
}
