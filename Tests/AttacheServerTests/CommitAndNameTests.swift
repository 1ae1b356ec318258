import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import AttacheTestSupport
import Testing
@testable import AttacheServer

@Suite("Reference server: names as sent, commits that survive a crash")
struct CommitAndNameTests {
    // MARK: Content-Disposition

    @Test("quoted values end at the next quote; a backslash is an ordinary character", arguments: [
        (#"form-data; name="file"; filename="end\""#, "end\\"),
        (#"form-data; name="file"; filename="a\\b""#, #"a\\b"#),
        (#"form-data; name="file"; filename="C:\x\y.txt""#, #"C:\x\y.txt"#),
        (#"form-data; name="file"; filename="x%22;name=%22evil""#, "x%22;name=%22evil"),
        ("form-data; name=\"file\"; filename=\"\u{301}accent\"", "\u{301}accent"),
        (#"form-data; name="file"; filename="  spaced  ""#, "  spaced  "),
        (#"form-data; name="file"; filename=plain.txt"#, "plain.txt"),
    ])
    func contentDisposition(header: String, filename: String) {
        let parameters = ContentDisposition.parameters(of: header)
        #expect(parameters["name"] == "file")
        #expect(parameters["filename"] == filename)
    }

    @Test func aFilenameEndingInABackslashIsStoredAsSent() async throws {
        let store = try TemporaryStore()
        var builder = MultipartFixture()
        builder.file("file", filename: "end\\", type: "application/octet-stream", sampleBytes(count: 100))
        builder.field("after", "1")
        let form = builder
        let app = try await buildApplication(configuration: store.configuration())
        try await app.test(.router) { client in
            try await client.execute(
                uri: "/upload", method: .post, headers: [.contentType: form.contentType],
                body: ByteBuffer(bytes: form.encoded())
            ) { response in
                #expect(response.status == .ok)
                let data = try #require(try jsonObject(response.body.readableBytesView)["data"] as? [String: Any])
                #expect(data["filename"] as? String == "end\\")
                #expect((data["parts"] as? [Any])?.count == 1)
                #expect((data["fields"] as? [String: Any])?["after"] as? String == "1")
            }
        }
    }

    // MARK: Commits

    @Test func aCrashFaultIsRefusedFromARequestHeader() async throws {
        let store = try TemporaryStore()
        var builder = MultipartFixture()
        builder.file("file", filename: "a.bin", type: "application/octet-stream", sampleBytes(count: 100))
        let form = builder
        let app = try await buildApplication(configuration: store.configuration())
        try await app.test(.router) { client in
            try await client.execute(
                uri: "/upload", method: .post,
                headers: [.contentType: form.contentType, .testFault: "crash:at=after-files"],
                body: ByteBuffer(bytes: form.encoded())
            ) { response in
                #expect(response.status == .badRequest)
            }
        }
        #expect(store.storedFiles().isEmpty)
    }

    @Test func crashFaultsParse() throws {
        #expect(try FaultPlan(parsing: "crash").rules.first?.kind == .crash(at: .afterFiles))
        #expect(try FaultPlan(parsing: "crash@3:at=after-key").rules.first?.kind == .crash(at: .afterKey))
        #expect(try FaultPlan(parsing: "crash:at=after-part").description == "crash:at=after-part")
        #expect(throws: (any Error).self) { try FaultPlan(parsing: "crash:at=never") }
    }

    /// Every attempt under one key writes the same file ids, so a retry after a crash overwrites what
    /// the crashed attempt left rather than adding a copy.
    @Test func theFileIdsOfAKeyedUploadDependOnlyOnTheKeyAndTheStore() async throws {
        let store = try TemporaryStore()
        func upload(_ key: String, seed: UInt64) async throws -> String {
            var builder = MultipartFixture()
            builder.file("file", filename: "a.bin", type: "application/octet-stream", sampleBytes(count: 500, seed: seed))
            let form = builder
            let app = try await buildApplication(configuration: store.configuration())
            return try await app.test(.router) { client in
                try await client.execute(
                    uri: "/upload", method: .post, headers: [.contentType: form.contentType, .testIdempotencyKey: key],
                    body: ByteBuffer(bytes: form.encoded())
                ) { response in
                    let data = try #require(try jsonObject(response.body.readableBytesView)["data"] as? [String: Any])
                    return try #require(data["fileId"] as? String)
                }
            }
        }
        let first = try await upload("key-a", seed: 1)
        // The key record goes: the key's next upload is treated as new, and must land on the same id.
        for name in store.entries("keys") { unlink(store.path + "/keys/" + name) }
        let again = try await upload("key-a", seed: 2)
        #expect(again == first)
        #expect(store.storedFiles() == [first])
        let other = try await upload("key-b", seed: 1)
        #expect(other != first)
        #expect(UploadStore.isValidFileId(first))
    }

    @Test func startUpRollsBackAnUploadThatNeverReachedItsCommitPoint() throws {
        let store = try TemporaryStore()
        // What a crash after step 2 of the commit leaves: parts and receipts, a pending record, no key.
        let files = store.path + "/files", pending = store.path + "/pending", keys = store.path + "/keys"
        for directory in [files, pending, keys] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        let orphan = "aaaaaaaaaaaaaaaaaaaaaaaaaa", orphanThumbnail = "bbbbbbbbbbbbbbbbbbbbbbbbbb"
        let committed = "cccccccccccccccccccccccccc"
        for id in [orphan, orphanThumbnail, committed] {
            try Data("bytes".utf8).write(to: URL(fileURLWithPath: files + "/" + id))
            try Data("{}".utf8).write(to: URL(fileURLWithPath: files + "/" + id + ".json"))
        }
        let uncommittedKey = String(repeating: "1", count: 64), committedKey = String(repeating: "2", count: 64)
        try Data("\(orphan)\n\(orphanThumbnail)".utf8).write(to: URL(fileURLWithPath: pending + "/" + uncommittedKey))
        // A crash between the key record and the removal of the pending record: committed.
        try Data(committed.utf8).write(to: URL(fileURLWithPath: pending + "/" + committedKey))
        try Data(committed.utf8).write(to: URL(fileURLWithPath: keys + "/" + committedKey))

        let reopened = try UploadStore(root: store.path)
        #expect(store.storedFiles() == [committed])
        #expect(store.entries("files").sorted() == [committed, committed + ".json"])
        #expect(store.entries("pending").isEmpty)
        #expect(reopened.statistics.files == 1)
        #expect(reopened.statistics.idempotencyKeys == 1)
    }
}
