import ArgumentParser
import AttacheCore

/// A command whose one positional argument is a list of paths or URLs (`detect`, `upload`, `batch`,
/// `enqueue`, `scan`, `download`): ``CommandLinePaths`` parses its command line in time linear in the
/// list's length. Its `validate()` must begin with ``CommandLinePaths/restore(_:)`` on that list.
protocol PathListCommand: ParsableCommand {}

/// Parses a command line whose paths may number in the hundred thousands (`attache detect *`, `xargs`)
/// in time linear in their number.
///
/// ArgumentParser's cost for a repeating positional argument grows with the square of the number of
/// values (each value copies the array and the set of input positions collected so far): 5,800 paths
/// took 0.86 s before a file was read. So, for a ``PathListCommand`` with a long command line, the
/// paths are taken out before ArgumentParser sees it:
///
/// 1. One walk over the words, with the command's ``OptionTable`` (from ArgumentParser's own
///    description of the command), follows ArgumentParser's rules for what a word is: `--` ends the
///    options, `--name=value` and `-n=value` carry their value, `-abc` is `-a -b -c` unless the command
///    has `-abc`, an option's value is the word after it. Every word that is not an option or an
///    option's value is a path.
/// 2. ArgumentParser parses the command line without the paths after the first (options, values, `--`,
///    unknown words and the first path: all in their order), so options, repeated options, `--help`,
///    usage and error messages are its own.
/// 3. The paths reach the command through a task-local value, which its `validate()` puts into the
///    list (``restore(_:)``) before checking it: ArgumentParser calls `validate()` during the parse and
///    keeps what it changed, so the checks on the list and their messages are as before too.
/// 4. If ArgumentParser's list is not the first path alone (the walk and ArgumentParser read some word
///    differently), or the command did not take the paths, the whole command line is parsed again by
///    ArgumentParser as it is: slower, never different.
///
/// Short command lines go to ArgumentParser unchanged: up to ``threshold`` words its own cost (under a
/// millisecond in a release build) is below that of making the table.
enum CommandLinePaths {
    /// Command lines with more words than this are split.
    static let threshold = 128

    /// Parses `arguments` (without the program's name) as `root.parseAsRoot` does, taking the paths of a
    /// ``PathListCommand`` out first when there are more than `threshold` words.
    ///
    /// - Parameter fallingBack: whether a command line on which the walk and ArgumentParser disagree is
    ///   parsed again whole (the tests turn it off to see the split's own result).
    /// - Throws: what `parseAsRoot` throws for the same arguments; ``Disagreement`` when they disagree
    ///   and `fallingBack` is false.
    static func parse(
        _ root: any ParsableCommand.Type, _ arguments: [String], threshold: Int = threshold, fallingBack: Bool = true
    ) throws -> any ParsableCommand {
        guard arguments.count > threshold, let name = arguments.first,
            root.configuration.subcommands.contains(where: {
                $0.configuration.commandName == name && $0 is any PathListCommand.Type
            })
        else { return try root.parseAsRoot(arguments) }
        // The table takes a millisecond or two to make (ArgumentParser describes the whole command):
        // a command line without options (`attache detect *.jpg`) needs none.
        let words = arguments.dropFirst()
        let table: OptionTable
        if words.prefix(while: { $0 != "--" }).allSatisfy(isValue) {
            table = OptionTable()
        } else if let described = OptionTable(name, of: root) {
            table = described
        } else {
            return try root.parseAsRoot(arguments)
        }
        let split = split(words, table: table)
        if split.paths.count < 2 { return try root.parseAsRoot(arguments) }

        let handoff = HeldBack(split.paths)
        do {
            let command = try $heldBack.withValue(handoff) { try root.parseAsRoot([name] + split.kept) }
            switch handoff.outcome {
            case .agreed:
                return command
            case nil where !(command is any PathListCommand):
                // A help request, answered before the command was validated.
                return command
            case nil:
                assertionFailure("attache \(name): validate() does not restore the paths")
            case .disagreed:
                break
            }
        } catch {
            // An error in the options comes before validate(); one of validate() saw the whole list.
            if handoff.outcome != .disagreed { throw error }
        }
        guard fallingBack else { throw Disagreement() }
        return try root.parseAsRoot(arguments)
    }

