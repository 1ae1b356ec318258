import Foundation
import AttacheTestSupport
import Synchronization
import Testing
@testable import Attache
@testable import AttacheCore

/// Downloads of `s3://BUCKET/KEY` objects in memory: where the GETs go, and that every attempt carries a
/// SigV4 signature of its own headers (its `Range` included) that the signer reproduces, or, for an endpoint
/// the client's adapters sign, goes to them unsigned.
@Suite("Object download seam")
struct ObjectDownloadSeamTests {
    static let credentials = AWSCredentials(
        accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        sessionToken: "session-token-example")
    static let store = ObjectStoreEndpoint(
        location: S3Location(bucket: "unused"), credentials: credentials, region: "eu-west-1",
        endpointURL: "http://127.0.0.1:9", addressing: .path)

    func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("object-seam-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func header(_ request: TransportRequest, _ name: String) -> String? {
        request.headers.last { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The signature `request` would get from the signer for its own date and signed headers.
    func expectedAuthorization(_ request: TransportRequest) throws -> String {
        let authorization = try #require(header(request, "Authorization"))
        let signedNames = try #require(authorization.split(separator: " ").first { $0.hasPrefix("SignedHeaders=") })
            .dropFirst("SignedHeaders=".count).dropLast().split(separator: ";").map(String.init)
        let components = try #require(URLComponents(string: request.url))
        let hostHeader = "\(components.host ?? ""):\(components.port ?? 0)"
        let signed = signedNames.filter { $0 != "host" }.compactMap { name in
            header(request, name).map { HeaderField(name: name, value: $0) }
        }
        #expect(signedNames.contains("host") && signed.count == signedNames.count - 1)
        return try SigV4Signer(credentials: Self.credentials, region: "eu-west-1").sign(
            method: "GET", path: components.percentEncodedPath, query: [],
            headers: [HeaderField(name: "host", value: hostHeader)] + signed,
            payloadHash: SigV4Signer.emptyPayloadHash, amzDate: try #require(header(request, "x-amz-date"))
        ).authorization
    }

    @Test("a broken object download resumes with a ranged GET signed anew; both signatures check")
    func resumedGetIsSignedAgain() async throws {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let payload = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 11) }
        let lost = AttacheError(.connectionLost, stage: .download, "connection lost", isRetryable: true)
        let transport = ScriptedTransport([
            .fail(lost, afterStatus: 200, headers: [HeaderField(name: "Content-Length", value: "10000")], body: Array(payload[..<3000])),
            .answer(
                status: 206, headers: [HeaderField(name: "Content-Range", value: "bytes 3000-9999/10000")],
                body: Array(payload[3000...])),
        ])
        let downloader = Downloader(configuration: .init(), transport: transport, sleep: RecordedSleeps().sleep)
        var request = DownloadRequest(url: "s3://media/in box/clip+1.bin", destination: directory + "/clip.bin")
        request.objectStore = Self.store
        let receipt = try await downloader.download(request)
        #expect(receipt.url == "s3://media/in box/clip+1.bin")
        #expect(receipt.attempts == 2)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/clip.bin")) == Data(payload))

        let sent = transport.sent
        try #require(sent.count == 2)
        #expect(sent.allSatisfy { $0.url == "http://127.0.0.1:9/media/in%20box/clip%2B1.bin" })
        #expect(header(sent[0], "Range") == nil)
        #expect(header(sent[1], "Range") == "bytes=3000-")
        for request in sent {
            #expect(header(request, "x-amz-content-sha256") == SigV4Signer.emptyPayloadHash)
            #expect(header(request, "x-amz-security-token") == "session-token-example")
            let authorization = try #require(header(request, "Authorization"))
            #expect(authorization.contains("Credential=AKIAIOSFODNN7EXAMPLE/"))
            #expect(authorization.contains("/eu-west-1/s3/aws4_request"))
            #expect(!authorization.contains(Self.credentials.withSecret { String(decoding: $0, as: UTF8.self) }))
            #expect(authorization == (try expectedAuthorization(request)))
        }
        #expect(header(sent[1], "Authorization")?.contains("SignedHeaders=accept-encoding;host;range;") == true)
        #expect(header(sent[0], "Authorization") != header(sent[1], "Authorization"))
    }

