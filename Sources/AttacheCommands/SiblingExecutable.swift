import AttacheCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The hand-over between Attache's executables: `attache` starts `attache-transfer` or
/// `attache-pipeline`, and `attache-transfer` starts `attache-pipeline` for a command line that names
/// a config file, each with `execv` in the same process (same pid, signals and exit status).
package enum SiblingExecutable {
    /// Replaces this process with the executable `name` and the same arguments: the copy next to this
    /// executable, else the first one on `PATH`. Exits with 69 (unavailable) when there is none.
    package static func replaceProcess(with name: String, _ arguments: [String]) -> Never {
        let sibling = executableDirectory().map { $0 + "/" + name }
        var failure = ENOENT
        for candidate in [sibling, name].compactMap({ $0 }) {
            withCStrings([candidate] + arguments.dropFirst()) { argv in
                // execv for the sibling (an exact path), execvp for the bare name (a PATH search).
                _ = candidate.contains("/") ? execv(candidate, argv) : execvp(candidate, argv)
            }
            failure = errno
        }
        let place = sibling.map { " (looked for \($0) and on PATH)" } ?? " (looked on PATH)"
        writeErrorLine(
            "attache: cannot start \(name), which runs \(arguments.count > 1 ? "`attache \(arguments[1])`" : "it")\(place): "
                + String(cString: strerror(failure)))
        exit(ExitStatus.unavailable)
    }

    /// The directory this executable was started from, symbolic links resolved.
    package static func executableDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.lastIndex(of: "/") else { return nil }
        return String(path[..<slash])
    }

    /// Calls `body` with a NULL-terminated C array of `strings`.
    static func withCStrings(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Void) {
        // The exact bytes each string stands for, raw file-name bytes included.
        let pointers = strings.map { string in PlatformPath.withCString(string) { strdup($0) } } + [nil]
        defer { pointers.forEach { free($0) } }
        pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
