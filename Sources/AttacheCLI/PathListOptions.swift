package import ArgumentParser
import AttacheCore
import FoundationEssentials
import Glibc

/// `--files-from FILE`: the paths of a ``PathListCommand`` read from a file, one per line (`-`: standard
/// input), as rsync and tar take them: a list of any length, in time linear in it, with no shell or
/// argument limit on the way. Blank lines are skipped and a line's `\r` ending is dropped; a name with a
/// newline in it goes on the command line.
package struct PathListOptions: ParsableArguments {
    @Option(
        name: .customLong("files-from"),
        help: ArgumentHelp(
            "Read more paths from this file, one per line (- for standard input), after those given as arguments.",
            valueName: "file"))
    package var filesFrom: String?

    package init() {}

    /// `list` with the paths of `--files-from` appended.
    /// - Throws: `ValidationError` naming the file when it cannot be read.
    package func appending(to list: inout [String]) throws {
        guard let filesFrom else { return }
        let bytes: [UInt8]
        if filesFrom == "-" {
            bytes = Self.readAll(fd: STDIN_FILENO)
        } else {
            let fd = open(filesFrom, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw ValidationError("--files-from \(filesFrom): \(String(cString: strerror(errno)))")
            }
            defer { close(fd) }
            bytes = Self.readAll(fd: fd)
        }
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            let trimmed = line.last == UInt8(ascii: "\r") ? line.dropLast() : line[...]
            if !trimmed.isEmpty { list.append(PlatformPath.string(fromBytes: Array(trimmed))) }
        }
    }

    private static func readAll(fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { return bytes }
            bytes += buffer[..<n]
        }
    }
}
