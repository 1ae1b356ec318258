extension StringProtocol {
    /// The text without leading and trailing spaces and tabs (what container headers pad their names
    /// with); the Foundation-free stand-in for `trimmingCharacters(in: .whitespaces)` on ASCII text.
    package func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\u{A0}" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
