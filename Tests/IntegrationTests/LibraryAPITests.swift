import Attache
import AttacheBatch
import Foundation
import AttacheTestSupport
import Testing

/// The library as a backend embeds it: inputs from memory and streams, per-send options, receipts that
/// lead back to the file, typed errors. Every test runs against the live reference server.
@Suite("Library API")
struct LibraryAPITests {
    static let pdf = PipelineIntegrationTests.sample("document.pdf")

    /// A sealed pipeline (the default: a fresh stream-gcm key per file) for `server`.
    static func sealed(_ server: LiveServer, configure: (inout PipelineConfiguration) -> Void = { _ in }) throws
        -> AttachmentPipeline
    {
        try server.pipeline {
            $0.seal = SealConfiguration()
            configure(&$0)
        }
    }

    /// Chunks of `bytes`, `size` each, as an async sequence.
    static func chunks(_ bytes: [UInt8], size: Int) -> AsyncStream<[UInt8]> {
        AsyncStream { continuation in
            var offset = 0
            while offset < bytes.count {
                continuation.yield(Array(bytes[offset..<min(offset + size, bytes.count)]))
                offset += size
            }
            continuation.finish()
        }
    }

    static func scratch() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attache-lib-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("bytes in memory go out sealed, and download(receipt:) brings back the same bytes")
    func bytesInMemoryRoundTrip() async throws {
        let original = Array(try Data(contentsOf: URL(fileURLWithPath: Self.pdf)))
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await LiveServer.with { server in
            let receipt = try await Self.sealed(server).send(Attachment(bytes: original, filename: "report.pdf"))
            #expect(receipt.path == "report.pdf")
            #expect(receipt.filename == "report.pdf")
            #expect(receipt.mimeType == "application/pdf")
            #expect(receipt.seal.scheme == .streamGCM)
            #expect(receipt.seal.key != nil)
            // The receipt's URL is absolute: the downloader takes it as it is.
            let url = try #require(receipt.url)
            #expect(url.hasPrefix("http://127.0.0.1:\(server.port)/"), "\(url)")

            let out = directory + "/again.pdf"
            let download = try await Downloader().download(receipt: receipt, to: out)
            #expect(download.unsealed)
            #expect(Array(try Data(contentsOf: URL(fileURLWithPath: out))) == original)
        }
    }

    @Test("an image in memory is recompressed like the same file on disk")
    func imageInMemoryIsTransformed() async throws {
        let photo = Array(try Data(contentsOf: URL(fileURLWithPath: PipelineIntegrationTests.sample("photo.jpg"))))
        try await LiveServer.with { server in
            // Each send transforms on its own: with sharing on, the second would take the first's output.
            let pipeline = try server.pipeline { $0.sharesTransforms = false }
            let fromMemory = try await pipeline.send(Attachment(bytes: photo, filename: "photo.jpg"))
            let fromDisk = try await pipeline.send(Attachment(path: PipelineIntegrationTests.sample("photo.jpg")))
            #expect(fromMemory.transform.recompressed)
            #expect(fromMemory.transform == fromDisk.transform)
            #expect(fromMemory.kind == .image)
            // Typed thumbnails: names, sizes and the server's id for each part.
            let thumbnails = try #require(fromMemory.thumbnails)
            #expect(thumbnails.map(\.name) == ["thumbnail", "thumbnailTiny"])
            for thumbnail in thumbnails {
                #expect(thumbnail.placement == .inline)
                #expect(max(thumbnail.width, thumbnail.height) <= 320)
                #expect(thumbnail.byteCount > 0)
                let fileId = try #require(thumbnail.fileId, "\(thumbnail.name) has no id")
                let (stored, _) = try await server.get("/files/\(fileId)")
                #expect(Int64(stored.count) == thumbnail.byteCount, "plain pipeline: the part is the thumbnail itself")
            }
        }
    }

