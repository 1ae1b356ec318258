// The package's one trim of text. FoundationEssentials has no `trimmingCharacters(in:)`, and the
// package links no Foundation in its library layer. The transport's header parser trims raw bytes
// instead (`HeaderLine`), because it runs on every header line of every answer before any `String`
// exists; that one stays where it is, on bytes, for speed.

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs (header values, `key = value` lines).
    package var trimmingBlanks: String { trimming(where: { $0 == " " || $0 == "\t" }) }

    /// The text without leading and trailing white space of any kind: spaces, tabs, line breaks and
    /// the Unicode spaces (no-break space included, which container headers pad their names with).
    package var trimmingWhiteSpace: String { trimming(where: \.isWhitespace) }

    /// The text without the leading and trailing characters for which `isTrimmed` is true.
    package func trimming(where isTrimmed: (Character) -> Bool) -> String {
        guard let first = firstIndex(where: { !isTrimmed($0) }) else { return "" }
        let last = lastIndex(where: { !isTrimmed($0) })!
        return String(self[first...last])
    }
}
