import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// The receipt's JSON (`attache upload --json`, the batch journal, the queue) with its one thumbnail type:
/// what it writes, and that receipts written before still read.
@Suite("UploadReceipt coding")
struct UploadReceiptCodingTests {
    static func receipt() -> UploadReceipt {
        UploadReceipt(
            path: "photo.jpg", filename: "photo.jpg", kind: .image, mimeType: "image/jpeg", fileId: "f1",
            url: "http://h/files/f1", originalByteCount: 900, sentByteCount: 500, bodyByteCount: 800,
            idempotencyKey: "k", attempts: 1, replayed: false, seconds: 0.5, server: .object(["fileId": .string("f1")]),
            seal: SealReceipt(scheme: .none, transferEncoding: .binary, plaintextByteCount: 500),
            detection: MIMEDetector().detect(prefix: [0xFF, 0xD8, 0xFF, 0xE0], filename: "photo.jpg"),
            transform: TransformReceipt(recompressed: true, byteCount: 500, width: 1280, height: 960),
            thumbnails: [
                ThumbnailReceipt(
                    name: "thumbnail", filename: "photo.thumbnail.jpg", mimeType: "image/jpeg", width: 320, height: 240,
                    byteCount: 3000, placement: .separate, fileId: "f2", url: "http://h/files/f2", sentByteCount: 3000,
                    idempotencyKey: "k.thumbnail", attempts: 2, replayed: false,
                    server: .object(["fileId": .string("f2")])),
                ThumbnailReceipt(
                    name: "thumbnailTiny", filename: "photo.thumbnail-tiny.jpg", mimeType: "image/jpeg", width: 40,
                    height: 30, byteCount: 400, placement: .separate, fileId: "f3", sentByteCount: 400,
                    idempotencyKey: "k.thumbnailTiny", attempts: 1, replayed: true, server: .object([:])),
            ])
    }

    static func json(_ receipt: UploadReceipt) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(receipt)) as? [String: Any])
    }

    static func decode(_ object: [String: Any]) throws -> UploadReceipt {
        try JSONDecoder().decode(UploadReceipt.self, from: JSONSerialization.data(withJSONObject: object))
    }

    @Test("separate thumbnails are written under thumbnailUploads too, with the fields readers used")
    func writesThumbnailUploads() throws {
        let original = Self.receipt()
        let object = try Self.json(original)
        let uploads = try #require(object["thumbnailUploads"] as? [[String: Any]])
        #expect(uploads.map { $0["idempotencyKey"] as? String } == ["k.thumbnail", "k.thumbnailTiny"])
        #expect(uploads.map { $0["sentByteCount"] as? Int } == [3000, 400])
        #expect(uploads.map { $0["filename"] as? String } == ["photo.thumbnail.jpg", "photo.thumbnail-tiny.jpg"])
        #expect((object["thumbnails"] as? [[String: Any]])?.map { $0["placement"] as? String } == ["separate", "separate"])
        #expect(try Self.decode(object) == original)
    }

    @Test("an inline thumbnail is written without request facts, and there is no thumbnailUploads")
    func inlineHasNoRequestFacts() throws {
        var receipt = Self.receipt()
        receipt.thumbnails = [
            ThumbnailReceipt(
                name: "thumbnail", filename: "thumbnail.jpg", mimeType: "image/jpeg", width: 320, height: 240,
                byteCount: 3000, placement: .inline, fileId: "p1")
        ]
        let object = try Self.json(receipt)
        #expect(object["thumbnailUploads"] == nil)
        let entry = try #require((object["thumbnails"] as? [[String: Any]])?.first)
        #expect(Set(entry.keys) == ["name", "filename", "mimeType", "width", "height", "byteCount", "placement", "fileId"])
        #expect(receipt.thumbnailUploads == nil)
        #expect(try Self.decode(object) == receipt)
    }

    @Test("a receipt written with two thumbnail types reads into one")
    func readsTheEarlierTwoTypes() throws {
        let original = Self.receipt()
        var object = try Self.json(original)
        // Earlier: `thumbnails` held name, type, size, placement, id and URL only; `thumbnailUploads` the
        // request facts, without size or placement.
        let requestKeys = ["sentByteCount", "digest", "idempotencyKey", "attempts", "replayed", "server"]
        object["thumbnails"] = (object["thumbnails"] as? [[String: Any]])?.map { $0.filter { !requestKeys.contains($0.key) } }
        object["thumbnailUploads"] = (object["thumbnailUploads"] as? [[String: Any]])?.map {
            $0.filter { !["byteCount", "placement"].contains($0.key) }
        }
        #expect(try Self.decode(object) == original)
        // Before `thumbnails` existed: the uploads are the thumbnails, their size the size sent.
        object["thumbnails"] = nil
        let oldest = try Self.decode(object)
        #expect(oldest.thumbnails?.map(\.placement) == [.separate, .separate])
        #expect(oldest.thumbnails?.map(\.byteCount) == [3000, 400])
        #expect(oldest.thumbnailUploads?.map(\.idempotencyKey) == ["k.thumbnail", "k.thumbnailTiny"])
    }
}
