import AttacheCore
import Foundation

/// Quotes `word` for a POSIX shell when it needs it. A word with characters ``TerminalText`` escapes
/// is written in bash's `$'…'` form with those bytes as `\xHH`, so that the printed command holds no
/// control character and still names the same file when pasted into bash or zsh.
func shellQuoted(_ word: String) -> String {
    let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@%+,")
    if !word.isEmpty, word.allSatisfy({ safe.contains($0) }) { return word }
    guard TerminalText.needsEscaping(word) else {
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
    var quoted = "$'"
    for character in word {
        let text = String(character)
        if text == "'" || text == "\\" {
            quoted += "\\" + text
        } else if TerminalText.needsEscaping(text) {
            for byte in text.utf8 { quoted += "\\x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16) }
        } else {
            quoted += text
        }
    }
    return quoted + "'"
}

/// Formats seconds as m:ss or h:mm:ss.
func formatDuration(_ seconds: Double) -> String {
    guard seconds.isFinite, seconds >= 0 else { return "-" }
    if seconds < 10 { return String(format: "%.1f s", seconds) }
    let total = Int(seconds.rounded())
    let (h, m, s) = (total / 3600, (total / 60) % 60, total % 60)
    return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
}
