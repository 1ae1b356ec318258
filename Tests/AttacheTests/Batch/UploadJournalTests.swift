import Foundation
import GRDB
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheBatch
@testable import AttacheCore

@Suite("UploadJournal")
struct UploadJournalTests {
    let folder: ScratchFolder
    let journalPath: String
    let identity = FileIdentity(byteCount: 5, modificationTime: 1_700_000_000_000_000_000, sha256: String(repeating: "a", count: 64))

    init() throws {
        folder = try ScratchFolder()
        journalPath = folder.path + "/journal.sqlite"
    }

    private func receipt(key: String) -> UploadReceipt {
        UploadReceipt(
            path: "a.txt", filename: "a.txt", kind: .file, mimeType: "text/plain", fileId: "f1", url: "/files/f1",
            originalByteCount: 5, sentByteCount: 5, bodyByteCount: 300, idempotencyKey: key, attempts: 1,
            replayed: false, seconds: 0.1, server: .object(["fileId": .string("f1")]),
            seal: SealReceipt(scheme: .none, transferEncoding: .binary, plaintextByteCount: 5),
            detection: MIMEDetector().detect(prefix: Array("hello".utf8), filename: "a.txt"),
            transform: TransformReceipt(recompressed: false, byteCount: 5))
    }

    /// The content index is kept up only once a run has looked content up: a run without reuse writes
    /// each file's content key but keeps no index of it; the first run with reuse makes one, which its
    /// lookups use, and it stays for the runs after.
    @Test func theContentIndexIsMadeByTheFirstRunThatLooksContentUp() throws {
        let journal = try UploadJournal(path: journalPath)
        func indexes() throws -> [String] {
            try journal.database.read { db in
                try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'file'")
            }
        }
        let plain = try journal.beginRun()
        _ = try journal.claim(path: folder.path + "/a", identity: identity, retryFailed: false, runID: plain, contentKey: "k1")
        let before = try indexes()
        #expect(!before.contains { $0.contains("content") }, "\(before)")
        #expect(try journal.database.read { try String.fetchOne($0, sql: "SELECT contentKey FROM file") } == "k1")

        _ = try journal.beginRun(looksUpContent: true)
        let after = try indexes()
        #expect(after.contains("file_content_key"), "\(after)")
        let plan = try journal.database.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + UploadJournal.selectStored, arguments: ["k1", "x"])
                .map { $0["detail"] as String? ?? "" }.joined(separator: "; ")
        }
        #expect(plan.contains("file_content_key"), "\(plan)")
        _ = try journal.beginRun()
        #expect(try indexes().contains("file_content_key"))
    }

    @Test(arguments: [false, true])
    func theKeyIsCommittedBeforeTheSendAndSurvivesAReopen(durable: Bool) throws {
        defer { folder.remove() }
        let journal = try UploadJournal(path: journalPath, durable: durable)
        let run = try journal.beginRun()
        let decision = try journal.claim(path: folder.path + "/a.txt", identity: identity, retryFailed: false, runID: run)
        guard case .send(let key, _, let resumed) = decision else {
            Issue.record("expected a send, got \(decision)")
            return
        }
        #expect(!resumed)
        #expect(key.count == 32)

        // A second connection sees the committed row: this is what a run after a crash reads.
        let other = try UploadJournal(path: journalPath)
        let entry = try #require(try other.entry(for: folder.path + "/a.txt"))
        #expect(entry.state == .inFlight)
        #expect(entry.idempotencyKey == key)
        #expect(entry.attempts == 1)
        #expect(entry.sha256 == identity.sha256)

        // The crashed send is resumed with the same key.
        let nextRun = try other.beginRun()
        let again = try other.claim(path: folder.path + "/a.txt", identity: identity, retryFailed: false, runID: nextRun)
        #expect(again.sendSummary == SendSummary(key: key, resumed: true))
        #expect(try other.entry(for: folder.path + "/a.txt")?.attempts == 2)
    }

    @Test func aDoneFileIsSkippedUntilItChanges() throws {
        defer { folder.remove() }
        let journal = try UploadJournal(path: journalPath)
        let path = folder.path + "/a.txt"
        let first = try journal.claim(path: path, identity: identity, retryFailed: false, runID: try journal.beginRun())
        guard case .send(let key, _, _) = first else {
            Issue.record("expected a send")
            return
        }
        try journal.markDone(path: path, receipt: receipt(key: key))
        let entry = try #require(try journal.entry(for: path))
        #expect(entry.state == .done)
        #expect(entry.receipt?.fileId == "f1")
        #expect(entry.receipt?.idempotencyKey == key)

        let run = try journal.beginRun()
        #expect(try journal.claim(path: path, identity: identity, retryFailed: false, runID: run) == .alreadyDone)

        for changed in [
            FileIdentity(byteCount: 6, modificationTime: identity.modificationTime, sha256: identity.sha256),
            FileIdentity(byteCount: 5, modificationTime: identity.modificationTime + 1, sha256: identity.sha256),
            FileIdentity(byteCount: 5, modificationTime: identity.modificationTime, sha256: String(repeating: "b", count: 64)),
        ] {
            let decision = try journal.claim(path: path, identity: changed, retryFailed: false, runID: try journal.beginRun())
            guard case .send(let newKey, _, let resumed) = decision else {
                Issue.record("a changed file must be sent again, got \(decision)")
                continue
            }
            #expect(newKey != key)
            #expect(!resumed)
            try journal.markDone(path: path, receipt: receipt(key: newKey))
            // Restore the original identity's row for the next variant.
            _ = try journal.claim(path: path, identity: identity, retryFailed: false, runID: try journal.beginRun())
            try journal.markDone(path: path, receipt: receipt(key: "x"))
        }
    }

    @Test func failedFilesAreSkippedUnlessRetriedAndKeepTheirKey() throws {
        defer { folder.remove() }
        let journal = try UploadJournal(path: journalPath)
        let path = folder.path + "/b.txt"
        let runID = try journal.beginRun()
        guard case .send(let key, _, _) = try journal.claim(path: path, identity: identity, retryFailed: false, runID: runID) else {
            Issue.record("expected a send")
            return
        }
        let error = AttacheError(.rejected, stage: .interpret, "the server refused the upload", file: path)
        try journal.markFailed(path: path, error: error, runID: runID, identity: identity)
        let entry = try #require(try journal.entry(for: path))
        #expect(entry.state == .failed)
        #expect(entry.errorCode == "rejected")
        #expect(entry.errorStage == "interpret")

        let second = try journal.beginRun()
        #expect(
            try journal.claim(path: path, identity: identity, retryFailed: false, runID: second)
                == .previouslyFailed(code: "rejected", message: "the server refused the upload"))
        #expect(try journal.claim(path: path, identity: identity, retryFailed: true, runID: second).sendSummary == SendSummary(key: key, resumed: false))
        #expect(try journal.entry(for: path)?.errorCode == nil)
    }

    @Test func aPathGivenTwiceInOneRunIsADuplicate() throws {
        defer { folder.remove() }
        let journal = try UploadJournal(path: journalPath)
        let runID = try journal.beginRun()
        _ = try journal.claim(path: folder.path + "/c.txt", identity: identity, retryFailed: false, runID: runID)
        // The same file by another spelling of its path.
        let spelled = folder.path + "/./sub/../c.txt"
        #expect(try journal.claim(path: spelled, identity: identity, retryFailed: false, runID: runID) == .duplicate)
    }

    @Test func aCancelledSendGoesBackToPendingWithItsKey() throws {
        defer { folder.remove() }
        let journal = try UploadJournal(path: journalPath)
        let path = folder.path + "/d.txt"
        let runID = try journal.beginRun()
        guard case .send(let key, _, _) = try journal.claim(path: path, identity: identity, retryFailed: false, runID: runID) else {
            Issue.record("expected a send")
            return
        }
        try journal.markPending(path: path)
        #expect(try journal.entry(for: path)?.state == .pending)
        #expect(try journal.counts() == [.pending: 1])
        let decision = try journal.claim(path: path, identity: identity, retryFailed: false, runID: try journal.beginRun())
        #expect(decision.sendSummary == SendSummary(key: key, resumed: true))
    }

    @Test func theDatabaseIsInWALModeAndUsableByAnotherProcessReader() throws {
        defer { folder.remove() }
        let journal = try UploadJournal(path: journalPath)
        _ = try journal.claim(path: folder.path + "/e.txt", identity: identity, retryFailed: false, runID: try journal.beginRun())
        #expect(FileManager.default.fileExists(atPath: journalPath + "-wal"))
        let reader = try UploadJournal(path: journalPath, readOnly: true)
        #expect(try reader.entries().map(\.state) == [.inFlight])
        #expect(try reader.decide(path: folder.path + "/e.txt", identity: identity, retryFailed: false) != .alreadyDone)
    }

    @Test func aFileThatIsNotAJournalIsRefusedClearly() throws {
        defer { folder.remove() }
        try folder.write("notes.txt", String(repeating: "not a database ", count: 100))
        let error = #expect(throws: AttacheError.self) { try UploadJournal(path: folder.path + "/notes.txt") }
        #expect(error?.code == .journal)
        #expect(error?.file == folder.path + "/notes.txt")
        let missing = #expect(throws: AttacheError.self) {
            try UploadJournal(path: folder.path + "/no/such/dir/journal.sqlite")
        }
        #expect(missing?.code == .journal)
    }
}

@Suite("ContentDigest")
struct ContentDigestTests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    ])
    func knownDigests(input: String, hex: String) throws {
        #expect(try ContentDigest.sha256Hex(of: DataSource(input)) == hex)
    }

    @Test func largeInputsAreHashedInChunks() throws {
        // 1,000,000 × "a": the FIPS 180-2 long-message vector, read in several 256 KiB chunks.
        let source = DataSource([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
        #expect(try ContentDigest.sha256Hex(of: source) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}

/// The key and resume flag of a `.send` decision, comparable in `#expect`.
struct SendSummary: Equatable {
    var key: String
    var resumed: Bool
}

extension UploadJournal.Decision {
    var sendSummary: SendSummary? {
        if case .send(let key, let material, let resumed) = self, material != nil {
            return SendSummary(key: key, resumed: resumed)
        }
        return nil
    }
}
