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

/// `--files-from`: paths read from a file, one per line, after those given as arguments.
@Suite("Paths from a file")
struct FilesFromTests {
    @Test("detect and batch take --files-from, - for standard input; blank lines and CRLF endings are fine; a missing list is a usage error")
    func pathsFromAFile() async throws {
        let folder = try ScratchFolder(prefix: "attache-files-from")
        defer { folder.remove() }
        let a = try folder.write("in/a.txt", "alpha")
        let b = try folder.write("in/b b.txt", "bravo")
        let c = try folder.write("in/c.txt", "charlie")
        let list = try folder.write("list.txt", "\(b)\n\n\(c)\r\n")
        let detected = await attache(["detect", a, "--files-from", list, "--json"])
        #expect(detected.status == 0, "\(detected.all)")
        let paths = detected.standardOutput.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["path"] as? String
        }
        #expect(paths == [a, b, c])
        try await LiveServer.with { server in
            let batch = await attache([
                "batch", "--files-from", list, "--url", server.uploadURL, "--journal", folder.path + "/journal.sqlite",
            ])
            #expect(batch.status == 0 && batch.standardOutput.contains("2 sent"), "\(batch.all)")
        }
        let missing = await attache(["detect", "--files-from", folder.path + "/no-such-list"])
        #expect(missing.status == 64 && missing.standardError.contains("no-such-list"), "\(missing.all)")
        let none = await attache(["batch", "--url", "http://127.0.0.1:9/upload"])
        #expect(none.status == 64 && none.standardError.contains("--files-from"), "\(none.all)")

        // `-` reads the list from standard input, as rsync and tar do: a program of its own, fed by a pipe.
        let piped = try await ChildProcess.run(
            try attacheBinary(), ["detect", "--files-from", "-", "--json"], input: Data("\(c)\n\(a)\n".utf8))
        #expect(piped.status == 0, "\(piped.standardError)")
        let pipedPaths = piped.standardOutput.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["path"] as? String
        }
        #expect(pipedPaths == [c, a])
    }
}

private func PathText_last(_ path: String) -> String { URL(fileURLWithPath: path).lastPathComponent }
