import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

@Suite("FileSource")
struct FileSourceTests {
    func temporaryFile(_ bytes: [UInt8]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("attache-fs-\(UUID().uuidString)").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func readsTheWholeFileAgainOnEachReader() throws {
        let path = try temporaryFile(Array(0..<200))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let source = try FileSource(path: path)
        #expect(source.byteCount == 200)
        #expect(try readAll(source, chunk: 64) == Array(0..<200))
        #expect(try readAll(source, chunk: 13) == Array(0..<200))
    }

    @Test func missingFileIsNamed() {
        let error = #expect(throws: AttacheError.self) { try FileSource(path: "/nonexistent/attache-missing") }
        #expect(error?.code == .fileNotFound)
        #expect(error?.file == "/nonexistent/attache-missing")
    }

    @Test func directoryIsRefused() {
        let error = #expect(throws: AttacheError.self) { try FileSource(path: FileManager.default.temporaryDirectory.path) }
        #expect(error?.code == .fileUnreadable)
    }

    @Test func fileThatShrinksWhileReadIsReported() throws {
        let path = try temporaryFile([UInt8](repeating: 7, count: 1000))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let source = try FileSource(path: path)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: AttacheError.self) { _ = try readAll(source, chunk: 100) }
        #expect(error?.code == .fileChanged)
    }

    @Test func fileThatGrowsWhileReadIsReported() throws {
        let path = try temporaryFile([UInt8](repeating: 7, count: 10))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let source = try FileSource(path: path)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([9, 9]))
        try handle.close()
        let error = #expect(throws: AttacheError.self) { _ = try readAll(source, chunk: 100) }
        #expect(error?.code == .fileChanged)
    }
}
