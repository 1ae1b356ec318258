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

    /// ArgumentParser's kind of usage message for a command line that holds a word that
    /// ``misreadHelpWord(in:)`` finds; nil when it holds none.
    ///
    /// - Parameter root: the command the arguments are for; the usage shown is that of the subcommand
    ///   named by `arguments[1]`, else the root's.
    package static func misreadHelpMessage(_ arguments: [String], root: any ParsableCommand.Type) -> String? {
        guard let word = misreadHelpWord(in: arguments) else { return nil }
        let subcommand = arguments.count > 1
            ? root.configuration.subcommands.first { $0.configuration.commandName == arguments[1] } : nil
        let usage = subcommand.map { root.usageString(for: $0) } ?? root.usageString(for: root)
        let name = ([root.configuration.commandName ?? "attache", subcommand?.configuration.commandName]
            .compactMap { $0 }).joined(separator: " ")
        var message = "Error: Unknown option '\(TerminalText.escaping(word))'\n"
        message += "Help:  a file name that starts with '-' can be given as ./\(TerminalText.escaping(word)) or after '--'\n"
        message += "Usage: \(usage)\n"
        message += "  See '\(name) --help' for more information.\n"
        return message
    }

    /// Prints what ArgumentParser would print for `error` (help and version on stdout as they are,
    /// errors on stderr with control characters escaped, since they quote the arguments given) and
    /// returns its exit status, as `exit(withError:)` would exit with.
    package static func report(_ root: any ParsableCommand.Type, error: any Error) -> Int32 {
        let status = root.exitCode(for: error).rawValue
        let text = root.fullMessage(for: error)
        if status == 0 {
            if !text.isEmpty { writeToStandardOutput(text + "\n") }
        } else if !text.isEmpty {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            writeToStandardError(lines.map { TerminalText.escaping(String($0)) }.joined(separator: "\n") + "\n")
        }
        return status
    }

    /// Parses `arguments` (program name first) as `root`, runs the chosen command and returns its exit
    /// status: ``misreadHelpMessage(_:root:)`` first, a long list of paths taken out of ArgumentParser's
    /// way (``CommandLinePaths``), and every error printed by ``report(_:error:)``.
    package static func status(_ root: any AsyncParsableCommand.Type, _ arguments: [String]) async -> Int32 {
        if let message = misreadHelpMessage(arguments, root: root) {
            writeToStandardError(message)
            return ExitStatus.usage
        }
        do {
            var command = try CommandLinePaths.parse(root, Array(arguments.dropFirst()))
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return ExitStatus.success
        } catch {
            return report(root, error: error)
        }
    }

    /// ``status(_:_:)``, for the process: returns when the command succeeded and exits with its status
    /// otherwise.
    package static func run(_ root: any AsyncParsableCommand.Type, _ arguments: [String]) async {
        let status = await status(root, arguments)
        if status != ExitStatus.success { exit(status) }
    }
}
