import Foundation
import Testing
@testable import AttacheCore

/// The name a file is known by in the walk, the batch journal and the shared queue: what standardizing a
/// file URL gives, made without Foundation.
@Suite struct AbsolutePathTests {
    private static func standardized(_ path: String) -> String {
        let url =
            path.hasPrefix("/") ? URL(fileURLWithPath: path)
            : URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(path)
        return url.standardized.path
    }

    @Test(arguments: [
        "/tmp/a.bin", "/tmp/dir/file name with spaces.jpg", "/tmp/per%20cent", "/tmp/q?x#y;z", "/tmp/caf\u{e9}/\u{1F600}.png",
        "/tmp/.hidden", "/tmp/..x", "/tmp/x..", "/tmp/a/.../b", "/tmp/a.", "/a", "relative/file.bin", "./x/../y",
        "/tmp//double", "/tmp/./dot", "/tmp/a/../b", "/tmp/trailing/", "/tmp/..", "/tmp/.", "/", "x", "/..", "/tmp/../../up",
    ])
    func namesMatchStandardizedURLs(path: String) {
        #expect(PathText.absolute(path) == Self.standardized(path))
    }

    @Test func onlyCleanAbsolutePathsTakeTheShortcut() {
        #expect(PathText.isStandardAbsolute("/tmp/a.bin"))
        #expect(PathText.isStandardAbsolute("/tmp/.hidden/..x"))
        for path in ["tmp/a", "/", "/tmp/", "/tmp//a", "/tmp/./a", "/tmp/../a", "/tmp/.", "/tmp/..", ""] {
            #expect(!PathText.isStandardAbsolute(path), "\(path)")
        }
    }

    @Test func theWorkingDirectoryIsFoundationsToo() {
        #expect(PathText.currentDirectory == FileManager.default.currentDirectoryPath)
    }
}
