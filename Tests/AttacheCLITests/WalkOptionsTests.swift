import ArgumentParser
import Attache
import Testing
@testable import AttacheCLI

/// `--include` and `--exclude` keep the order they were given in across the two options, so that the last
/// matching glob decides; sizes and `--hidden` reach the filter.
@Suite struct WalkOptionsTests {
    @Test func rulesKeepTheCommandLineOrder() throws {
        let options = try WalkOptions.parse([
            "--include", "*.jpg", "--exclude", "private/**", "--min-size", "1k", "--include", "private/shared/*.jpg",
            "--exclude", "*.tmp", "--hidden",
        ])
        let filter = options.filter
        #expect(
            filter.rules == [.include("*.jpg"), .exclude("private/**"), .include("private/shared/*.jpg"), .exclude("*.tmp")])
        #expect(filter.minimumSize == 1024)
        #expect(filter.includesHidden)
        #expect(filter.reason(forFile: "private/shared/a.jpg", byteCount: 2048, named: false) == nil)
        #expect(filter.reason(forFile: "private/a.jpg", byteCount: 2048, named: false) == .excluded)
    }

    @Test func theDefaultLeavesOutHiddenFilesOnly() throws {
        let filter = try WalkOptions.parse([]).filter
        #expect(filter == WalkFilter())
        #expect(filter.description.isEmpty)
    }
}
