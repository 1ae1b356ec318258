import Glibc

extension PathText {
    /// The working directory, its exact bytes kept (``PlatformPath``); `/` when it cannot be read.
    package static var currentDirectory: String {
        guard let path = getcwd(nil, 0) else { return "/" }
        defer { free(path) }
        return PlatformPath.string(cString: path)
    }

    /// `path` made absolute against the working directory and standardized, as the file walker, the
    /// batch journal and the shared queue name a file: no `.` or `..` component, no trailing slash
    /// (an empty component inside, `a//b`, stays). Symbolic links are kept as they are (nothing on disk is read but the working directory),
    /// so the result is what Foundation's `URL(fileURLWithPath:).standardized.path` gives.
    package static func absolute(_ path: String) -> String {
        // The walk hands out paths that are already clean: those need only the working directory in
        // front, not a split and a join per file.
        let candidate = path.hasPrefix("/") ? path : appending(path, to: currentDirectory)
        if isStandardAbsolute(candidate) { return candidate }
        // An empty component inside the path (`a//b`) is kept, as Foundation keeps it: journals written
        // with Foundation's names must find their entries again. Only trailing slashes go.
        var components: [Substring] = []
        for component in candidate.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            switch component {
            case ".": continue
            case "..": _ = components.popLast()
            default: components.append(component)
            }
        }
        while components.last?.isEmpty == true { components.removeLast() }
        return "/" + components.joined(separator: "/")
    }

    /// Whether `path` is absolute and already what ``absolute(_:)`` would make of it.
    package static func isStandardAbsolute(_ path: String) -> Bool {
        let bytes = path.utf8
        guard bytes.first == UInt8(ascii: "/"), bytes.count > 1, bytes.last != UInt8(ascii: "/") else { return false }
        var componentLength = 0
        var dots = 0
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                // An empty component (`//`), `.` or `..`.
                if componentLength == 0 || componentLength == dots { return false }
                componentLength = 0
                dots = 0
            } else {
                componentLength += 1
                if byte == UInt8(ascii: "."), dots == componentLength - 1 { dots += 1 }
            }
        }
        return componentLength != dots
    }
}
