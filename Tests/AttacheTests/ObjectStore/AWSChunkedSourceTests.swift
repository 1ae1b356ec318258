import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// The `aws-chunked` body with a trailing checksum that parts stream as, and the composite checksums of
/// multipart objects.
@Suite("aws-chunked part bodies")
struct AWSChunkedSourceTests {
    /// Reads `source` through buffers of `size` bytes.
    func read(_ source: any ByteSource, buffer size: Int) throws -> [UInt8] {
        let reader = try source.makeReader()
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: size)
        while true {
            let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
            if n == 0 { return out }
            out += buffer[..<n]
        }
    }

    /// Splits an encoded body into its chunks' data and its trailer lines, checking the framing.
    func decode(_ body: [UInt8]) throws -> (data: [UInt8], sizes: [Int], trailer: [String]) {
        var data: [UInt8] = []
        var sizes: [Int] = []
        var at = 0
        func line() throws -> String {
            var end = at
            while end + 1 < body.count, !(body[end] == 13 && body[end + 1] == 10) { end += 1 }
            try #require(end + 1 < body.count, "no CRLF after byte \(at)")
            let text = String(decoding: body[at..<end], as: UTF8.self)
            at = end + 2
            return text
        }
        while true {
            let size = try #require(Int(try line(), radix: 16))
            sizes.append(size)
            if size == 0 { break }
            data += body[at..<(at + size)]
            at += size
            try #require(Array(body[at..<(at + 2)]) == [13, 10])
            at += 2
        }
        var trailer: [String] = []
        while true {
            let text = try line()
            if text.isEmpty { break }
            trailer.append(text)
        }
        #expect(at == body.count, "bytes after the trailer")
        return (data, sizes, trailer)
    }

    @Test("chunks of the size asked, the empty chunk and the checksum trailer; the length is known before reading")
    func framing() throws {
        let payload = randomPayload((2 << 20) + 123_457)
        for algorithm in MultipartSettings.ChecksumAlgorithm.allCases {
            let source = AWSChunkedSource(DataSource(payload), algorithm: algorithm, chunkSize: 1 << 20)
            for size in [7, 4096, 1 << 20, 3 << 20] {
                let body = try read(source, buffer: size)
                #expect(Int64(body.count) == source.byteCount, "\(algorithm), buffer \(size)")
                let decoded = try decode(body)
                #expect(decoded.data == payload)
                #expect(decoded.sizes == [1 << 20, 1 << 20, 123_457, 0])
                let expected = try PartChecksummer.base64(of: DataSource(payload), algorithm)
                #expect(decoded.trailer == ["x-amz-checksum-\(algorithm.rawValue):\(expected)"])
                #expect(source.checksum.checksum == expected)
            }
        }
        // By default a part of up to 64 MiB is one chunk (a server that joins chunks by copying pays per chunk).
        let whole = AWSChunkedSource(DataSource(payload), algorithm: .crc32c)
        let body = try read(whole, buffer: 1 << 16)
        #expect(Int64(body.count) == whole.byteCount)
        #expect(try decode(body).sizes == [payload.count, 0])
        let headers = AWSChunkedSource(DataSource(payload), algorithm: .sha256).headers
        #expect(headers.contains(HeaderField(name: "x-amz-decoded-content-length", value: String(payload.count))))
        #expect(headers.contains(HeaderField(name: "x-amz-trailer", value: "x-amz-checksum-sha256")))
        #expect(headers.contains(HeaderField(name: "Content-Encoding", value: "aws-chunked")))
    }

    @Test("the checksums S3 publishes: CRC-32C and SHA-256 of known inputs, in base64")
    func knownValues() throws {
        // CRC-32C("123456789") = 0xE3069283; SHA-256("abc") = ba7816bf...
        #expect(try PartChecksummer.base64(of: DataSource("123456789"), .crc32c) == "4waSgw==")
        #expect(try PartChecksummer.base64(of: DataSource("abc"), .sha256) == "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=")
        let empty = AWSChunkedSource(DataSource([]), algorithm: .crc32c)
        let body = try read(empty, buffer: 64)
        #expect(String(decoding: body, as: UTF8.self) == "0\r\nx-amz-checksum-crc32c:AAAAAA==\r\n\r\n")
        #expect(Int64(body.count) == empty.byteCount)
    }

    @Test("the composite: the checksum of the parts' digests, then -N; none when a part has none")
    func composite() throws {
        let parts = [randomPayload(1000), randomPayload(2000)]
        for algorithm in MultipartSettings.ChecksumAlgorithm.allCases {
            let sums = try parts.map { try PartChecksummer.base64(of: DataSource($0), algorithm) }
            let digests = try sums.flatMap { try Base64.decode($0) }
            let whole = try PartChecksummer.base64(of: DataSource(digests), algorithm)
            #expect(PartChecksummer.composite(sums, algorithm) == whole + "-2")
            #expect(PartChecksummer.composite([sums[0], nil], algorithm) == nil)
        }
    }

    @Test("a store that refuses aws-chunked is told apart from a wrong checksum or signature")
    func refusals() {
        #expect(MultipartObjectUpload.refusesTrailers(Rejection(reason: .status, status: 501, businessCode: "NotImplemented", message: "")))
        #expect(MultipartObjectUpload.refusesTrailers(Rejection(reason: .status, status: 400, businessCode: "InvalidArgument", message: "")))
        #expect(!MultipartObjectUpload.refusesTrailers(Rejection(reason: .status, status: 400, businessCode: "BadDigest", message: "")))
        #expect(!MultipartObjectUpload.refusesTrailers(Rejection(reason: .status, status: 403, businessCode: "SignatureDoesNotMatch", message: "")))
    }

    func randomPayload(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
