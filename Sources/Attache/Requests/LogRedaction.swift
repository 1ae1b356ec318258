import FoundationEssentials

/// What request logs never show: credential headers, a URL's user info and query values, secret form
/// fields, secret JSON members, and any literal secret the caller names.
///
/// Applied to every line ``RequestClient`` logs (debug and trace), to the equivalent `curl` command line,
/// and to URLs in its error messages. A form field is secret when its name, or one bracketed part of a
/// nested name (`user[password]`, `auth[token][]`), matches one of ``fieldNames`` without regard to case;
/// a URL keeps none of its query values (``url(_:)``).
/// ``RequestClient`` also masks, in every line about a request, the values it sent in secret headers and
/// fields, so that an answer echoing them back (a debug endpoint, an error page) does not leak them;
/// values shorter than 4 characters are not masked that way.
public struct LogRedaction: Sendable, Hashable {
    /// The text that replaces a secret.
    public static let mask = "<redacted>"

    /// Header names whose values are never shown, lower case. Default: `authorization`,
    /// `proxy-authorization`, `cookie`, `set-cookie`, `x-api-key`, `x-auth-token`, `x-amz-security-token`.
    public var headerNames: Set<String>
    /// Form and JSON field names whose values are never shown, lower case; what is sent under these names
    /// in a URL's query is also masked where an answer echoes it (the URL itself shows no query value at
    /// all). Default: `token`, `access_token`, `refresh_token`, `id_token`, `password`, `passwd`, `pass`,
    /// `secret`, `client_secret`, `sign`, `signature`, `key`, `api_key`, `apikey`, `auth`, `session`.
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

    /// The URL as the log shows it: without user info and fragment, every query value replaced by
    /// `REDACTED` (the rule for every URL Attache logs, reports in an error or puts in a span: a presigned
    /// URL's signature sits in its query under a name no list foresees), and the literal secrets masked.
    public func url(_ url: String) -> String {
        scrub(URLRedaction.redacting(url))
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
