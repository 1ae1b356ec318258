import FoundationEssentials

/// The `Accept-Language` value of the process's locale, the way AFNetworking built it from the
/// preferred languages: each language tag, followed by its bare language, with decreasing quality
/// (`de-AT,de;q=0.9,en-US;q=0.8,en;q=0.7`).
package enum AcceptLanguage {
    /// The value for the process's environment: `LANGUAGE` (a colon-separated list, as gettext reads
    /// it) when the locale is not `C`/`POSIX`, else the first of `LC_ALL`, `LC_MESSAGES` and `LANG`
    /// that is set. `C`, `POSIX` or nothing set gives `en-US,en;q=0.9`.
    package static func fromEnvironment() -> String { fromEnvironment(ProcessInfo.processInfo.environment) }

    /// The value for `environment`, read as ``fromEnvironment()`` reads the process's.
    package static func fromEnvironment(_ environment: [String: String]) -> String {
        let locale = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
        var tags: [String] = []
        if let locale, let tag = languageTag(locale) {
            if let list = environment["LANGUAGE"], !list.isEmpty {
                tags = list.split(separator: ":").compactMap { languageTag(String($0)) }
            }
            if tags.isEmpty { tags = [tag] }
        }
        return header(for: tags.isEmpty ? ["en-US"] : tags)
    }

    /// The header for language tags in order of preference: each tag, then its bare language if that
    /// is not listed yet, with q = 1.0, 0.9, … (at least 0.1; at most 10 entries).
    package static func header(for tags: [String]) -> String {
        var entries: [String] = []
        for tag in tags {
            for candidate in [tag, String(tag.prefix { $0 != "-" })] where !entries.contains(candidate) {
                entries.append(candidate)
            }
        }
        return entries.prefix(10).enumerated().map { index, tag in
            index == 0 ? tag : "\(tag);q=0.\(max(1, 10 - index))"
        }.joined(separator: ",")
    }

    /// A BCP 47 tag from a POSIX locale name: `de_AT.UTF-8@euro` → `de-AT`; nil for `C`, `POSIX` and
    /// names that are not a language.
    package static func languageTag(_ locale: String) -> String? {
        let name = locale.prefix { $0 != "." && $0 != "@" }
        guard name != "C", name != "POSIX", !name.isEmpty else { return nil }
        let parts = name.split(whereSeparator: { $0 == "_" || $0 == "-" })
        guard let language = parts.first, (2...3).contains(language.count),
            language.allSatisfy({ $0.isASCII && $0.isLetter })
        else { return nil }
        var tag = language.lowercased()
        if parts.count > 1, let region = parts.last, region.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
            tag += "-" + region.uppercased()
        }
        return tag
    }
}
