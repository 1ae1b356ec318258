import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

@Suite("FileWalker")
struct FileWalkerTests {
    private func walk(_ walker: FileWalker, page: Int = 256) -> [FileWalker.Item] {
        var all: [FileWalker.Item] = []
        while true {
            let items = walker.next(limit: page)
            if items.isEmpty { return all }
            #expect(items.count <= page)
            all += items
        }
    }

    @Test func walksFoldersInSortedOrderAPageAtATime() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        try folder.write("b/2.txt", "22")
        try folder.write("b/1.txt", "1")
        try folder.write("a.txt", "aaa")
        try folder.write("c/d/e.txt", "eeeee")
        let single = try folder.write("single.bin", "x")
        let items = walk(FileWalker(roots: [folder.path, single], followSymlinks: false), page: 2)
        #expect(
            items == [
                .file(path: folder.path + "/a.txt", byteCount: 3),
                .file(path: folder.path + "/b/1.txt", byteCount: 1),
                .file(path: folder.path + "/b/2.txt", byteCount: 2),
                .file(path: folder.path + "/c/d/e.txt", byteCount: 5),
                .file(path: folder.path + "/single.bin", byteCount: 1),
                .file(path: single, byteCount: 1),
            ])
    }

    @Test func theJournalIsNeverWalked() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        try folder.write("photo.jpg", "jpeg")
        try folder.write("attache-journal.sqlite", "db")
        try folder.write("attache-journal.sqlite-wal", "wal")
        let journal = folder.path + "/attache-journal.sqlite"
        let walker = FileWalker(roots: [folder.path], followSymlinks: false, excluding: [journal, journal + "-wal"])
        #expect(walk(walker) == [.file(path: folder.path + "/photo.jpg", byteCount: 4)])
    }

    @Test func symbolicLinksStayInsideTheFolderUnlessFollowed() throws {
        let outside = try ScratchFolder()
        let folder = try ScratchFolder()
        defer {
            folder.remove()
            outside.remove()
        }
        let secret = try outside.write("secret.txt", "outside")
        try folder.write("real/file.txt", "inside")
        try folder.link("inside-link.txt", to: folder.path + "/real/file.txt")
        try folder.link("outside-link.txt", to: secret)
        try folder.link("dangling.txt", to: folder.path + "/missing.txt")
        try folder.link("dir-link", to: folder.path + "/real")
        try folder.link("loop", to: folder.path)

        let items = walk(FileWalker(roots: [folder.path], followSymlinks: false))
        #expect(items.contains(.file(path: folder.path + "/inside-link.txt", byteCount: 6)))
        #expect(items.contains(.file(path: folder.path + "/real/file.txt", byteCount: 6)))
        #expect(
            items.contains(
                .failed(path: folder.path + "/dangling.txt", code: .fileNotFound, message: "the symbolic link's target does not exist")))
        #expect(items.contains { if case .skipped(folder.path + "/outside-link.txt", _) = $0 { true } else { false } })
        #expect(items.contains { if case .skipped(folder.path + "/dir-link", _) = $0 { true } else { false } })
        #expect(items.contains { if case .skipped(folder.path + "/loop", _) = $0 { true } else { false } })
        #expect(!items.contains { if case .file(let path, _) = $0 { path.contains("outside") } else { false } })

        let followed = walk(FileWalker(roots: [folder.path], followSymlinks: true))
        #expect(followed.contains(.file(path: folder.path + "/outside-link.txt", byteCount: 7)))
        #expect(followed.contains(.file(path: folder.path + "/dir-link/file.txt", byteCount: 6)))
        #expect(followed.contains { if case .skipped(folder.path + "/loop", "symbolic link loop") = $0 { true } else { false } })
    }

    @Test func specialFilesAndMissingRootsAreReported() throws {
        let folder = try ScratchFolder()
        defer { folder.remove() }
        #expect(mkfifo(folder.path + "/pipe", 0o600) == 0)
        let items = walk(FileWalker(roots: [folder.path, folder.path + "/nope"], followSymlinks: false))
        #expect(
            items == [
                .skipped(path: folder.path + "/pipe", reason: "not a regular file"),
                .failed(path: folder.path + "/nope", code: .fileNotFound, message: "no such file or folder"),
            ])
    }
}
