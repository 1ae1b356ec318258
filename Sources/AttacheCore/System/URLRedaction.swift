/// The package's one rule for a URL shown outside the request: in a log line, an error message, a
/// span's `url.full` or the reference server's request log.
///
/// The user info goes, every query value is replaced by `REDACTED` (an item without `=` is replaced
/// whole, since it may be a bare token; an empty one stays empty), and the fragment goes; the scheme, host, port, path and query
/// names stay, for reading. Presigned URLs carry their signature and credential in the query, and other
/// services a token, under names no list can foresee, so no value is kept. OpenTelemetry's HTTP
/// conventions ask the same of `url.full`, with the same `REDACTED`.
///
/// ```swift
/// URLRedaction.redacting("https://u:p@h.example/a?X-Amz-Signature=f00d&flag#top")
/// // "https://h.example/a?X-Amz-Signature=REDACTED&REDACTED"
/// ```
package enum URLRedaction {
    /// What replaces each query value.
    package static let mask = "REDACTED"

    /// `url` as logs, errors and spans show it: without user info and fragment, each query value masked.
    package static func redacting(_ url: String) -> String {
        // Searched in the UTF-8 bytes (`#`, `?`, `/` and `@` are ASCII, so each index found is a
        // character boundary): a search by Character walks grapheme clusters, and this runs for every
        // attempt when tracing is on.
        // Most URLs have no user info, query or fragment: one pass over the bytes finds that, and the
        // URL is its own redaction (no copy).
        let plain = url.utf8.withContiguousStorageIfAvailable { bytes in
            !bytes.contains { $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        }
        if plain == true { return url }
        let bytes = url.utf8
        let end = bytes.firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
        let mark = bytes[..<end].firstIndex(of: UInt8(ascii: "?"))
        var redacted = withoutUserInfo(url[..<(mark ?? end)])
        if let mark { redacted += "?" + redacting(query: url[bytes.index(after: mark)..<end]) }
        return redacted
    }

    /// A query (the text after `?`) with each value masked: `a=1&sig=xyz&flag` → `a=REDACTED&sig=REDACTED&REDACTED`.
    package static func redacting(query: some StringProtocol) -> String {
        query.split(separator: "&", omittingEmptySubsequences: false).map { item in
            guard !item.isEmpty else { return "" }
            guard let equals = item.utf8.firstIndex(of: UInt8(ascii: "=")) else { return mask }
            return String(item[..<equals]) + "=" + mask
        }.joined(separator: "&")
    }

    /// The scheme, authority and path without the user info (`user:password@`) of the authority.
    private static func withoutUserInfo(_ base: Substring) -> String {
        let bytes = base.utf8
        guard let start = authorityStart(base) else { return String(base) }
        let authorityEnd = bytes[start...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.endIndex
        guard let at = bytes[start..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) else { return String(base) }
        return String(base[..<start]) + String(base[bytes.index(after: at)...])
    }

    /// Where the authority starts: after the first `://`.
    private static func authorityStart(_ base: Substring) -> Substring.Index? {
        let bytes = base.utf8
        var index = bytes.startIndex
        while let colon = bytes[index...].firstIndex(of: UInt8(ascii: ":")) {
            let rest = bytes[bytes.index(after: colon)...]
            if rest.starts(with: "//".utf8) { return bytes.index(colon, offsetBy: 3) }
            index = bytes.index(after: colon)
        }
        return nil
    }
}
