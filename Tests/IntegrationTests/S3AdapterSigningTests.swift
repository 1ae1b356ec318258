import Foundation
import AttacheTestSupport
import Synchronization
import Testing
@testable import Attache
@testable import AttacheCore

/// Object-store requests signed by the client's adapters, as a backend without the store's keys sends
/// them: a `RequestAdapter` asks a signing service for a presigned URL (boto3's `generate_presigned_url`,
/// with an IAM user's keys, in an `s3_objects.py` interpreter of its own), and a `RequestRetrier` sends a
/// request again when the store answers `403` "Request has expired". The library runs in this process
/// (`AttachmentPipeline(configuration:client:)`, the default seal: a fresh key per file).
///
/// Against MiniStack only: it checks each presigned URL's signature and its expiry (`X-Amz-Date` plus
/// `X-Amz-Expires`, before the signature), and refuses an unsigned request (`403 AccessDenied`). moto 5.2
/// takes an expired URL and any signature, so it would prove nothing here. What the bucket holds is read
/// with boto3 and opened with the receipt's key.
@Suite("S3 requests signed by the client's adapters", .serialized)
struct S3AdapterSigningTests {
    /// A signing service: presigns requests to the test's bucket as the IAM user the store knows, the one
    /// place that holds keys.
    struct SigningService: Sendable {
        let boto3: BotoSession
        let bucket: String

        init(_ emulator: S3Emulator.Running) throws {
            boto3 = try BotoSession(
                python: emulator.python, tool: emulator.tool, endpoint: emulator.endpoint, environment: emulator.uploader)
            bucket = emulator.bucket
        }

        /// The presigned URL of `method` on `key` (`""` for the bucket) with the operation's `query`, signing
        /// the `headers` S3 has parameters for; valid for `lifetime` seconds from `signedAgo` seconds ago.
        func presign(
            _ method: String, key: String, query: [(String, String)] = [], headers: [HeaderField] = [], lifetime: Int = 300,
            signedAgo: Int = 0
        ) async throws -> String {
            let arguments =
                ["presign", method, bucket, key] + query.flatMap { ["--query", "\($0.0)=\($0.1)"] }
                + headers.flatMap { ["--header", "\($0.name)=\($0.value)"] }
                + ["--expires-in", String(lifetime), "--signed-ago", String(signedAgo)]
            let result = try await boto3.run(arguments)
            guard result.status == 0 else { throw TestFailure("s3_objects.py presign: \(result.standardError)") }
            return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func stop() { boto3.stop() }
    }

    /// Signs every request to the test's bucket before each attempt, through the signing service: a
    /// request to the object's own URL (an endpoint signed by the adapters) always; an URL presigned
    /// already when it expires within `margin` by this host's clock, or when the store refused it as
    /// expired (``ExpiredURLRetrier``).
    final class Presigner: RequestAdapter {
        /// One request the service signed.
        struct Signed: Sendable {
            var method: String
            var key: String
            /// The operation's query (`uploads`, `partNumber`, `uploadId`, ...).
            var query: [String: String]
            /// Whether the service made it expired already.
            var stale: Bool
            /// The URL sent.
            var url: String

            var part: Int? { query["partNumber"].flatMap { Int($0) } }
        }

        let service: SigningService
        let endpoint: String
        let margin: TimeInterval = 20
        /// This host's clock.
        let clock: @Sendable () -> Date
        /// Whether the service makes the first URL of a request already expired (one it kept too long).
        let makesStale: @Sendable (_ method: String, _ query: [String: String]) -> Bool
        /// What the service signed, in order.
        let signed = Mutex<[Signed]>([])
        /// Presigned URLs sent as they were given.
        let passed = Mutex<[String]>([])
        private let refused = Mutex<Set<String>>([])

        init(
            service: SigningService, endpoint: String, clock: @escaping @Sendable () -> Date = { Date() },
            makesStale: @escaping @Sendable (_ method: String, _ query: [String: String]) -> Bool = { _, _ in false }
        ) {
            self.service = service
            self.endpoint = endpoint
            self.clock = clock
            self.makesStale = makesStale
        }

        /// The store refused `url` as expired: it is signed again before the next attempt.
        func refusedAsExpired(_ url: String) { _ = refused.withLock { $0.insert(url) } }

