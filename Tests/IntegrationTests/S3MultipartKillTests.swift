import Foundation
import AttacheTestSupport
import Testing

/// SIGKILL at 30 %, 60 % and 90 % of a 1 GiB multipart upload, 4 parts in flight, on moto and MiniStack:
/// a suite of its own, so that its two long runs go beside the other multipart tests
/// (``S3MultipartTests``, whose proxy and helpers it uses) rather than after them.
@Suite("S3 multipart uploads, killed and resumed", .serialized)
struct S3MultipartKillTests {
    typealias Proxy = S3MultipartTests.Proxy
    static let partOptions = S3MultipartTests.partOptions
    private let base = S3MultipartTests()

    func attache(_ arguments: [String], _ emulator: S3Emulator.Running) async throws -> CommandResult {
        try await base.attache(arguments, emulator)
    }

    func pendingUploads(_ emulator: S3Emulator.Running) async throws -> [String] {
        try await base.pendingUploads(emulator)
    }

    /// The store's unfinished uploads, as their `UploadId`s.
    func pendingUploadIDs(_ emulator: S3Emulator.Running) async throws -> [String] {
        let pairs = try JSONSerialization.jsonObject(with: Data(try await emulator.boto(["upload-ids", emulator.bucket]).utf8))
        return (pairs as? [[String]] ?? []).compactMap(\.last)
    }

    func killWhenSent(
        at bytes: Int64, proxy: Proxy, start: () throws -> ChildProcess
    ) async throws -> (child: ChildProcess, killed: Bool) {
        try await base.killWhenSent(at: bytes, proxy: proxy, start: start)
    }

    @Test("1 GiB, 4 parts in flight, killed at 30 %, 60 % and 90 %: each rerun continues with ListParts; at most 1.1× the bytes are sent",
          arguments: S3Emulator.allCases)
    func killedAndResumed(_ kind: S3Emulator) async throws {
        try await kind.run { emulator in
            let clock = ContinuousClock()
            let started = clock.now
            let folder = try ScratchFolder(prefix: "attache-s3-kill")
            defer { folder.remove() }
            let proxy = try await Proxy(emulator)
            defer { proxy.server.stop() }
            let size: Int64 = 1 << 30
            let file = folder.path + "/movie.bin"
            try writeSeededFile(file, count: size, seed: 29)
            let originalHash = try await sha256Hex(ofFile: file)
            let material = folder.path + "/material"
            let arguments =
                ["upload", file, "--url", "s3://\(emulator.bucket)/resume/", "--s3-endpoint", proxy.endpoint, "--json", "--no-progress",
                 "--idempotency-key", "movie-\(kind)", "--seal-material-dir", material,
                 "--parts-in-flight", "4", "--on-give-up", "keep"] + Self.partOptions
            let sealedSize = size + 60 + (size + 65535) / 65536 * 16
            var uploadIDs: [String] = []
            for share in [0.3, 0.6, 0.9] {
                let (child, killed) = try await killWhenSent(at: Int64(share * Double(sealedSize)), proxy: proxy) {
                    try ChildProcess(executable: try attacheBinary(), arguments: arguments, environment: emulator.environment())
                }
                try #require(killed, "the run ended before \(Int(share * 100)) %: \(child.standardError)\n\(emulator.log())")
                // One upload, the same one continued: a rerun that started over would leave a second, or
                // (had it aborted the first) one with another id.
                let pending = try await pendingUploadIDs(emulator)
                #expect(pending.count == 1, "\(pending)")
                uploadIDs += pending
                // The upload id and the parts sent are journalled beside the seal material.
                let records = try FileManager.default.contentsOfDirectory(atPath: material).filter { $0.hasSuffix(".multipart") }
                #expect(records.count == 1, "\(records)")
            }
            #expect(uploadIDs.count == 3 && Set(uploadIDs).count == 1, "one upload continued by every rerun: \(uploadIDs)")
            let result = try await attache(arguments, emulator)
            #expect(result.status == 0, "\(result.all)\n\(emulator.log())")
            let receipt = try jsonObject(result.standardOutput)
            let object = try #require(receipt["object"] as? [String: Any])
            #expect((object["resumedBytes"] as? Int ?? 0) > 0)
            let parts = try #require(object["parts"] as? Int)
            #expect(parts == Int((sealedSize + (5 << 20) - 1) / (5 << 20)))
            // The store took a CRC-32C with every part and confirmed the object's composite.
            let checksum = object["checksum"] as? String ?? ""
            #expect(checksum.hasPrefix("crc32c:") && checksum.hasSuffix("-\(parts)"), "\(checksum)")
            let total = try proxy.read().bytes
            #expect(Double(total) <= 1.1 * Double(sealedSize), "sent \(total) bytes for \(sealedSize)")
            // The object, read back with boto3 to a file, is the sealed bytes: its size, and it opens to the source.
            let stored = folder.path + "/stored.bin"
            try await emulator.boto(["get", emulator.bucket, try #require(object["key"] as? String), stored])
            let storedSize = try #require(try FileManager.default.attributesOfItem(atPath: stored)[.size] as? Int)
            #expect(Int64(storedSize) == sealedSize)
            let sealKey = try #require((receipt["seal"] as? [String: Any])?["key"] as? String)
            let keyFile = try folder.write("key", sealKey)
            let opened = folder.path + "/opened.bin"
            let decrypted = try await runCommand(try attacheBinary(), ["decrypt", stored, "-o", opened, "--key-file", keyFile])
            try #require(decrypted.status == 0, "\(decrypted.all)")
            #expect(try await sha256Hex(ofFile: opened) == originalHash)
            #expect(try await pendingUploads(emulator).isEmpty)
            // Its material and journalled upload are forgotten once the receipt is out.
            let left = try FileManager.default.contentsOfDirectory(atPath: material).filter { $0.hasSuffix(".multipart") }
            #expect(left.isEmpty, "\(left)")
            print("S3 kill test (\(kind)): 1 GiB, \(parts) parts, \(total) body bytes sent, \(clock.now - started)")
        }
    }
}
