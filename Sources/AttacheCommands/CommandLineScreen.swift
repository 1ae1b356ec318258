package import ArgumentParser
import AttacheCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
        let name = ([root.configuration._superCommandName, root.configuration.commandName ?? "attache", subcommand?.configuration.commandName]
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
        var text = root.fullMessage(for: error)
        // ArgumentParser names a command parsed on its own without its `_superCommandName` in the
        // "See '… --help'" line (its usage line has it): `attache request`, as the tree would say.
        if let superName = root.configuration._superCommandName, let name = root.configuration.commandName {
            text = text.replacing("  See '\(name) ", with: "  See '\(superName) \(name) ")
        }
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

    /// The subcommand of `root` that `arguments` (program name first) name, with the arguments to parse
    /// it on its own (the program name, then the words after the subcommand's name); nil when the first
    /// word names none, or when a word before `--` asks ArgumentParser for something only the whole tree
    /// answers: help, the version, a completion script or the help dump.
    ///
    /// Parsing the subcommand alone gives the same command as parsing the tree, and skips the tree's
    /// work on every run: its built-in flags, its completion-script check and its argument sets, about
    /// 2 ms of reflection of a ~20 ms `attache request` (docs/BENCHMARKS.md, requests). The
    /// subcommand's configuration names its parent with `_superCommandName`, so that usage and error
    /// lines read the same as from the tree.
    package static func directSubcommand(
        of root: any ParsableCommand.Type, in arguments: [String]
    ) -> (command: any AsyncParsableCommand.Type, arguments: [String])? {
        // With no words after its name, the tree prints the subcommand's whole help, not an error.
        guard arguments.count > 2,
            let subcommand = root.configuration.subcommands.first(where: { $0.configuration.commandName == arguments[1] }),
            let asyncSubcommand = subcommand as? any AsyncParsableCommand.Type,
            asyncSubcommand.configuration._superCommandName != nil
        else { return nil }
        for word in arguments.dropFirst(2) {
            if word == "--" { break }
            if ["help", "-h", "--help", "-help", "--version"].contains(word) || word.hasPrefix("--generate-completion")
                || word.hasPrefix("--experimental") {
                return nil
            }
        }
        return (asyncSubcommand, [arguments[0]] + arguments.dropFirst(2))
    }

    /// ``run(_:_:)`` for a synchronous `main`, then `exit(0)`.
    ///
    /// An `async` main parks the main thread in `dispatch_main`, which calls `pthread_exit`, whose
    /// forced unwind makes libgcc sort every unwind entry of the executable first: ~12 ms of CPU on
    /// each run of a static executable (perf), and the unwind tables' pages (~0.5 MB) resident.
    /// Here the main thread waits on a condition instead while the command runs as a task.
    ///
    /// - Parameter onStart: run first on the command's task, before the arguments are parsed.
    ///   `attache-transfer` starts loading libcurl there rather than in `main`: `dlopen` holds glibc's
    ///   TLS lock from start to end, and `pthread_create` waits on it, so a load begun before the
    ///   concurrency runtime's first worker thread exists would hold that thread, and the parse with
    ///   it, back for the whole load (~6 ms).
    package static func runBlockingMain(
        _ root: any AsyncParsableCommand.Type, _ arguments: [String], onStart: (@Sendable () -> Void)? = nil
    ) -> Never {
        let finished = Completion()
        // Detached: `main` runs on the main actor, and a task inheriting it would wait for the main
        // thread this function is about to block.
        Task.detached {
            onStart?()
            // Exits the process itself on errors and `--help`; returns on success.
            await run(root, arguments)
            finished.signal()
        }
        finished.wait()
        exit(0)
    }

    /// A one-shot signal from the command's task to the waiting main thread.
    private final class Completion: Sendable {
        private let lock = Lock()
        private let done = Atomic<Bool>(false)

        func signal() {
            lock.lock()
            done.store(true, ordering: .releasing)
            lock.broadcast()
            lock.unlock()
        }

        func wait() {
            lock.lock()
            while !done.load(ordering: .acquiring) { lock.wait() }
            lock.unlock()
        }
    }
}
