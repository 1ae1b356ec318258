import Foundation
import AttacheTestSupport
import Testing

/// `attache batch` chooses what it sends: hidden files and OS junk are left out by default, `--include` and
/// `--exclude` globs and size bounds narrow the walk, the summary counts what was left out and why, and a
/// rerun with another filter says so.
@Suite("Batch filters")
struct BatchFilterTests {
    @Test("hidden files, junk, an excluded folder and sizes are left out and counted; a hidden file named is sent")
    func filtersChooseWhatIsSent() async throws {
        let folder = try ScratchFolder(prefix: "attache-batch-filter")
        defer { folder.remove() }
        let files = folder.path + "/files"
        try folder.write("files/photos/a.jpg", Array(try Data(contentsOf: ExitStatusTests.packageRoot.appendingPathComponent("Samples/photo.jpg"))))
        try folder.write("files/photos/b.txt", "the minutes of the meeting")
        try folder.write("files/.git/config", "[core]")
        try folder.write("files/.DS_Store", "junk from a mac")
        try folder.write("files/Thumbs.db", "junk from windows")
        try folder.write("files/notes.txt~", "an editor's backup")
        try folder.write("files/cache/x.bin", "cached bytes")
        try folder.write("files/big.bin", randomBytes(300_000))
        try folder.write("files/tiny.txt", "abc")
        try await LiveServer.with { server in
            let journal = folder.path + "/journal.sqlite"
            let result = await attache([
                "batch", files, "--url", server.uploadURL, "--journal", journal, "--json",
                "--exclude", "cache", "--max-size", "250k", "--min-size", "10",
            ])
            #expect(result.status == 0, "\(result.all.suffix(2000))")
            let events = result.standardOutput.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let sent = Set(events.filter { $0["event"] as? String == "succeeded" }.compactMap { ($0["path"] as? String).map { PathText_last($0) } })
            #expect(sent == ["a.jpg", "b.txt"])
            let summary = try #require(events.last?["summary"] as? [String: Any])
            let filtered = try #require(summary["filtered"] as? [String: Int])
            #expect(filtered == ["hidden": 2, "junk": 2, "excluded": 1, "too-large": 1, "too-small": 1], "\(filtered)")

            // Another filter: the summary says the journal's previous run walked with another one.
            let again = await attache(["batch", files, "--url", server.uploadURL, "--journal", journal, "--include", "*.jpg"])
            #expect(again.status == 0, "\(again.all.suffix(2000))")
            #expect(again.standardOutput.contains("previous run walked with --exclude 'cache' --min-size 10 --max-size 256000"), "\(again.all)")
            #expect(again.standardOutput.contains("left out by the filter:"), "\(again.all)")

            // A hidden file named on the command line is what the user asked for.
            let named = await attache(["batch", files + "/.DS_Store", "--url", server.uploadURL, "--journal", journal])
            #expect(named.status == 0 && named.standardOutput.contains("1 sent"), "\(named.all)")
            #expect(try await server.stats().idempotencyKeys == 3)
        }
    }
}

private func PathText_last(_ path: String) -> String { URL(fileURLWithPath: path).lastPathComponent }
