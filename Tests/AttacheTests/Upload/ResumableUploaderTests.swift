import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

/// The resumable client's decisions, driven through the transport seam with scripted answers: which
/// request follows which answer, with which offset and which bytes.
@Suite struct ResumableUploaderTests {
    static let bytes: [UInt8] = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 31) }

    static func uploader(_ transport: ScriptedTransport, mode: ResumableMode, checksums: Bool = false) -> ResumableUploader {
        var connection = ConnectionConfiguration()
        connection.retry = RetryPolicy(
            maximumAttempts: 4, initialDelay: .milliseconds(1), maximumDelay: .milliseconds(1), budget: .seconds(30))
        return ResumableUploader(
            connection: connection,
            configuration: ResumableConfiguration(
                mode: mode, threshold: 0, initialAppendSize: 1000, maximumAppendSize: 1000, minimumAppendSize: 1000,
                checksums: checksums),
            transport: transport)
    }

    static let tusOptions = ScriptedTransport.Step.answer(
        status: 204,
        headers: [
            HeaderField(name: "Tus-Resumable", value: "1.0.0"), HeaderField(name: "Tus-Version", value: "1.0.0"), HeaderField(name: "Tus-Extension", value: "creation,checksum,termination"),
            HeaderField(name: "Tus-Checksum-Algorithm", value: "md5,sha1"),
        ])

    static func header(_ request: TransportRequest, _ name: String) -> String? {
        request.headers.last { $0.name.lowercased() == name.lowercased() }?.value
    }

    static func body(_ request: TransportRequest) throws -> [UInt8] {
        try request.body?.makeReader().readToEnd() ?? []
    }

    @Test func tusConflictAsksTheServerAndContinuesAtItsOffset() async throws {
        let transport = ScriptedTransport([
            Self.tusOptions,
            .answer(status: 201, headers: [HeaderField(name: "Location", value: "/files/abc"), HeaderField(name: "Upload-Offset", value: "0")]),
            .answer(status: 204, headers: [HeaderField(name: "Upload-Offset", value: "1000")]),
            .answer(status: 409, headers: [HeaderField(name: "Upload-Offset", value: "2000")]),
            .answer(status: 200, headers: [HeaderField(name: "Upload-Offset", value: "2000"), HeaderField(name: "Upload-Length", value: "3000")]),
            .answer(status: 204, headers: [HeaderField(name: "Upload-Offset", value: "3000")]),
        ])
        let result = try #require(
            try await Self.uploader(transport, mode: .tus).upload(
                ResumableUploadRequest(
                    url: "http://127.0.0.1:9/upload", body: DataSource(Self.bytes), filename: "a.bin",
                    fields: [UploadField(name: "kind", value: "file")])))
        let sent = transport.sent
        #expect(sent.map(\.method) == ["OPTIONS", "POST", "PATCH", "PATCH", "HEAD", "PATCH"])
        #expect(Self.header(sent[1], "Upload-Length") == "3000")
        #expect(Self.header(sent[1], "Upload-Metadata") == "filename YS5iaW4=,filetype YXBwbGljYXRpb24vb2N0ZXQtc3RyZWFt,kind ZmlsZQ==")
        #expect(sent[2].url == "http://127.0.0.1:9/files/abc")
        #expect(sent[2...].compactMap { Self.header($0, "Upload-Offset") } == ["0", "1000", "2000"])
        #expect(try Self.body(sent[5]) == Array(Self.bytes[2000...]))
        #expect(result.protocolName == .tus)
        guard case .stored(let receipt) = result.upload.outcome else {
            Issue.record("not stored")
            return
        }
        // A tus server with no receipt of its own: one made from the upload resource.
        #expect(receipt.fileId == "abc")
        #expect(receipt.url == "http://127.0.0.1:9/files/abc")
    }

    @Test func checksumMismatchSendsTheSameChunkAgainWithTheStrongestListedDigest() async throws {
        let transport = ScriptedTransport([
            Self.tusOptions,
            .answer(status: 201, headers: [HeaderField(name: "Location", value: "http://127.0.0.1:9/files/x")]),
            .answer(status: 204, headers: [HeaderField(name: "Upload-Offset", value: "1000")]),
            .answer(status: 460),
            .answer(status: 204, headers: [HeaderField(name: "Upload-Offset", value: "2000")]),
            .answer(status: 204, headers: [HeaderField(name: "Upload-Offset", value: "3000")]),
        ])
        _ = try await Self.uploader(transport, mode: .tus, checksums: true).upload(
            ResumableUploadRequest(url: "http://127.0.0.1:9/upload", body: DataSource(Self.bytes), filename: "a.bin"))
        let patches = transport.sent.filter { $0.method == "PATCH" }
        #expect(patches.compactMap { Self.header($0, "Upload-Offset") } == ["0", "1000", "1000", "2000"])
        let expected = "sha1 " + Base64.encode(try Self.sha1(Array(Self.bytes[1000..<2000])))
        #expect(Self.header(patches[1], "Upload-Checksum") == expected)
        #expect(Self.header(patches[2], "Upload-Checksum") == expected)
    }

    @Test func autoFallsBackWhenTheServerSpeaksNeitherProtocol() async throws {
        let transport = ScriptedTransport([
            .answer(status: 405),
            .answer(status: 415, headers: [HeaderField(name: "Content-Type", value: "application/json")], body: Array(#"{"errorCode":415}"#.utf8)),
        ])
        let result = try await Self.uploader(transport, mode: .auto).upload(
            ResumableUploadRequest(url: "http://127.0.0.1:9/upload", body: DataSource(Self.bytes), filename: "a.bin"))
        #expect(result == nil)
        let probe = try #require(transport.sent.last)
        #expect(probe.method == "POST")
        #expect(Self.header(probe, "Upload-Complete") == "?0")
        #expect(try Self.body(probe).isEmpty)
    }

    @Test func anUploadTheServerCompletedIsNotSentAgain() async throws {
        // The last answer was lost: HEAD says the upload is complete, and names the receipt.
        let transport = ScriptedTransport([
            .answer(
                status: 204,
                headers: [HeaderField(name: "Upload-Offset", value: "3000"), HeaderField(name: "Upload-Complete", value: "?1"), HeaderField(name: "Attache-Receipt", value: "/receipts/r1")]),
            .answer(
                status: 200, headers: [HeaderField(name: "Content-Type", value: "application/json")],
                body: Array(#"{"errorCode":0,"data":{"fileId":"r1","url":"/files/r1"}}"#.utf8)),
        ])
        let earlier = ResumableState(protocolName: .ietf, uploadURL: "http://127.0.0.1:9/resumable/u", offset: 2000)
        let result = try #require(
            try await Self.uploader(transport, mode: .ietf).upload(
                ResumableUploadRequest(
                    url: "http://127.0.0.1:9/upload", body: DataSource(Self.bytes), filename: "a.bin", resumeFrom: earlier)))
        #expect(transport.sent.map(\.method) == ["HEAD", "GET"])
        #expect(transport.sent.last?.url == "http://127.0.0.1:9/receipts/r1")
        guard case .stored(let receipt) = result.upload.outcome else {
            Issue.record("not stored")
            return
        }
        #expect(receipt.fileId == "r1")
        #expect(result.bytesSent == 0)
    }

    static func sha1(_ bytes: [UInt8]) throws -> [UInt8] {
        let digest = try ChecksumDigest(algorithm: "sha1")
        try bytes.withUnsafeBytes { try digest.update($0) }
        return try digest.finish()
    }
}
