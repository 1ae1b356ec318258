import Foundation
import AttacheTestSupport
import Testing
@testable import AttacheCore

@Suite("WalkFilter")
struct WalkFilterTests {
    @Test(arguments: [
        ("*.jpg", "photo.jpg", true), ("*.jpg", "photo.jpeg", false), ("*.jpg", "a/photo.jpg", false),
        ("a/*.jpg", "a/photo.jpg", true), ("a/*.jpg", "a/b/photo.jpg", false), ("a/**/*.jpg", "a/b/c/photo.jpg", true),
        ("a/**/*.jpg", "a/photo.jpg", true), ("**/cache/**", "x/cache/y/z.bin", true), ("**", "any/thing", true),
        ("?.txt", "a.txt", true), ("?.txt", "ab.txt", false), ("[a-c]*.png", "b1.png", true), ("[!a-c]*.png", "b1.png", false),
        ("IMG_[0-9][0-9].HEIC", "IMG_07.HEIC", true), ("*", "a/b", false), ("a*b*c", "axxbyyc", true), ("a*b*c", "axxbyy", false),
    ])
    func globs(_ glob: String, _ text: String, _ expected: Bool) {
        #expect(WalkFilter.matches(Array(glob.utf8), Array(text.utf8)) == expected, "\(glob) on \(text)")
    }

    @Test func theLastMatchingRuleDecides() {
        var filter = WalkFilter()
        filter.rules = [.include("*.jpg"), .exclude("private/**"), .include("private/shared/*.jpg")]
        #expect(filter.reason(forFile: "2024/a.jpg", byteCount: 10, named: false) == nil)
        #expect(filter.reason(forFile: "notes.txt", byteCount: 10, named: false) == .notIncluded)
        #expect(filter.reason(forFile: "private/a.jpg", byteCount: 10, named: false) == .excluded)
        #expect(filter.reason(forFile: "private/shared/a.jpg", byteCount: 10, named: false) == nil)
        #expect(filter.description == "--include '*.jpg' --exclude 'private/**' --include 'private/shared/*.jpg'")
    }

    @Test func hiddenJunkAndSizes() {
        var filter = WalkFilter()
        filter.minimumSize = 10
        filter.maximumSize = 100
        #expect(filter.reason(forFile: "a/.DS_Store", byteCount: 50, named: false) == .hidden)
        #expect(filter.reason(forFile: "Thumbs.db", byteCount: 50, named: false) == .junk)
        #expect(filter.reason(forFile: "report.docx~", byteCount: 50, named: false) == .junk)
        #expect(filter.reason(forFile: "~$report.docx", byteCount: 50, named: false) == .junk)
        #expect(filter.reason(forFile: ".env", byteCount: 50, named: true) == nil, "a file named on the command line is taken")
        #expect(filter.reason(forFile: "tiny", byteCount: 9, named: false) == .tooSmall)
        #expect(filter.reason(forFile: "huge", byteCount: 101, named: false) == .tooLarge)
        #expect(filter.reason(forFolder: "a/.git") == .hidden)
        #expect(filter.reason(forFolder: "__MACOSX") == .junk)
        filter.includesHidden = true
        #expect(filter.reason(forFile: "a/.DS_Store", byteCount: 50, named: false) == nil)
    }

    @Test func theWalkDoesNotEnterALeftOutFolder() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        try folder.write("keep/a.jpg", "a")
        try folder.write(".git/objects/1", "x")
        try folder.write("build/out.o", "o")
        try folder.write("keep/.hidden.jpg", "h")
        var filter = WalkFilter()
        filter.rules = [.exclude("build")]
        let walker = FileWalker(roots: [folder.path], followSymlinks: false, filter: filter)
        var items: [FileWalker.Item] = []
        while case let page = walker.next(limit: 100), !page.isEmpty { items += page }
        #expect(
            items == [
                .filtered(path: folder.path + "/.git", reason: .hidden),
                .filtered(path: folder.path + "/build", reason: .excluded),
                .filtered(path: folder.path + "/keep/.hidden.jpg", reason: .hidden),
                .file(path: folder.path + "/keep/a.jpg", byteCount: 1),
            ])
    }
}