    @Test("with an endpoint the adapters sign, each GET goes to them unsigned, its Range included, and where they send it")
    func adaptersSignTheGets() async throws {
        /// Gives each attempt a presigned URL of its own, and keeps what it was given.
        final class Presigner: RequestAdapter {
            let given = Mutex<[ClientRequest]>([])
            func adapt(_ request: ClientRequest) async throws -> ClientRequest {
                let number = given.withLock { given in
                    given.append(request)
                    return given.count
                }
                var request = request
                request.url += "?X-Amz-Signature=g\(number)"
                return request
            }
        }
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let payload = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let lost = AttacheError(.connectionLost, stage: .download, "connection lost", isRetryable: true)
        let transport = ScriptedTransport([
            .fail(lost, afterStatus: 200, headers: [HeaderField(name: "Content-Length", value: "10000")], body: Array(payload[..<4000])),
            .answer(
                status: 206, headers: [HeaderField(name: "Content-Range", value: "bytes 4000-9999/10000")],
                body: Array(payload[4000...])),
        ])
        let presigner = Presigner()
        let client = AttacheClient(
            connection: .init(), transport: transport, interceptors: ClientInterceptors(adapters: [presigner]),
            sleep: RecordedSleeps().sleep)
        var request = DownloadRequest(url: "s3://media/clip.bin", destination: directory + "/clip.bin")
        request.objectStore = ObjectStoreEndpoint(
            location: S3Location(bucket: "unused"), signing: .adapters, region: "eu-west-1", endpointURL: "http://127.0.0.1:9",
            addressing: .path)
        let receipt = try await client.download(request)
        #expect(receipt.attempts == 2)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/clip.bin")) == Data(payload))

        let given = presigner.given.withLock { $0 }
        try #require(given.count == 2)
        #expect(given.allSatisfy { $0.url == "http://127.0.0.1:9/media/clip.bin" })
        #expect(given.allSatisfy { $0.header("Authorization") == nil && $0.header("x-amz-date") == nil })
        #expect(given[0].header("Range") == nil)
        #expect(given[1].header("Range") == "bytes=4000-")
        #expect(transport.sent.map(\.url) == ["http://127.0.0.1:9/media/clip.bin?X-Amz-Signature=g1", "http://127.0.0.1:9/media/clip.bin?X-Amz-Signature=g2"])
    }

    @Test("the download manager signs the GETs of its s3:// items, not those of its https ones")
    func managerSignsObjectItems() async throws {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let transport = ScriptedTransport([
            .answer(status: 200, headers: [HeaderField(name: "Content-Length", value: "3")], body: [1, 2, 3]),
            .answer(status: 200, headers: [HeaderField(name: "Content-Length", value: "3")], body: [1, 2, 3]),
        ])
        let manager = DownloadManager(configuration: .init(maximumConcurrentTransfers: 1), transport: transport)
        var object = DownloadItem(url: "s3://media/a.bin", destination: directory + "/a.bin")
        object.objectStore = Self.store
        try manager.add(object)
        try manager.add(DownloadItem(url: "http://127.0.0.1:9/b.bin", destination: directory + "/b.bin"))
        let summary = try await manager.waitUntilSettled()
        manager.close()
        #expect(summary.completed == 2)
        let sent = transport.sent
        try #require(sent.count == 2)
        let signed = try #require(sent.first { $0.url.hasSuffix("/media/a.bin") })
        #expect(try header(signed, "Authorization") == expectedAuthorization(signed))
        let plain = try #require(sent.first { $0.url.hasSuffix("/b.bin") })
        #expect(header(plain, "Authorization") == nil)
        #expect(header(plain, "x-amz-date") == nil)
    }

    @Test("NoSuchKey is a rejection naming the object, the stage and S3's code; nothing is retried")
    func noSuchKey() async throws {
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>gone.bin</Key></Error>
            """
        let transport = ScriptedTransport([.answer(status: 404, body: Array(body.utf8))])
        let downloader = Downloader(configuration: .init(), transport: transport, sleep: RecordedSleeps().sleep)
        var request = DownloadRequest(url: "s3://media/gone.bin", destination: "/nonexistent/gone.bin")
        request.objectStore = Self.store
        let error = await #expect(throws: AttacheError.self) { try await downloader.download(request) }
        #expect(error?.code == .rejected)
        #expect(error?.stage == .download)
        #expect(error?.file == "s3://media/gone.bin")
        #expect(error?.rejection?.businessCode == "NoSuchKey")
        #expect(error?.rejection?.status == 404)
        #expect(error?.message.contains("NoSuchKey: The specified key does not exist.") == true)
        #expect(transport.sent.count == 1)
    }

    @Test("an s3:// URL without an object store, or naming no object, is refused before any request")
    func needsAStore() async throws {
        let transport = ScriptedTransport([])
        let downloader = Downloader(configuration: .init(), transport: transport, sleep: RecordedSleeps().sleep)
        let unsigned = await #expect(throws: AttacheError.self) {
            try await downloader.download(DownloadRequest(url: "s3://media/a.bin", destination: "/nonexistent/a"))
        }
        #expect(unsigned?.code == .invalidArgument)
        #expect(unsigned?.file == "s3://media/a.bin")
        var bucketOnly = DownloadRequest(url: "s3://media/", destination: "/nonexistent/a")
        bucketOnly.objectStore = Self.store
        let noKey = await #expect(throws: AttacheError.self) { try await downloader.download(bucketOnly) }
        #expect(noKey?.code == .invalidArgument)
        #expect(transport.sent.isEmpty)
    }
}
