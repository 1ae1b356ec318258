/// What a folder walk takes (`FileWalker`): hidden files and folders and operating-system junk are left
/// out unless asked for, `--include`/`--exclude` globs choose by path, and sizes bound the files.
///
/// Globs are matched against a path relative to the folder given on the command line (`2024/a.jpg`), or
/// against the name alone when the glob has no `/`. `*` is any run of characters but `/`, `**` any run
/// including `/`, `?` one character but `/`, `[abc]` and `[a-z]` one of a set (`[!…]` none of it). The rules
/// apply in order and **the last one that matches decides**, as rclone's filters do; a file that matches
/// none is taken, unless there is an include rule, in which case it is left out. A folder that an exclude
/// rule matches is not entered at all. A file named on the command line itself is taken even when hidden.
public struct WalkFilter: Sendable, Hashable, CustomStringConvertible {
    /// One rule: a glob that takes or leaves out what it matches.
    public enum Rule: Sendable, Hashable {
        /// Takes what the glob matches.
        case include(String)
        /// Leaves out what the glob matches.
        case exclude(String)

        var glob: String {
            switch self {
            case .include(let glob), .exclude(let glob): glob
            }
        }
    }

    /// Why the walk left a path out; the summary counts paths by it.
    public enum Reason: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// A name starting with `.`.
        case hidden
        /// Operating-system junk: `Thumbs.db`, `desktop.ini`, editor backups (`*~`), Office lock files
        /// (`~$*`), `__MACOSX` and the like.
        case junk
        /// The last rule that matched is an exclude.
        case excluded
        /// No rule matched, and there are include rules.
        case notIncluded = "not-included"
        /// Below ``WalkFilter/minimumSize``.
        case tooSmall = "too-small"
        /// Above ``WalkFilter/maximumSize``.
        case tooLarge = "too-large"

