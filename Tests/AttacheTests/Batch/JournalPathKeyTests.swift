import Foundation
import Testing
@testable import Attache
@testable import AttacheBatch

/// The journal's key for a path: the shortcut for clean absolute paths gives what standardizing a URL gives.
@Suite struct JournalPathKeyTests {
    private static func standardized(_ path: String) -> String {
        let url =
            path.hasPrefix("/") ? URL(fileURLWithPath: path)
            : URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(path)
        return url.standardized.path
    }

    @Test(arguments: [
        "/tmp/a.bin", "/tmp/dir/file name with spaces.jpg", "/tmp/per%20cent", "/tmp/q?x#y;z", "/tmp/caf\u{e9}/\u{1F600}.png",
        "/tmp/.hidden", "/tmp/..x", "/tmp/x..", "/tmp/a/.../b", "/tmp/a.", "/a", "relative/file.bin", "./x/../y",
        "/tmp//double", "/tmp/./dot", "/tmp/a/../b", "/tmp/trailing/", "/tmp/..", "/tmp/.", "/", "x",
    ])
    func keysMatchStandardizedURLs(path: String) {
        #expect(UploadJournal.absolute(path) == Self.standardized(path))
    }

    @Test func onlyCleanAbsolutePathsTakeTheShortcut() {
        #expect(UploadJournal.isStandardAbsolute("/tmp/a.bin"))
        #expect(UploadJournal.isStandardAbsolute("/tmp/.hidden/..x"))
        for path in ["tmp/a", "/", "/tmp/", "/tmp//a", "/tmp/./a", "/tmp/../a", "/tmp/.", "/tmp/..", ""] {
            #expect(!UploadJournal.isStandardAbsolute(path), "\(path)")
        }
    }
}
