import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import AttacheTestSupport
import Testing
@testable import AttacheServer

extension HTTPField.Name {
    static let testIdempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let testFault = HTTPField.Name("X-Attache-Fault")!
    static let testReplayed = HTTPField.Name("Idempotent-Replayed")!
}

@Suite("Reference server routes")
struct RouterTests {
    @Test func healthAnswersOK() async throws {
        let store = try TemporaryStore()
        let app = try await buildApplication(configuration: store.configuration())
        try await app.test(.router) { client in
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "ok")
            }
        }
    }

    /// The benchmarks' slow server: `/answer` reads the body and answers small JSON, after `delay-ms`.
    @Test func answerWaitsItsDelayThenAnswersJSON() async throws {
        let store = try TemporaryStore()
        let app = try await buildApplication(configuration: store.configuration())
        try await app.test(.router) { client in
            let clock = ContinuousClock()
            let start = clock.now
            try await client.execute(uri: "/answer?delay-ms=150", method: .post, body: ByteBuffer(string: "{\"a\":1}")) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
                #expect(String(buffer: response.body).contains("\"errorCode\":0"))
            }
            #expect(clock.now - start >= .milliseconds(150))
            try await client.execute(uri: "/answer", method: .post) { response in #expect(response.status == .ok) }
        }
    }

    @Test func uploadStoresPartsAndServesThemBack() async throws {
        let store = try TemporaryStore()
        let photo = sampleBytes(count: 300_000)
        let thumbnail = sampleBytes(count: 5_000, seed: 7)
        var formBuilder = MultipartFixture()
        formBuilder.field("caption", "hello, world")
        formBuilder.field("tags[]", "a")
        formBuilder.field("tags[]", "b")
        formBuilder.field("single[]", "only")
        formBuilder.file("thumbnail", filename: "thumb.jpg", type: "image/jpeg", thumbnail)
        formBuilder.file("file", filename: "photo%22x%22.jpg", type: "image/jpeg", photo)
        let form = formBuilder
        let app = try await buildApplication(configuration: store.configuration())
        try await app.test(.router) { client in
            let receipt = try await client.execute(
                uri: "/upload", method: .post, headers: [.contentType: form.contentType],
                body: ByteBuffer(bytes: form.encoded())
            ) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
                return try jsonObject(response.body.readableBytesView)
            }
            #expect(receipt["errorCode"] as? Int == 0)
            let data = try #require(receipt["data"] as? [String: Any])
            let fileId = try #require(data["fileId"] as? String)
            #expect(fileId.count == 26)
            #expect(data["url"] as? String == "/files/\(fileId)")
            #expect(data["size"] as? Int == photo.count)
            #expect(data["sha256"] as? String == (try await sha256Hex(photo)))
            #expect(data["filename"] as? String == "photo%22x%22.jpg")
            #expect(data["contentType"] as? String == "image/jpeg")
            let fields = try #require(data["fields"] as? [String: Any])
            #expect(fields["caption"] as? String == "hello, world")
            #expect(fields["tags[]"] as? [String] == ["a", "b"])
            #expect(fields["single[]"] as? [String] == ["only"])
            let parts = try #require(data["parts"] as? [[String: Any]])
            #expect(parts.map { $0["name"] as? String } == ["thumbnail", "file"])
            let thumbnailId = try #require(parts.first?["fileId"] as? String)
            #expect(parts.first?["sha256"] as? String == (try await sha256Hex(thumbnail)))

            let digest = try await sha256Hex(photo)
            try await client.execute(uri: "/files/\(fileId)", method: .get) { response in
                #expect(response.status == .ok)
                #expect(Array(response.body.readableBytesView) == photo)
                #expect(response.headers[.contentType] == "image/jpeg")
                #expect(response.headers[.acceptRanges] == "bytes")
                #expect(response.headers[.eTag] == "\"\(digest)\"")
            }
            try await client.execute(uri: "/files/\(thumbnailId)", method: .get) { response in
                #expect(Array(response.body.readableBytesView) == thumbnail)
            }
            try await client.execute(uri: "/files/\(fileId)", method: .head) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentLength] == "\(photo.count)")
                #expect(response.body.readableBytes == 0)
            }
            try await client.execute(uri: "/stats", method: .get) { response in
                let stats = try jsonObject(response.body.readableBytesView)
                #expect(stats["files"] as? Int == 2)
                #expect(stats["uploads"] as? Int == 1)
                #expect(stats["requests"] as? Int == 1)
            }
        }
        #expect(store.storedFiles().count == 2)
        #expect(store.entries("tmp").isEmpty)
    }

    @Test(arguments: [
        ("bytes=0-9", HTTPResponse.Status.partialContent, "bytes 0-9/1000", 0..<10),
        ("bytes=990-", .partialContent, "bytes 990-999/1000", 990..<1000),
        ("bytes=-5", .partialContent, "bytes 995-999/1000", 995..<1000),
        ("bytes=900-5000", .partialContent, "bytes 900-999/1000", 900..<1000),
        ("bytes=0-1,5-6", .ok, nil, 0..<1000),
        ("items=0-1", .ok, nil, 0..<1000),
    ] as [(String, HTTPResponse.Status, String?, Range<Int>)])
    func rangeRequests(range: String, status: HTTPResponse.Status, contentRange: String?, slice: Range<Int>) async throws {
        let store = try TemporaryStore()
        let bytes = sampleBytes(count: 1000)
        var formBuilder = MultipartFixture()
        formBuilder.file("file", filename: "a.bin", type: "application/octet-stream", bytes)
        let form = formBuilder
        let app = try await buildApplication(configuration: store.configuration())
        try await app.test(.router) { client in
            let fileId = try await uploadedFileId(client, form)
            try await client.execute(uri: "/files/\(fileId)", method: .get, headers: [.range: range]) { response in
                #expect(response.status == status)
                #expect(response.headers[.contentRange] == contentRange)
                #expect(Array(response.body.readableBytesView) == Array(bytes[slice]))
            }
        }
    }

    @Test(arguments: ["bytes=1000-", "bytes=5000-6000", "bytes=-0"])
    func unsatisfiableRangeIs416(range: String) async throws {
        let store = try TemporaryStore()
        var formBuilder = MultipartFixture()
        formBuilder.file("file", filename: "a.bin", type: "application/octet-stream", sampleBytes(count: 1000))
        let form = formBuilder
        let app = try await buildApplication(configuration: store.configuration())
        try await app.test(.router) { client in
            let fileId = try await uploadedFileId(client, form)
            try await client.execute(uri: "/files/\(fileId)", method: .get, headers: [.range: range]) { response in
                #expect(response.status == .rangeNotSatisfiable)
                #expect(response.headers[.contentRange] == "bytes */1000")
            }
        }
    }

    @Test(arguments: ["/files/aaaaaaaaaaaaaaaaaaaaaaaaaa", "/files/..%2F..%2Fetc%2Fpasswd", "/files/short"])
    func unknownFileIs404(path: String) async throws {
        let store = try TemporaryStore()
        let app = try await buildApplication(configuration: store.configuration())
        try await app.test(.router) { client in
            try await client.execute(uri: path, method: .get) { response in
                #expect(response.status == .notFound)
                let json = try jsonObject(response.body.readableBytesView)
                #expect(json["errorCode"] as? Int == 404)
            }
        }
    }

    @Test func badRequestsAreRejectedWithJSON() async throws {
        let store = try TemporaryStore()
        var fieldsOnlyBuilder = MultipartFixture()
        fieldsOnlyBuilder.field("caption", "no file here")
        var withFileBuilder = MultipartFixture()
        withFileBuilder.file("file", filename: "a.bin", type: "application/octet-stream", sampleBytes(count: 10_000))
        var hugeFieldBuilder = MultipartFixture()
        hugeFieldBuilder.field("note", String(repeating: "x", count: 70_000))
        hugeFieldBuilder.file("file", filename: "a.bin", type: "application/octet-stream", [1, 2, 3])
        let fieldsOnly = fieldsOnlyBuilder
        let withFile = withFileBuilder
        let hugeField = hugeFieldBuilder
        let cases: [(String, [UInt8], HTTPResponse.Status, String?)] = [
            ("text/plain", Array("hello".utf8), .unsupportedMediaType, nil),
            ("multipart/form-data", withFile.encoded(), .unsupportedMediaType, nil),
            (fieldsOnly.contentType, fieldsOnly.encoded(), .badRequest, "no file part"),
            (withFile.contentType, withFile.encoded(closed: false), .badRequest, nil),
            (withFile.contentType, Array("garbage without any boundary".utf8), .badRequest, nil),
            (hugeField.contentType, hugeField.encoded(), .contentTooLarge, nil),
        ]
        let app = try await buildApplication(configuration: store.configuration())
        try await app.test(.router) { client in
            for (contentType, body, status, message) in cases {
                try await client.execute(
                    uri: "/upload", method: .post, headers: [.contentType: contentType], body: ByteBuffer(bytes: body)
                ) { response in
                    #expect(response.status == status, "\(contentType)")
                    let json = try jsonObject(response.body.readableBytesView)
                    #expect(json["errorCode"] as? Int == Int(status.code))
                    if let message { #expect(json["message"] as? String == message) }
                }
            }
        }
        #expect(store.storedFiles().isEmpty)
        #expect(store.entries("tmp").isEmpty)
    }

    @Test func idempotencyKeyReplaysTheFirstReceiptAcrossRestarts() async throws {
        let store = try TemporaryStore()
        var formBuilder = MultipartFixture()
        formBuilder.file("file", filename: "a.bin", type: "application/octet-stream", sampleBytes(count: 20_000))
        var otherBuilder = MultipartFixture()
        otherBuilder.file("file", filename: "b.bin", type: "application/octet-stream", sampleBytes(count: 50, seed: 3))
        let form = formBuilder
        let other = otherBuilder
        let headers: HTTPFields = [.contentType: form.contentType, .testIdempotencyKey: "upload-42"]
        let app = try await buildApplication(configuration: store.configuration())
        let first = try await app.test(.router) { client in
            let first = try await client.execute(uri: "/upload", method: .post, headers: headers, body: ByteBuffer(bytes: form.encoded())) {
                #expect($0.headers[.testReplayed] == nil)
                return Array($0.body.readableBytesView)
            }
            try await client.execute(uri: "/upload", method: .post, headers: headers, body: ByteBuffer(bytes: other.encoded())) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.testReplayed] == "true")
                #expect(Array(response.body.readableBytesView) == first)
            }
            return first
        }
        // A new server on the same store still knows the key.
        let restarted = try await buildApplication(configuration: store.configuration())
        try await restarted.test(.router) { client in
            try await client.execute(uri: "/upload", method: .post, headers: headers, body: ByteBuffer(bytes: other.encoded())) { response in
                #expect(response.headers[.testReplayed] == "true")
                #expect(Array(response.body.readableBytesView) == first)
            }
            try await client.execute(uri: "/stats", method: .get) { response in
                let stats = try jsonObject(response.body.readableBytesView)
                #expect(stats["files"] as? Int == 1)
                #expect(stats["uploads"] as? Int == 1)
                #expect(stats["idempotencyKeys"] as? Int == 1)
                #expect(stats["replays"] as? Int == 1)
            }
        }
        #expect(store.storedFiles().count == 1)
    }

    @Test func perRequestFaultCountsAttemptsPerKey() async throws {
        let store = try TemporaryStore()
        var formBuilder = MultipartFixture()
        formBuilder.file("file", filename: "a.bin", type: "application/octet-stream", sampleBytes(count: 1000))
        let form = formBuilder
        let headers: HTTPFields = [.contentType: form.contentType, .testIdempotencyKey: "retry-me", .testFault: "503@1-2:retry-after=2"]
        let app = try await buildApplication(configuration: store.configuration())
        try await app.test(.router) { client in
            for attempt in 1...3 {
                try await client.execute(uri: "/upload", method: .post, headers: headers, body: ByteBuffer(bytes: form.encoded())) { response in
                    if attempt <= 2 {
                        #expect(response.status == .serviceUnavailable)
                        #expect(response.headers[.retryAfter] == "2")
                        #expect(store.storedFiles().isEmpty)
                        #expect(store.entries("keys").isEmpty)
                    } else {
                        #expect(response.status == .ok)
                    }
                }
            }
        }
        #expect(store.storedFiles().count == 1)
    }

    @Test func perRunFaultHitsTheNthRequest() async throws {
        let store = try TemporaryStore()
        var formBuilder = MultipartFixture()
        formBuilder.file("file", filename: "a.bin", type: "application/octet-stream", [1, 2, 3])
        let form = formBuilder
        let app = try await buildApplication(configuration: store.configuration(faults: try FaultPlan(parsing: "500@2,business@3:code=1002:message=quota%20exceeded")))
        try await app.test(.router) { client in
            var statuses: [HTTPResponse.Status] = []
            var codes: [Int?] = []
            for _ in 1...4 {
                try await client.execute(uri: "/upload", method: .post, headers: [.contentType: form.contentType], body: ByteBuffer(bytes: form.encoded())) { response in
                    statuses.append(response.status)
                    let json = try jsonObject(response.body.readableBytesView)
                    codes.append(json["errorCode"] as? Int)
                    if json["errorCode"] as? Int == 1002 { #expect(json["message"] as? String == "quota exceeded") }
                }
            }
            #expect(statuses == [.ok, .internalServerError, .ok, .ok])
            #expect(codes == [0, 500, 1002, 0])
            try await client.execute(uri: "/stats", method: .get) { response in
                let stats = try jsonObject(response.body.readableBytesView)
                #expect(stats["requests"] as? Int == 4)
                #expect(stats["uploads"] as? Int == 2)
            }
        }
    }

    @Test func garbageAndEmptyFaultsAnswer200WithoutJSON() async throws {
        let store = try TemporaryStore()
        var formBuilder = MultipartFixture()
        formBuilder.file("file", filename: "a.bin", type: "application/octet-stream", [1, 2, 3])
        let form = formBuilder
        let app = try await buildApplication(configuration: store.configuration())
        try await app.test(.router) { client in
            try await client.execute(uri: "/upload", method: .post, headers: [.contentType: form.contentType, .testFault: "garbage"], body: ByteBuffer(bytes: form.encoded())) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/html") == true)
                #expect(String(buffer: response.body).contains("<html>"))
            }
            try await client.execute(uri: "/upload", method: .post, headers: [.contentType: form.contentType, .testFault: "empty"], body: ByteBuffer(bytes: form.encoded())) { response in
                #expect(response.status == .ok)
                #expect(response.body.readableBytes == 0)
            }
            try await client.execute(uri: "/upload", method: .post, headers: [.contentType: form.contentType, .testFault: "nonsense"], body: ByteBuffer(bytes: form.encoded())) { response in
                #expect(response.status == .badRequest)
            }
        }
        #expect(store.storedFiles().isEmpty)
    }
}

/// Uploads `form` and returns the primary file id.
func uploadedFileId(_ client: some TestClientProtocol, _ form: MultipartFixture) async throws -> String {
    try await client.execute(uri: "/upload", method: .post, headers: [.contentType: form.contentType], body: ByteBuffer(bytes: form.encoded())) { response in
        let data = try #require(try jsonObject(response.body.readableBytesView)["data"] as? [String: Any])
        return try #require(data["fileId"] as? String)
    }
}
