import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import AttacheTestSupport
import Testing
@testable import AttacheServer

/// `GET /files/{id}` for download clients: `If-Range`, `Last-Modified`, the file fault plan and the log.
@Suite("File route: If-Range and file faults")
struct FileRouteTests {
    static let ifRange = HTTPField.Name("If-Range")!

    func withFile(
        faults: String = "", log: String? = nil,
        _ body: @Sendable (_ client: any TestClientProtocol, _ fileId: String, _ bytes: [UInt8]) async throws -> Void
    ) async throws {
        let store = try TemporaryStore()
        let bytes = sampleBytes(count: 1000)
        var formBuilder = MultipartFixture()
        formBuilder.file("file", filename: "a.bin", type: "application/octet-stream", bytes)
        let form = formBuilder
        var configuration = store.configuration()
        configuration.fileFaults = try FileFaultPlan(parsing: faults)
        configuration.fileLogPath = log
        let app = try await buildApplication(configuration: configuration)
        try await app.test(.router) { client in
            try await body(client, try await uploadedFileId(client, form), bytes)
        }
    }

    @Test func aMatchingIfRangeGetsTheRangeAndAnotherGetsTheWholeFile() async throws {
        try await withFile { client, fileId, bytes in
            let etag = "\"\(try await sha256Hex(bytes))\""
            var lastModified = ""
            try await client.execute(uri: "/files/\(fileId)", method: .head) { response in
                #expect(response.headers[.eTag] == etag)
                lastModified = response.headers[.lastModified] ?? ""
            }
            #expect(lastModified.hasSuffix(" GMT") && lastModified.count == 29)
            for validator in [etag, lastModified] {
                try await client.execute(
                    uri: "/files/\(fileId)", method: .get, headers: [.range: "bytes=900-", Self.ifRange: validator]
                ) { response in
                    #expect(response.status == .partialContent)
                    #expect(Array(response.body.readableBytesView) == Array(bytes[900...]))
                }
            }
            try await client.execute(
                uri: "/files/\(fileId)", method: .get, headers: [.range: "bytes=900-", Self.ifRange: "\"other\""]
            ) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentRange] == nil)
                #expect(Array(response.body.readableBytesView) == bytes)
            }
        }
    }

    @Test func changeComplementsTheBytesAndTheETagFollows() async throws {
        try await withFile(faults: "change@2") { client, fileId, bytes in
            try await client.execute(uri: "/files/\(fileId)", method: .get) { response in
                #expect(Array(response.body.readableBytesView) == bytes)
            }
            let changed = bytes.map { $0 ^ 0xFF }
            let changedETag = "\"\(try await sha256Hex(changed))\""
            try await client.execute(uri: "/files/\(fileId)", method: .get) { response in
                #expect(Array(response.body.readableBytesView) == changed)
                #expect(response.headers[.eTag] == changedETag)
            }
        }
    }

    @Test func fault416AnswersUnsatisfiableAndTheLogRecordsRequestsAndBytes() async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("files-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        try await withFile(faults: "416@2", log: log) { client, fileId, _ in
            try await client.execute(uri: "/files/\(fileId)", method: .get, headers: [.range: "bytes=10-"]) { response in
                #expect(response.status == .partialContent)
            }
            try await client.execute(uri: "/files/\(fileId)", method: .get) { response in
                #expect(response.status == .rangeNotSatisfiable)
                #expect(response.headers[.contentRange] == "bytes */1000")
            }
        }
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map { try jsonObject(Array($0.utf8)) }
        #expect(lines.count == 3)
        #expect(lines[0]["range"] as? String == "bytes=10-" && lines[0]["status"] as? Int == 206)
        #expect(lines.contains { $0["sent"] as? Int == 990 && $0["status"] == nil })
        #expect(lines.contains { $0["status"] as? Int == 416 && $0["sent"] as? Int == 0 })
    }

    @Test(arguments: ["cut:after=0", "throttle:rate=x", "shake", "416:after=3"])
    func malformedFileFaultsAreRejected(spec: String) {
        #expect(throws: (any Error).self) { try FileFaultPlan(parsing: spec) }
    }

    @Test func everyMatchingFileFaultApplies() throws {
        let plan = try FileFaultPlan(parsing: "change@2,throttle:rate=1000,cut@2-3:after=10")
        #expect(plan.faults(forRequest: 1) == [.throttle(bytesPerSecond: 1000)])
        #expect(plan.faults(forRequest: 2) == [.change, .throttle(bytesPerSecond: 1000), .cut(afterBytes: 10)])
        #expect(plan.description == "change@2,throttle:rate=1000,cut@2-3:after=10")
    }
}
