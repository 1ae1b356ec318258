import Attache
import AttacheCore
import AttacheTestSupport
import Foundation
import Testing

/// Identical sources in one run are transformed once (``PipelineConfiguration/sharesTransforms``, on by
/// default): copies sent at the same time wait for the first transform, copies sent later take the output
/// kept, and each copy is still sealed with a fresh key of its own, stored on its own, and opened by its
/// receipt's key, against the reference server.
@Suite("Identical sources transformed once per run")
struct SharedTransformTests {
    static var samples: URL { ExitStatusTests.packageRoot.appendingPathComponent("Samples") }

    /// `stored` opened with the receipt's seal.
    func opened(_ stored: Data, _ receipt: UploadReceipt) throws -> [UInt8] {
        let key = try #require(receipt.seal.key)
        return try Unsealer(scheme: receipt.seal.scheme, key: key, transferEncoding: receipt.seal.transferEncoding)
            .unseal(DataSource(Array(stored))).readToEnd()
    }

    @Test("three copies of a photo at once and one later: one transform, four keys, four stored files that open alike")
    func copiesAreTransformedOnce() async throws {
        let folder = try ScratchFolder(prefix: "attache-shared-transform")
        defer { folder.remove() }
        let photo = try Data(contentsOf: Self.samples.appendingPathComponent("photo.jpg"))
        for name in ["a.jpg", "b.jpg", "c.jpg", "later.jpg"] { try photo.write(to: URL(fileURLWithPath: folder.path + "/" + name)) }
        let other = folder.path + "/other.png"
        try Data(contentsOf: Self.samples.appendingPathComponent("screenshot.png")).write(to: URL(fileURLWithPath: other))
        try await LiveServer.with { server in
            let pipeline = try server.pipeline { $0.seal = SealConfiguration() }
            let atOnce = try await withThrowingTaskGroup(of: UploadReceipt.self) { group in
                for name in ["a.jpg", "b.jpg", "c.jpg"] {
                    group.addTask { try await pipeline.send(Attachment(path: folder.path + "/" + name)) }
                }
                var receipts: [UploadReceipt] = []
                for try await receipt in group { receipts.append(receipt) }
                return receipts
            }
            let distinct = try await pipeline.send(Attachment(path: other))
            let later = try await pipeline.send(Attachment(path: folder.path + "/later.jpg"))
            let copies = atOnce + [later]
            #expect(copies.allSatisfy { $0.transform.recompressed })
            #expect(copies.filter { $0.transform.reused == true }.count == 3, "\(copies.map(\.transform.reused))")
            #expect(later.transform.reused == true)
            #expect(distinct.transform.reused == nil)
            #expect(Set(copies.compactMap { $0.seal.key?.base64 }).count == 4, "a copy shared a key")
            var openedCopies: [[UInt8]] = []
            for receipt in copies + [distinct] {
                let (stored, _) = try await server.get("/files/\(try #require(receipt.fileId))")
                let plain = try opened(stored, receipt)
                #expect(Int64(plain.count) == receipt.transform.byteCount)
                if receipt.path != other { openedCopies.append(plain) }
            }
            #expect(Set(openedCopies).count == 1, "the copies' recompressed bytes differ")
            #expect(openedCopies.first?.count ?? 0 < photo.count)
        }
    }

    @Test("with sharesTransforms off, every copy is transformed on its own")
    func sharingOff() async throws {
        let folder = try ScratchFolder(prefix: "attache-shared-transform-off")
        defer { folder.remove() }
        let photo = try Data(contentsOf: Self.samples.appendingPathComponent("photo.jpg"))
        for name in ["a.jpg", "b.jpg"] { try photo.write(to: URL(fileURLWithPath: folder.path + "/" + name)) }
        try await LiveServer.with { server in
            let pipeline = try server.pipeline { $0.sharesTransforms = false }
            for name in ["a.jpg", "b.jpg"] {
                let receipt = try await pipeline.send(Attachment(path: folder.path + "/" + name))
                #expect(receipt.transform.recompressed && receipt.transform.reused == nil)
            }
        }
    }

    @Test("attache batch: 6 copies of a sticker and a photo, the sticker transformed once, every copy stored; --dedup off")
    func batchTakesTheSharedTransform() async throws {
        let folder = try ScratchFolder(prefix: "attache-shared-batch")
        defer { folder.remove() }
        let sticker = try Data(contentsOf: Self.samples.appendingPathComponent("sticker.webp"))
        try FileManager.default.createDirectory(atPath: folder.path + "/files", withIntermediateDirectories: true)
        for index in 0..<6 { try sticker.write(to: URL(fileURLWithPath: folder.path + "/files/s\(index).webp")) }
        try Data(contentsOf: Self.samples.appendingPathComponent("photo.jpg")).write(to: URL(fileURLWithPath: folder.path + "/files/photo.jpg"))
        try await LiveServer.with { server in
            let result = await attache([
                "batch", folder.path + "/files", "--url", server.uploadURL, "--journal", folder.path + "/journal.sqlite", "--json",
            ])
            #expect(result.status == 0, "\(result.all.suffix(2000))")
            let receipts = result.standardOutput.split(separator: "\n").compactMap { line -> [String: Any]? in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    object["event"] as? String == "succeeded"
                else { return nil }
                return object["receipt"] as? [String: Any]
            }
            #expect(receipts.count == 7)
            let reused = receipts.filter { (($0["transform"] as? [String: Any])?["reused"] as? Bool) == true }
            #expect(reused.count == 5, "\(receipts.map { ($0["transform"] as? [String: Any])?["reused"] ?? "-" })")
            #expect(reused.allSatisfy { ($0["path"] as? String)?.hasSuffix(".webp") == true })
            let off = await attache([
                "batch", folder.path + "/files", "--url", server.uploadURL, "--journal", folder.path + "/off.sqlite", "--json",
                "--dedup", "off",
            ])
            #expect(off.status == 0, "\(off.all.suffix(2000))")
            #expect(!off.standardOutput.contains("\"reused\":true"), "a copy took another's transform with --dedup off")
        }
    }
}