        /// Why, in words.
        public var description: String {
            switch self {
            case .hidden: "hidden (--hidden takes them)"
            case .junk: "operating-system junk (Thumbs.db, desktop.ini, *~, ~$*)"
            case .excluded: "matched an --exclude"
            case .notIncluded: "matched no --include"
            case .tooSmall: "smaller than --min-size"
            case .tooLarge: "larger than --max-size"
            }
        }
    }

    /// The rules, in the order given.
    public var rules: [Rule] = []
    /// Files smaller than this are left out.
    public var minimumSize: Int64?
    /// Files larger than this are left out.
    public var maximumSize: Int64?
    /// Take hidden files and folders (names starting with `.`) and junk too.
    public var includesHidden = false

    /// The default: no rules, no size bounds, hidden files and junk left out.
    public init() {}

    /// Takes every file.
    public static let everything: WalkFilter = {
        var filter = WalkFilter()
        filter.includesHidden = true
        return filter
    }()

    /// The filter as options (`--exclude '*.tmp' --max-size 1048576`), for the journal and messages.
    public var description: String {
        var parts: [String] = []
        for rule in rules {
            switch rule {
            case .include(let glob): parts.append("--include '\(glob)'")
            case .exclude(let glob): parts.append("--exclude '\(glob)'")
            }
        }
        if let minimumSize { parts.append("--min-size \(minimumSize)") }
        if let maximumSize { parts.append("--max-size \(maximumSize)") }
        if includesHidden { parts.append("--hidden") }
        return parts.joined(separator: " ")
    }

    /// Why the file at `relative` (its path under its root; its name when named on the command line) of
    /// `byteCount` bytes is left out, or nil when it is taken.
    package func reason(forFile relative: String, byteCount: Int64, named: Bool) -> Reason? {
        let name = Self.lastComponent(relative)
        if !named, !includesHidden {
            if name.hasPrefix(".") { return .hidden }
            if Self.isJunk(name) { return .junk }
        }
        if let verdict = lastMatch(relative, name: name) {
            if case .exclude = verdict { return .excluded }
        } else if rules.contains(where: { if case .include = $0 { true } else { false } }) {
            return .notIncluded
        }
        if let minimumSize, byteCount < minimumSize { return .tooSmall }
        if let maximumSize, byteCount > maximumSize { return .tooLarge }
        return nil
    }

    /// Why the folder at `relative` is not entered, or nil.
    package func reason(forFolder relative: String) -> Reason? {
        let name = Self.lastComponent(relative)
        if !includesHidden {
            if name.hasPrefix(".") { return .hidden }
            if Self.junkFolders.contains(name) { return .junk }
        }
        if case .exclude = lastMatch(relative, name: name) { return .excluded }
        return nil
    }

    private func lastMatch(_ relative: String, name: String) -> Rule? {
        rules.last { rule in
            let glob = rule.glob
            let subject = glob.contains("/") ? relative : name
            let pattern = glob.hasPrefix("/") ? String(glob.dropFirst()) : glob
            return Self.matches(Array(pattern.utf8), Array(subject.utf8))
        }
    }

    private static let junkFiles: Set<String> = ["Thumbs.db", "ehthumbs.db", "desktop.ini", "Desktop.ini", "Icon\r"]
    private static let junkFolders: Set<String> = ["__MACOSX", "$RECYCLE.BIN", "System Volume Information"]

    private static func isJunk(_ name: String) -> Bool {
        junkFiles.contains(name) || name.hasSuffix("~") || name.hasPrefix("~$")
    }

    private static func lastComponent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Whether `glob` matches all of `text` (bytes of both), as the type's comment describes.
    static func matches(_ glob: [UInt8], _ text: [UInt8]) -> Bool {
        matches(glob[...], text[...])
    }

    private static func matches(_ glob: ArraySlice<UInt8>, _ text: ArraySlice<UInt8>) -> Bool {
        var g = glob.startIndex
        var t = text.startIndex
        // The last `*` (or `**`) seen, and where the text stood then: backtracking goes there.
        var star: (glob: Int, text: Int, crossesSlash: Bool)?
        let slash = UInt8(ascii: "/")
        while t < text.endIndex {
            if g < glob.endIndex {
                let c = glob[g]
                if c == UInt8(ascii: "*") {
                    let double = g + 1 < glob.endIndex && glob[g + 1] == UInt8(ascii: "*")
                    let next = g + (double ? 2 : 1)
                    if double {
                        // `**` takes any run, folders included: try every one (`**/` also matches no folder).
                        if next < glob.endIndex, glob[next] == slash, matches(glob[(next + 1)...], text[t...]) {
                            return true
                        }
                        var k = t
                        while true {
                            if matches(glob[next...], text[k...]) { return true }
                            if k == text.endIndex { return false }
                            k += 1
                        }
                    }
                    star = (next, t, false)
                    g = next
                    continue
                }
                if c == UInt8(ascii: "?"), text[t] != slash {
                    g += 1
                    t += 1
                    continue
                }
                if c == UInt8(ascii: "["), let (matched, end) = matchClass(glob, from: g, byte: text[t]) {
                    if matched, text[t] != slash {
                        g = end
                        t += 1
                        continue
                    }
                } else if c == UInt8(ascii: "\\"), g + 1 < glob.endIndex, glob[g + 1] == text[t] {
                    g += 2
                    t += 1
                    continue
                } else if c == text[t] {
                    g += 1
                    t += 1
                    continue
                }
            }
            // Mismatch: let the last star take one more byte, if it may.
            guard let last = star, last.crossesSlash || text[last.text] != slash else { return false }
            star = (last.glob, last.text + 1, last.crossesSlash)
            g = last.glob
            t = last.text + 1
        }
        while g < glob.endIndex, glob[g] == UInt8(ascii: "*") { g += 1 }
        return g == glob.endIndex
    }

    /// A `[…]` class at `start`: whether `byte` is in it, and the index after its `]`; nil when the
    /// bracket is not closed (then it is an ordinary character).
    private static func matchClass(_ glob: ArraySlice<UInt8>, from start: Int, byte: UInt8) -> (Bool, Int)? {
        var i = start + 1
        var negated = false
        if i < glob.endIndex, glob[i] == UInt8(ascii: "!") || glob[i] == UInt8(ascii: "^") {
            negated = true
            i += 1
        }
        var found = false
        var first = true
        while i < glob.endIndex {
            let c = glob[i]
            if c == UInt8(ascii: "]"), !first { return (found != negated, i + 1) }
            first = false
            if i + 2 < glob.endIndex, glob[i + 1] == UInt8(ascii: "-"), glob[i + 2] != UInt8(ascii: "]") {
                if c <= byte, byte <= glob[i + 2] { found = true }
                i += 3
            } else {
                if c == byte { found = true }
                i += 1
            }
        }
        return nil
    }
}
