/// The protocol's text as `ClamdConnection` reads it: request numbers and the version line, and the
/// durations and excerpts its messages quote.
extension ClamdConnection {
    /// The request number `N` of an answer `N: …` (one to eighteen digits, a colon and a space) and the
    /// text after it, read from its bytes once; nil when it does not begin that way.
    static func numbered(_ answer: String) -> (id: Int, text: Substring)? {
        let utf8 = answer.utf8
        var number = 0
        var digits = 0
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9") where digits < 18:
                number = number * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
            case UInt8(ascii: ":") where digits > 0:
                let space = utf8.index(after: index)
                guard space != utf8.endIndex, utf8[space] == UInt8(ascii: " ") else { return nil }
                return (number, answer[utf8.index(after: space)...])
            default:
                return nil
            }
            index = utf8.index(after: index)
        }
        return nil
    }

    /// The request number of an answer `N: …` (``numbered(_:)``).
    static func requestNumber(of answer: String) -> Int? {
        numbered(answer)?.id
    }

    /// `ClamAV 1.4.6/27470/Thu Nov 26 09:29:01 2026` → engine `ClamAV 1.4.6`, signatures `27470`.
    static func parseVersion(_ text: String) -> ScanEngineVersion {
        let parts = text.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        let engine = parts.first.map(String.init) ?? text
        let signatures = parts.count > 1 && !parts[1].isEmpty ? String(parts[1]) : nil
        return ScanEngineVersion(engine: engine.isEmpty ? "ClamAV" : engine, signatures: signatures)
    }

    /// `duration` in whole seconds when it is whole (`30`), else as a decimal (`0.5`), for messages.
    static func seconds(_ duration: Duration) -> String {
        let value = duration.seconds
        return value == value.rounded() ? String(Int(value)) : String(value)
    }

    /// The first 120 characters of clamd's `text`, escaped for a terminal, for messages.
    static func excerpt(_ text: String) -> String {
        TerminalText.escaping(String(text.prefix(120)))
    }
}
