import Foundation
import AttacheTestSupport
import Testing

/// The queue row keeps a multipart upload to a bucket: a worker SIGKILLed mid-file leaves the upload id and
/// the parts the store confirmed in `multipart_upload`, and the next worker to claim the row continues that
/// upload (not a newer one under the same key), then clears the column.
@Suite(
    "S3 queue resume", .serialized,
    .enabled(if: PostgresCluster.unavailableReason == nil, "PostgreSQL is not installed (Debian package postgresql; run Scripts/bootstrap.sh)"),
    .sharedPostgresCluster)
struct S3QueueResumeTests {
    @Test("a worker killed mid-multipart: the next claim continues the upload id kept in the queue row")
    func killedWorkerContinuesRecordedUpload() async throws {
        let cluster = try PostgresCluster.current()
        let url = try await cluster.createDatabase()
        try await S3Emulator.moto.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-queue")
            defer { folder.remove() }
            let proxy = try await S3MultipartTests.Proxy(emulator)
            defer { proxy.server.stop() }
            try FileManager.default.createDirectory(atPath: folder.path + "/files", withIntermediateDirectories: true)
            let original = randomBytes(40 << 20)
            try Data(original).write(to: URL(fileURLWithPath: folder.path + "/files/clip.bin"))
            let environment = emulator.environment(cluster.environment)
            func attache(_ arguments: [String]) async throws -> CommandResult {
                try await runCommand(try attacheBinary(), arguments, environment: environment)
            }
            for step in [["queue", "migrate", "--queue", url], ["enqueue", folder.path + "/files", "--queue", url]] {
                let result = try await attache(step)
                try #require(result.status == 0, "\(result.all)")
            }
            let worker =
                ["worker", "--queue", url, "--url", "s3://\(emulator.bucket)/q/", "--s3-endpoint", proxy.endpoint, "--lease", "2",
                 "--drain", "--retry-delay", "0.2", "--parts-in-flight", "1", "--on-give-up", "keep"]
                + S3MultipartTests.partOptions
            let (first, killed) = try await S3MultipartTests().killWhenSent(at: 15 << 20, proxy: proxy) {
                try ChildProcess(executable: try attacheBinary(), arguments: worker, environment: environment)
            }
            try #require(killed, "the worker ended early: \(first.standardError)")

            // The row names the store's upload and the parts it confirmed.
            let row = try await cluster.scalar("SELECT attempts || ' ' || lease_token FROM attache_file", in: url)
            let recorded = try await cluster.scalar("SELECT multipart_upload FROM attache_file", in: url)
            try #require(!recorded.isEmpty, "no multipart record (attempts, token: \(row)): \(first.standardError.suffix(3000))")
            #expect(row.hasPrefix("1 "), "the row was claimed again while its worker was sending it: \(row)")
            let record = try jsonObject(recorded)
            let key = try #require(record["key"] as? String)
            let uploadId = try #require(record["uploadId"] as? String)
            let parts = try #require(record["parts"] as? [[String: Any]])
            #expect(!parts.isEmpty && parts.allSatisfy { ($0["etag"] as? String)?.isEmpty == false }, "\(record)")
            // A newer upload under the same key, which listing the store's uploads would pick; then past the lease.
            try await Task.sleep(for: .seconds(1.5))
            let newer = try await emulator.boto(["create-upload", emulator.bucket, key]).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(newer != uploadId)
            try await Task.sleep(for: .seconds(1.5))

            // -v: the second worker's requests (ListParts of the recorded upload, or a listing) are in the
            // failure message.
            let second = try await attache(worker + ["-v"])
            #expect(second.status == 0, "\(second.all)")
            #expect(try await cluster.scalar("SELECT state FROM attache_file", in: url) == "done")
            let resumed = try await cluster.scalar("SELECT receipt->'object'->>'resumedBytes' FROM attache_file", in: url)
            #expect((Int(resumed) ?? 0) >= 10 << 20, "resumed \(resumed): \(record)\n\(second.all.suffix(6000))")
            #expect(try await cluster.scalar("SELECT multipart_upload IS NULL FROM attache_file", in: url) == "t")
            // The recorded upload was completed; the newer one is left as it was.
            let pending = try JSONSerialization.jsonObject(with: Data(try await emulator.boto(["upload-ids", emulator.bucket]).utf8))
            #expect(pending as? [[String]] == [[key, newer]], "the recorded upload \(uploadId) was not the one completed")
            let sealKey = try await cluster.scalar("SELECT receipt->'seal'->>'key' FROM attache_file", in: url)
            #expect(try await S3MultipartTests().openedEqual(try await emulator.object(key), key: sealKey, original: original, in: folder))
        }
    }
}
