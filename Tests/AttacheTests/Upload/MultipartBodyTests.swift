import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

@Suite("MultipartBody")
struct MultipartBodyTests {
    /// A body with repeated fields, a binary file part and a second file part.
    func sampleBody(file: [UInt8], filename: String = "photo.jpg") throws -> MultipartBody {
        var body = MultipartBody()
        try body.addField(name: "chatId", value: "42")
        try body.addField(name: "tags[]", value: "a")
        try body.addField(name: "tags[]", value: "b é")
        try body.addFile(name: "file", filename: filename, contentType: "image/jpeg", source: DataSource(file))
        try body.addFile(name: "thumbnail", filename: "thumb.jpg", contentType: "image/jpeg", source: DataSource([1, 2, 3]))
        return body
    }

    static let payloads: [[UInt8]] = [
        [],
        [0x2D],
        Array("--\r\n--boundary\r\n".utf8),
        (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) },
    ]

    @Test("length is exact and Python's email parser reads the parts back", arguments: payloads)
    func emailRoundTrip(payload: [UInt8]) async throws {
        let body = try sampleBody(file: payload)
        let bytes = try readAll(body)
        #expect(Int64(bytes.count) == body.byteCount)

        let parts = try await parseWithEmail(bytes, boundary: body.boundary)
        try #require(parts.count == 5)
        #expect(String(decoding: parts[0].bytes, as: UTF8.self) == "42")
        #expect(parts[0].headers["content-disposition"] == "form-data; name=\"chatId\"")
        #expect(String(decoding: parts[2].bytes, as: UTF8.self) == "b é")
        #expect(parts[3].bytes == payload)
        #expect(parts[3].headers["content-type"] == "image/jpeg")
        #expect(parts[3].headers["content-disposition"] == "form-data; name=\"file\"; filename=\"photo.jpg\"")
        #expect(parts[4].bytes == [1, 2, 3])
    }

    @Test("Werkzeug reads fields, repeated names and files back", arguments: payloads)
    func werkzeugRoundTrip(payload: [UInt8]) async throws {
        let body = try sampleBody(file: payload)
        let parsed = try await parseWithWerkzeug(try readAll(body), contentType: body.contentType)
        #expect(parsed.fields["chatId"] == ["42"])
        #expect(parsed.fields["tags[]"] == ["a", "b é"])
        try #require(parsed.files.count == 2)
        let digest = try await sha256Hex(payload)
        #expect(parsed.files[0] == ParsedPart(
            name: "file", filename: "photo.jpg", contentType: "image/jpeg", size: payload.count,
            sha256: digest))
        #expect(parsed.files[1].name == "thumbnail")
        #expect(parsed.files[1].size == 3)
    }

    @Test("names go as themselves or a clearly replaced form", arguments: [
        ("plain.txt", "plain.txt"),
        ("say \"hi\".txt", "say %22hi%22.txt"),
        ("two\r\nlines.txt", "two%0D%0Alines.txt"),
        ("résumé 履歴書.pdf", "résumé 履歴書.pdf"),
        ("semi;colon, back\\slash.txt", "semi;colon, back%5Cslash.txt"),
        ("a\\", "a%5C"),
        ("dir/name", "dir%2Fname"),
        ("tab\there", "tab%09here"),
        ("nul\u{0}bell\u{7}del\u{7F}", "nul%00bell%07del%7F"),
        (" both ends ", "%20both ends%20"),
        ("\u{3000}", "%E3%80%80"),
        ("100%22.txt", "100%2522.txt"),
        ("50% off %2F.txt", "50% off %2F.txt"),
    ])
    func escaping(filename: String, expected: String) async throws {
        var body = MultipartBody()
        try body.addFile(name: "file", filename: filename, contentType: "text/plain", source: DataSource("x"))
        let bytes = try readAll(body)
        // Python's email parser hands over the header exactly as written.
        let parts = try await parseWithEmail(bytes, boundary: body.boundary)
        try #require(parts.count == 1)
        #expect(parts[0].headers["content-disposition"] == "form-data; name=\"file\"; filename=\"\(expected)\"")
        // Werkzeug must see exactly one file part with that name.
        let parsed = try await parseWithWerkzeug(bytes, contentType: body.contentType)
        try #require(parsed.files.count == 1)
        #expect(parsed.files[0].filename == expected)
        #expect(parsed.files[0].size == 1)
        #expect(parsed.fields.isEmpty)
    }

    @Test("a 300-character non-ASCII filename survives", arguments: [300])
    func longFilename(length: Int) async throws {
        let filename = String(repeating: "é", count: length - 4) + ".txt"
        var body = MultipartBody()
        try body.addFile(name: "file", filename: filename, contentType: "text/plain", source: DataSource("x"))
        let parts = try await parseWithEmail(try readAll(body), boundary: body.boundary)
        #expect(parts.first?.headers["content-disposition"]?.contains(filename) == true)
    }

    @Test("an empty name or filename is refused", arguments: [("", "a.txt"), ("file", "")])
    func emptyNamesRefused(name: String, filename: String) throws {
        var body = MultipartBody()
        let error = #expect(throws: AttacheError.self) {
            try body.addFile(name: name, filename: filename, contentType: "text/plain", source: DataSource("x"))
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.stage == .upload)
        #expect(body.parts.isEmpty)
    }

    @Test("boundaries are random, at most 70 characters, and never repeat")
    func boundaries() {
        let boundaries = (0..<200).map { _ in MultipartBody().boundary }
        #expect(Set(boundaries).count == boundaries.count)
        for boundary in boundaries {
            #expect((1...70).contains(boundary.count))
            #expect(boundary.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
        }
        #expect(throws: AttacheError.self) { try MultipartBody(boundary: String(repeating: "a", count: 71)) }
        #expect(throws: AttacheError.self) { try MultipartBody(boundary: "bad\"quote") }
    }

    @Test("the body streams a file from disk in the reader's chunk size")
    func streamsFromDisk() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("attache-mp-\(UUID().uuidString)").path
        let content = (0..<1_000_003).map { UInt8(truncatingIfNeeded: $0 &* 131) }
        try Data(content).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var body = MultipartBody()
        try body.addFile(name: "file", filename: "big.bin", contentType: "application/octet-stream", source: try FileSource(path: path))
        let bytes = try readAll(body, chunk: 65_536)
        #expect(Int64(bytes.count) == body.byteCount)
        let parts = try await parseWithEmail(bytes, boundary: body.boundary)
        #expect(parts.first?.bytes == content)
    }
}