        func adapt(_ request: ClientRequest) async throws -> ClientRequest {
            guard request.url.hasPrefix(endpoint + "/"), let components = URLComponents(string: request.url) else { return request }
            // Path style: /BUCKET/KEY, or /BUCKET for the bucket.
            let segments = components.path.dropFirst().split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard segments.first.map(String.init) == service.bucket else { return request }
            let key = segments.count > 1 ? String(segments[1]) : ""
            let items = components.queryItems ?? []
            let operation = items.filter { !$0.name.lowercased().hasPrefix("x-amz-") }
            if operation.count < items.count, !refused.withLock({ $0.contains(request.url) }),
                let expiry = Self.expiry(of: items), expiry.timeIntervalSince(clock()) > margin
            {
                passed.withLock { $0.append(request.url) }
                return request
            }
            let method = request.method.rawValue
            let query = Dictionary(operation.map { ($0.name, $0.value ?? "") }) { first, _ in first }
            let stale =
                makesStale(method, query) && !signed.withLock { $0.contains { $0.method == method && $0.query == query } }
            let url = try await service.presign(
                method, key: key, query: operation.map { ($0.name, $0.value ?? "") }, headers: request.headers,
                lifetime: stale ? 60 : 300, signedAgo: stale ? 120 : 0)
            signed.withLock { $0.append(Signed(method: method, key: key, query: query, stale: stale, url: url)) }
            var presigned = request
            presigned.url = url
            return presigned
        }

        /// When a presigned URL expires: `X-Amz-Date` plus `X-Amz-Expires`.
        static func expiry(of items: [URLQueryItem]) -> Date? {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
            guard let date = items.first(where: { $0.name == "X-Amz-Date" })?.value.flatMap(formatter.date(from:)),
                let lifetime = items.first(where: { $0.name == "X-Amz-Expires" })?.value.flatMap(TimeInterval.init)
            else { return nil }
            return date + lifetime
        }
    }

    /// Sends a request again when the store refused it because its presigned URL expired, after telling the
    /// presigner, which signs it anew; every other answer is left to the client's rule.
    final class ExpiredURLRetrier: RequestRetrier {
        let presigner: Presigner
        /// The URLs the store refused as expired.
        let refusals = Mutex<[String]>([])

        init(_ presigner: Presigner) { self.presigner = presigner }

        func retry(_ request: ClientRequest, response: ServerResponse?, error: AttacheError?, attempt: Int) async -> RetryDecision {
            guard let response, response.status == 403,
                String(decoding: response.body, as: UTF8.self).contains("<Message>Request has expired</Message>")
            else { return .useDefault }
            refusals.withLock { $0.append(request.url) }
            presigner.refusedAsExpired(request.url)
            return .retry
        }
    }

    /// `stored` opened with the receipt's seal.
    func opened(_ stored: [UInt8], _ receipt: UploadReceipt) throws -> [UInt8] {
        let key = try #require(receipt.seal.key)
        return try Unsealer(scheme: receipt.seal.scheme, key: key, transferEncoding: receipt.seal.transferEncoding)
            .unseal(DataSource(stored)).readToEnd()
    }

    @Test("a presigned PUT that the store refuses as expired is presigned again by the adapter, and stored")
    func expiredPresignedPut() async throws {
        try await S3Emulator.ministack.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-resign")
            defer { folder.remove() }
            let service = try SigningService(emulator)
            defer { service.stop() }
            let key = "inbox/late.bin"
            // Signed 90 s ago for 60 s: the store finds it expired. This host's clock runs two minutes behind
            // the store's, so here the URL seems good for another 90 s, past the adapter's margin, and the
            // first attempt goes out with it.
            let stale = try await service.presign("PUT", key: key, lifetime: 60, signedAgo: 90)
            let presigner = Presigner(service: service, endpoint: emulator.endpoint, clock: { Date() - 120 })
            let retrier = ExpiredURLRetrier(presigner)
            let client = AttacheClient(interceptors: ClientInterceptors(adapters: [presigner], retriers: [retrier]))
            var configuration = PipelineConfiguration(url: stale)
            configuration.method = .put
            let original = randomBytes(700_000)
            let receipt = try await AttachmentPipeline(configuration: configuration, client: client)
                .send(Attachment(path: try folder.write("late.bin", original)))

            // The store refused the first URL as expired; the adapter had the service sign the PUT again,
            // with the Content-Type it carries, and the second attempt went with that URL.
            #expect(presigner.passed.withLock { $0 } == [stale])
            #expect(retrier.refusals.withLock { $0 } == [stale])
            let signed = presigner.signed.withLock { $0 }
            #expect(signed.map(\.method) == ["PUT"])
            #expect(signed.first?.key == key)
            #expect(signed.first?.url.contains("content-type") == true, "\(signed)")
            #expect(receipt.attempts == 2)
            let stored = try await emulator.object(key)
            #expect(Int64(stored.count) == receipt.sentByteCount)
            #expect(try opened(stored, receipt) == original)
        }
    }

