import ArgumentParser
package import Attache
import Synchronization

/// What a folder walk takes (`batch`, `enqueue`, `scan`): hidden files and OS junk left out unless
/// `--hidden`, `--include`/`--exclude` globs in the order given (the last match decides), size bounds.
package struct WalkOptions: ParsableArguments {
    @Option(
        name: .customLong("include"),
        help: ArgumentHelp(
            "Take only files matching this glob (repeatable; * within a folder, ** at any depth, ? [a-z]; "
                + "without / it matches the name). With --exclude, the last glob that matches decides.",
            valueName: "glob"))
    var includes: [OrderedGlob] = []

    @Option(
        name: .customLong("exclude"),
        help: ArgumentHelp(
            "Leave out files and folders matching this glob (repeatable; as --include).", valueName: "glob"))
    var excludes: [OrderedGlob] = []

    @Option(help: ArgumentHelp("Leave out files smaller than this (bytes, or 10k, 5M, 1G).", valueName: "size"))
    var minSize: ByteSize?

    @Option(help: ArgumentHelp("Leave out files larger than this (bytes, or 10k, 5M, 1G).", valueName: "size"))
    var maxSize: ByteSize?

    @Flag(help: "Take hidden files and folders (names starting with .) and OS junk (Thumbs.db, desktop.ini, *~) too.")
    var hidden = false

    package init() {}

    /// The filter the options describe.
    package var filter: WalkFilter {
        var filter = WalkFilter()
        filter.rules = (includes.map { ($0.order, WalkFilter.Rule.include($0.glob)) }
            + excludes.map { ($0.order, WalkFilter.Rule.exclude($0.glob)) })
            .sorted { $0.0 < $1.0 }.map(\.1)
        filter.minimumSize = minSize?.bytes
        filter.maximumSize = maxSize?.bytes
        filter.includesHidden = hidden
        return filter
    }
}

/// A glob with the position it was parsed at: ArgumentParser parses options in the order given, so the
/// positions put `--include` and `--exclude` back in one order.
struct OrderedGlob: ExpressibleByArgument, Sendable {
    let glob: String
    let order: Int

    private static let counter = Atomic<Int>(0)

    init?(argument: String) {
        guard !argument.isEmpty else { return nil }
        glob = argument
        order = Self.counter.add(1, ordering: .relaxed).newValue
    }
}
