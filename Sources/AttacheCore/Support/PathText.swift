import Glibc

/// Path arithmetic on `/`-separated strings, as NSString's path methods do it.
package enum PathText {
    /// The part after the last `/` (trailing slashes ignored); `/` for the root.
    package static func lastComponent(_ path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        if trimmed == "/" { return "/" }
        return String(trimmed.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
    }

    /// `name` without its last extension: `a.tar.gz` → `a.tar`; a leading dot is not an extension.
    package static func deletingExtension(_ name: String) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex,
            !name[name.index(after: dot)...].contains("/"), name[name.index(before: dot)] != "/"
        else { return name }
        return String(name[..<dot])
    }

    /// `directory/component`, with exactly one `/` between them.
    package static func appending(_ component: String, to directory: String) -> String {
        guard !directory.isEmpty else { return component }
        return directory.hasSuffix("/") ? directory + component : directory + "/" + component
    }

    /// `$TMPDIR`, else `/tmp`.
    package static var temporaryDirectory: String {
        if let value = getenv("TMPDIR"), value.pointee != 0 { return String(cString: value) }
        return "/tmp"
    }
}