    /// ArgumentParser's list of paths was not the walk's.
    struct Disagreement: Error {}

    /// The words of a command line after the subcommand's name: its paths, and the words ArgumentParser
    /// is to see: all but the paths after the first, in their order (options, their values, `--`, words
    /// the command does not know, and the first path where it stands).
    static func split(_ words: ArraySlice<String>, table: OptionTable) -> (paths: [String], kept: [String]) {
        var paths: [String] = [], kept: [String] = []
        paths.reserveCapacity(words.count)
        func path(_ word: String) {
            if paths.isEmpty { kept.append(word) }
            paths.append(word)
        }
        // ArgumentParser reads every word after the first `--` as a value, whatever it looks like.
        let end = words.firstIndex(of: "--") ?? words.endIndex
        var index = words.startIndex
        while index < words.endIndex {
            if index >= end {
                // `--` itself, unless an option took it as its value.
                if index == end { kept.append(words[index]); index += 1 }
                for word in words[index...] { path(word) }
                break
            }
            let word = words[index]
            index += 1
            guard let takings = takings(of: word, in: table) else {
                path(word)
                continue
            }
            kept.append(word)
            // Each option of the word takes the next word not yet taken: `-ab X Y` gives X to -a and Y
            // to -b. One that finds no value leaves the rest to ArgumentParser's error.
            for taking in takings {
                switch taking {
                case .nothing:
                    continue
                case .nextValue:
                    guard index < end, isValue(words[index]) else { continue }
                case .nextWord:
                    guard index < words.endIndex else { continue }
                }
                kept.append(words[index])
                index += 1
            }
        }
        return (paths, kept)
    }

    /// What each option in `word` takes, in ArgumentParser's order; nil when the word is a value.
    /// Unknown names take nothing, as ArgumentParser treats them until it reports them.
    private static func takings(of word: String, in table: OptionTable) -> [OptionTable.Taking]? {
        if isValue(word) { return nil }
        let dashes = word.prefix { $0 == "-" }.count
        let body = word.dropFirst(dashes)
        switch dashes {
        case 2:
            // `--name=value` carries its value unless the value is empty (`--name=` takes the next word).
            if let equals = body.firstIndex(of: "="), equals != body.index(before: body.endIndex) {
                return []
            }
            let name = body.prefix { $0 != "=" }
            return [table["--" + name] ?? .nothing]
        case 1:
            // `-n=value` carries its value, even an empty one; `-=…` is an error.
            if body.contains("=") { return [] }
            if body.count == 1 { return [table["-" + body] ?? .nothing] }
            if let taking = table["-" + body] { return [taking] }
            return body.map { table["-" + String($0)] ?? .nothing }
        default:
            // `---x` and longer: an error ArgumentParser reports; it takes nothing.
            return []
        }
    }

    /// Whether ArgumentParser reads `word` (before any `--`) as a value rather than an option: it does
    /// not start with `-`, or is `-` alone, or is empty.
    private static func isValue(_ word: String) -> Bool {
        word.utf8.first != UInt8(ascii: "-") || word.utf8.count == 1
    }

    // MARK: The hand-over

    /// The paths held back from one parse, and what the command's `validate()` found in their place.
    final class HeldBack: Sendable {
        enum Outcome: Equatable {
            /// ArgumentParser's list was the first path, as the walk said: the paths replaced it.
            case agreed
            /// ArgumentParser's list was another: the walk read some word otherwise.
            case disagreed
        }

        let paths: [String]
        private let state = LockedValue<Outcome?>(nil)

        init(_ paths: [String]) { self.paths = paths }

        /// nil until the command took the paths.
        var outcome: Outcome? { state.withLock { $0 } }

        func take(into list: inout [String]) {
            state.withLock { $0 = list.count == 1 && list.first == paths.first ? .agreed : .disagreed }
            list = paths
        }
    }

    /// The paths of the parse running in this task, if it is a split one.
    @TaskLocal static var heldBack: HeldBack?

    /// Puts the paths held back from ArgumentParser into `list`, the command's positional list: the
    /// first thing a ``PathListCommand``'s `validate()` does. Does nothing for a command line parsed
    /// whole.
    static func restore(_ list: inout [String]) {
        heldBack?.take(into: &list)
    }
}