    @Test("a multipart upload without credentials: the adapter presigns every request, and signs a part refused as expired again")
    func multipartSignedByAdapters() async throws {
        try await S3Emulator.ministack.run { emulator in
            let folder = try ScratchFolder(prefix: "attache-s3-adapters")
            defer { folder.remove() }
            let service = try SigningService(emulator)
            defer { service.stop() }
            // The service hands out part 2's first URL expired already.
            let presigner = Presigner(
                service: service, endpoint: emulator.endpoint,
                makesStale: { method, query in method == "PUT" && query["partNumber"] == "2" })
            let retrier = ExpiredURLRetrier(presigner)
            let client = AttacheClient(interceptors: ClientInterceptors(adapters: [presigner], retriers: [retrier]))
            var store = ObjectStoreEndpoint(
                location: S3Location(bucket: emulator.bucket, prefix: "signed/"), signing: .adapters, endpointURL: emulator.endpoint,
                addressing: .path)
            store.multipart.threshold = 8 << 20
            store.multipart.partSize = 5 << 20
            var configuration = PipelineConfiguration(url: "s3://\(emulator.bucket)/signed/")
            configuration.objectStore = store
            let original = randomBytes(13 << 20)
            let receipt = try await AttachmentPipeline(configuration: configuration, client: client)
                .send(Attachment(path: try folder.write("clip.bin", original)))
            let object = try #require(receipt.object)
            #expect(object.parts == 3)
            let key = try #require(object.key)

            // Every request went signed by the service, none as it was: the store refuses an unsigned one.
            let signed = presigner.signed.withLock { $0 }
            #expect(presigner.passed.withLock { $0 }.isEmpty)
            #expect(signed.allSatisfy { $0.url.contains("X-Amz-Signature=") && ($0.key == key || $0.key.isEmpty) }, "\(signed)")
            #expect(signed.filter { $0.method == "POST" && $0.query["uploads"] != nil }.count == 1, "\(signed)")
            #expect(signed.filter { $0.method == "POST" && $0.query["uploadId"] != nil }.count == 1, "\(signed)")
            // Each part once, part 2 twice: its first URL was stale, and its retry was signed anew.
            #expect(signed.compactMap(\.part).sorted() == [1, 2, 2, 3], "\(signed)")
            #expect(signed.filter(\.stale).map(\.part) == [2])
            let refusals = retrier.refusals.withLock { $0 }
            #expect(refusals.count == 1 && refusals.first == signed.first(where: \.stale)?.url, "\(refusals)")
            let lastPart2 = try #require(signed.last { $0.part == 2 })
            #expect(!lastPart2.stale && lastPart2.url != refusals.first)
            // The store takes checksums: each part carried its CRC-32C in a header the service signed (never
            // an aws-chunked trailer), and the receipt has the composite.
            #expect(object.checksum?.hasPrefix("crc32c:") == true, "\(object)")
            #expect(signed.filter { $0.part != nil }.allSatisfy { $0.url.contains("x-amz-checksum-crc32c") }, "\(signed)")

            let uploads = try await emulator.boto(["uploads", emulator.bucket])
            #expect(uploads == "[]")
            let stored = try await emulator.object(key)
            #expect(Int64(stored.count) == receipt.sentByteCount)
            #expect(try opened(stored, receipt) == original)
        }
    }
}
