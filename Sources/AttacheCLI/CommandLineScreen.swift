package import ArgumentParser
import AttacheCore
import Glibc

/// The checks every command line passes before ArgumentParser sees it, and the way its errors are
/// printed.
///
/// ArgumentParser reads a word such as `-photo.jpg` as the short flags `-p -h -o -t …`, and because
/// one of them is `-h` it prints the help and exits 0: `attache upload -photo.jpg` sent nothing and
/// said it succeeded. Here, a word before `--` that starts with one `-`, is longer than two
/// characters and is not `-help` is never a help request: when it holds an `h` it is reported as an
/// unknown option (exit 64) with how to name such a file (`./-photo.jpg`, or after `--`). Words
/// without an `h` reach ArgumentParser, which reports them as unknown options itself. Help is
/// printed only for `-h`, `--help`, `-help` and `attache help …`.
package enum CommandLineScreen {
    /// The first word of `arguments` (program name first) that ArgumentParser would take for a help
    /// request although it is not one; nil when there is none.
    package static func misreadHelpWord(in arguments: [String]) -> String? {
        for word in arguments.dropFirst() {
            if word == "--" { return nil }
            let bytes = word.utf8
            guard bytes.count > 2, bytes.first == UInt8(ascii: "-"),
                bytes.dropFirst().first != UInt8(ascii: "-"), word != "-help"
            else { continue }
            if bytes.contains(UInt8(ascii: "h")) { return word }
        }
        return nil
    }

    /// Exits with 64 and ArgumentParser's kind of usage message when `arguments` holds a word that
    /// ``misreadHelpWord(in:)`` finds; returns otherwise.
    ///
    /// - Parameter root: the command the arguments are for; the usage shown is that of the subcommand
    ///   named by `arguments[1]`, else the root's.
    package static func rejectMisreadHelp(_ arguments: [String], root: any ParsableCommand.Type) {
        guard let word = misreadHelpWord(in: arguments) else { return }
        let subcommand = arguments.count > 1
            ? root.configuration.subcommands.first { $0.configuration.commandName == arguments[1] } : nil
        let usage = subcommand.map { root.usageString(for: $0) } ?? root.usageString(for: root)
        let name = ([root.configuration.commandName ?? "attache", subcommand?.configuration.commandName]
            .compactMap { $0 }).joined(separator: " ")
        var message = "Error: Unknown option '\(TerminalText.escaping(word))'\n"
        message += "Help:  a file name that starts with '-' can be given as ./\(TerminalText.escaping(word)) or after '--'\n"
        message += "Usage: \(usage)\n"
        message += "  See '\(name) --help' for more information.\n"
        writeToStandardError(message)
        exit(ExitStatus.usage)
    }

    /// Prints what ArgumentParser would print for `error` (help and version on stdout as they are,
    /// errors on stderr with control characters escaped, since they quote the arguments given) and
    /// exits with its status, as `exit(withError:)` does.
    package static func finish(_ root: any ParsableCommand.Type, withError error: any Error) -> Never {
        let status = root.exitCode(for: error).rawValue
        let text = root.fullMessage(for: error)
        if status == 0 {
            if !text.isEmpty { writeToStandardOutput(text + "\n") }
        } else if !text.isEmpty {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            writeToStandardError(lines.map { TerminalText.escaping(String($0)) }.joined(separator: "\n") + "\n")
        }
        exit(status)
    }

    /// Parses `arguments` (without the program name) as `root` and runs the chosen command, after
    /// ``rejectMisreadHelp(_:root:)``; every error is printed by ``finish(_:withError:)``. Returns when
    /// the command succeeded.
    package static func run(_ root: any AsyncParsableCommand.Type, _ arguments: [String]) async {
        rejectMisreadHelp(arguments, root: root)
        do {
            var command = try root.parseAsRoot(Array(arguments.dropFirst()))
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            finish(root, withError: error)
        }
    }
}