    @Test("a stream is sent whole, kept in memory when small and spooled when large", arguments: [100_000, 9_000_000])
    func streamRoundTrip(size: Int) async throws {
        let bytes = randomBytes(size)
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await LiveServer.with { server in
            let attachment = Attachment(
                stream: Self.chunks(bytes, size: 64 * 1024), filename: "blob-\(size).bin", byteCount: Int64(size))
            let receipt = try await Self.sealed(server).send(attachment)
            #expect(receipt.originalByteCount == Int64(size))
            let out = directory + "/blob-\(size).bin"
            _ = try await Downloader().download(receipt: receipt, to: out)
            #expect(Array(try Data(contentsOf: URL(fileURLWithPath: out))) == bytes)
            // Nothing of a spool is left behind.
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())
                .filter { $0.hasPrefix("attache-") && !$0.hasPrefix("attache-it-") && !$0.hasPrefix("attache-lib-") }
            for name in leftovers {
                let inside = (try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory() + "/" + name)) ?? []
                #expect(!inside.contains("blob-\(size).bin"), "a spool file was left in \(name)")
            }
        }
    }

    @Test("a stream shorter or longer than it declared fails before anything is uploaded", arguments: [-1, 1])
    func streamWithWrongLength(delta: Int) async throws {
        let bytes = randomBytes(50_000)
        try await LiveServer.with { server in
            let attachment = Attachment(
                stream: Self.chunks(bytes, size: 8192), filename: "blob.bin", byteCount: Int64(bytes.count + delta))
            let error = await #expect(throws: AttacheError.self) { try await server.pipeline().send(attachment) }
            #expect(error?.code == .corruptInput)
            #expect(error?.stage == .read)
            #expect(error?.file == "blob.bin")
            let stats = try await server.stats()
            #expect(stats.uploads == 0)
        }
    }

    @Test("per-send fields replace the configuration's, and per-send seal overrides the pipeline's")
    func perSendFieldsAndSeal() async throws {
        try await LiveServer.with { server in
            let pipeline = try Self.sealed(server) {
                $0.fields = [UploadField(name: "tenant", value: "acme"), UploadField(name: "chatId", value: "1")]
            }
            var options = SendOptions()
            options.fields = [UploadField(name: "chatId", value: "42")]
            options.seal = SealConfiguration.none
            let receipt = try await pipeline.send(Attachment(path: Self.pdf), options: options)
            #expect(receipt.server["fields"]?["tenant"]?.stringValue == "acme")
            #expect(receipt.server["fields"]?["chatId"]?.stringValue == "42")
            #expect(receipt.seal.scheme == .none)
            #expect(receipt.seal.key == nil)
            // The pipeline itself is unchanged.
            let plain = try await pipeline.send(Attachment(path: Self.pdf))
            #expect(plain.server["fields"]?["chatId"]?.stringValue == "1")
            #expect(plain.seal.scheme == .streamGCM)
        }
    }

    @Test("per-send headers reach the server; a rejection is a typed accessor")
    func perSendHeadersAndRejection() async throws {
        try await LiveServer.with { server in
            let pipeline = try server.pipeline()
            var options = SendOptions()
            // The reference server injects the fault this header names into this upload only.
            options.headers = [HeaderField(name: "X-Attache-Fault", value: "business:code=7001:message=quota")]
            let error = await #expect(throws: AttacheError.self) {
                try await pipeline.send(Attachment(path: Self.pdf), options: options)
            }
            let rejection = try #require(error?.rejection, "\(String(describing: error))")
            #expect(rejection.businessCode == "7001")
            #expect(rejection.status == 200)
            #expect(error?.rootCode == error?.code)
            // Without the header the same pipeline stores the file.
            _ = try await pipeline.send(Attachment(path: Self.pdf))
        }
    }

    @Test("a send past its time limit is timed-out, naming the stage")
    func timeLimit() async throws {
        try await LiveServer.with { server in
            var options = SendOptions()
            options.headers = [HeaderField(name: "X-Attache-Fault", value: "stall:seconds=300")]
            options.timeLimit = .milliseconds(700)
            let clock = ContinuousClock()
            let start = clock.now
            let error = await #expect(throws: AttacheError.self) {
                try await server.pipeline(attempts: 1, stallTimeout: .seconds(300)).send(Attachment(path: Self.pdf), options: options)
            }
            #expect(error?.code == .timedOut)
            #expect(error?.stage == .upload)
            #expect(error?.file == Self.pdf)
            // Not a timed assertion of speed: the stall and the stall timeout are 300 s, so ending well
            // within that (half of it: a loaded CI machine once took 71 s to make the pipeline, send and
            // cancel) shows the limit cancelled the send.
            #expect(clock.now - start < .seconds(150))
        }
    }

    @Test("keys never show in descriptions; receipts and errors round-trip through JSON")
    func keysAndCodable() async throws {
        try await LiveServer.with { server in
            let receipt = try await Self.sealed(server).send(Attachment(path: Self.pdf))
            let key = try #require(receipt.seal.key)
            let text = key.base64
            #expect(text.count == 44)
            #expect(!String(describing: receipt).contains(text))
            #expect(!String(reflecting: receipt).contains(text))
            #expect(!"\(key)".contains(text))
            #expect(try AttachmentKey(base64: text) == key)

            let data = try JSONEncoder().encode(receipt)
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            #expect((object?["seal"] as? [String: Any])?["key"] as? String == text, "a receipt's JSON carries the key")
            let decoded = try JSONDecoder().decode(UploadReceipt.self, from: data)
            #expect(decoded == receipt)

            let error = AttacheError(
                .retriesExhausted, stage: .upload, "gave up", file: "a.pdf",
                cause: AttacheError(.connectionLost, stage: .upload, "reset"))
            #expect(error.rootCode == .connectionLost)
            let again = try JSONDecoder().decode(AttacheError.self, from: try JSONEncoder().encode(error))
            #expect(again.code == .retriesExhausted)
            #expect(again.rootCode == .connectionLost)
            #expect(again.file == "a.pdf")
        }
        #expect(throws: AttacheError.self) { try AttachmentKey(base64: "not a key") }
    }
}
