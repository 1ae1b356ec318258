import ArgumentParser
import AttacheCore
import FoundationEssentials

/// Which of a command's named arguments take a value, and how: what ``CommandLinePaths`` needs to
/// tell an option's value from a path without parsing the command line itself.
///
/// The table is read from ArgumentParser's own description of the command (the JSON that
/// `--experimental-dump-help` prints), so it covers every option of every option group and cannot
/// drift from the declarations. It holds only what the walk follows: flags, options whose value is
/// the next word when it is not an option (`.next`, the default) or the next word whatever it is
/// (`.unconditional`), and one repeating positional argument. A command with anything else (an option
/// that scans ahead or takes several words, a second positional) has no table, and its command line
/// goes to ArgumentParser whole.
struct OptionTable: Sendable {
    /// What a named argument takes after its name, when no value is attached to it (`--url=X`, `-o=X`).
    enum Taking: Sendable, Equatable {
        /// A flag.
        case nothing
        /// The next word, if it is not an option and no `--` comes first.
        case nextValue
        /// The next word, whatever it is.
        case nextWord
    }

    /// By name as written, dashes included: `--url`, `-o`, `-help`.
    private var names: [String: Taking] = [:]

    /// The table of a command line without options: it looks nothing up.
    init() {}

    /// What `name` (dashes included) takes; nil for a name the command does not have.
    subscript(name: some StringProtocol) -> Taking? { names[String(name)] }

    /// The table of `subcommand`, a subcommand of `root`; nil when ArgumentParser cannot describe it or
    /// it has something the walk does not follow.
    init?(_ subcommand: String, of root: any ParsableCommand.Type) {
        let key = "\(ObjectIdentifier(root)) \(subcommand)"
        if let known = Self.made.withLock({ $0[key] }) {
            guard let known else { return nil }
            self = known
            return
        }
        // The description is an answer to the request, given as an error (exit status 0).
        var table: OptionTable?
        do {
            _ = try root.parseAsRoot([subcommand, "--experimental-dump-help"])
        } catch let error where root.exitCode(for: error) == .success {
            table = OptionTable(dump: Array(root.fullMessage(for: error).utf8))
        } catch {}
        Self.made.withLock { $0[key] = .some(table) }
        guard let table else { return nil }
        self = table
    }

    /// The tables made in this process: a process parses one command line, the tests many (and the
    /// description of a large command takes a while in a debug build).
    private static let made = LockedValue<[String: OptionTable?]>([:])

    /// The table from the JSON of `--experimental-dump-help` (ArgumentParser's `ToolInfoV0`).
    init?(dump: [UInt8]) {
        guard let info = try? JSONDecoder().decode(ToolInfo.self, from: Data(dump)) else { return nil }
        var positionals = 0
        for argument in info.command.arguments ?? [] {
            let taking: Taking
            switch (argument.kind, argument.parsingStrategy) {
            case ("positional", "default") where argument.isRepeating:
                positionals += 1
                continue
            case ("flag", _): taking = .nothing
            case ("option", "default"): taking = .nextValue
            case ("option", "unconditional"): taking = .nextWord
            default: return nil
            }
            for name in argument.names ?? [] {
                switch name.kind {
                case "long": names["--" + name.name] = taking
                case "short", "longWithSingleDash": names["-" + name.name] = taking
                default: return nil
                }
            }
        }
        guard positionals == 1 else { return nil }
        // ArgumentParser looks for `--generate-completion-script [SHELL]` in every command line
        // before anything else.
        names["--generate-completion-script"] = .nextValue
    }

    /// The parts of `ToolInfoV0` the table reads.
    private struct ToolInfo: Decodable {
        struct Command: Decodable {
            var arguments: [Argument]?
        }

        struct Argument: Decodable {
            var kind: String
            var parsingStrategy: String
            var isRepeating: Bool
            var names: [Name]?
        }

        struct Name: Decodable {
            var kind: String
            var name: String
        }

        var command: Command
    }
}
