import Foundation
import AttacheTestSupport
import Testing

@testable import AttacheCore

/// Detection decodes gzip heads with zlib's inflate (``Inflater``); these tests show that it decodes
/// what the hand-written decoder it replaced did (``HandWrittenInflater``), and that hostile input
/// costs at most the limit and never crashes.
@Suite("gzip heads through zlib")
struct InflaterTests {
    /// The gzip header's length when no optional field is set (every stream made here).
    static let gzipHeader = 10

    /// `bytes` compressed by the `gzip` tool at `level`.
    static func gzip(_ bytes: [UInt8], level: Int = 6) throws -> [UInt8] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("attache-gz-\(UUID().uuidString)")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let gzip = try ChildProcess.runBlocking("gzip", ["-c", "-n", "-\(level)", file.path])
        try #require(gzip.status == 0, "\(gzip.error)")
        return [UInt8](gzip.output)
    }

    /// `gzip` for async tests: the tool runs and is waited for on a thread of its own, not on the
    /// cooperative pool.
    static func gzip(_ bytes: [UInt8], level: Int = 6) async throws -> [UInt8] {
        try await onOwnThread { () throws -> [UInt8] in try gzip(bytes, level: level) }
    }

    /// Deterministic bytes of the given character: text-like, random or long runs.
    static func sample(_ kind: String, count: Int, seed: UInt64) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        switch kind {
        case "text":
            let words = ["{\"tgs\":1,", "\"v\":\"5.5.2\",", "\"fr\":60,", "\"layers\":[", "{\"ty\":4,", "\"ks\":{}", "},", " "]
            var bytes: [UInt8] = []
            while bytes.count < count { bytes += Array(words[Int(generator.next() % UInt64(words.count))].utf8) }
            return Array(bytes.prefix(count))
        case "random":
            return (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        default:
            return (0..<count).map { UInt8(($0 / 300) % 3) }
        }
    }

    static let streams: [(String, Int, Int)] = [
        ("text", 100, 1), ("text", 5000, 6), ("text", 70_000, 9), ("random", 3000, 6), ("random", 40_000, 1),
        ("runs", 100_000, 9), ("runs", 7, 6), ("text", 0, 6),
    ]

    @Test("valid streams: zlib decodes the same bytes as the hand-written decoder", arguments: streams)
    func sameBytesOnValidStreams(_ kind: String, _ count: Int, _ level: Int) async throws {
        let plain = Self.sample(kind, count: count, seed: UInt64(count * 31 + level))
        let compressed = try await Self.gzip(plain, level: level)
        let span = ByteSpan(compressed)
        for limit in [1, 256, 4096, 200_000] {
            let head = try Inflater.inflate(span, from: Self.gzipHeader, limit: limit)
            let reference = HandWrittenInflater.inflate(span, from: Self.gzipHeader, limit: limit)
            #expect(head.bytes == Array(plain.prefix(limit)))
            #expect(head.bytes == reference)
            #expect(head.end == (plain.count > limit ? .limitReached : .streamEnd))
        }
    }

    @Test("stored and fixed-code blocks, built by hand")
    func storedAndFixedBlocks() throws {
        // A stored block (BFINAL=1, BTYPE=00), LEN=5, NLEN=~5, "hello".
        let stored: [UInt8] = [0x01, 0x05, 0x00, 0xFA, 0xFF] + Array("hello".utf8)
        // A fixed-code block (BFINAL=1, BTYPE=01) holding "a" and end of block: 0x4B 0x04 0x00.
        let fixed: [UInt8] = [0x4B, 0x04, 0x00]
        for (bytes, expected) in [(stored, "hello"), (fixed, "a")] {
            let head = try Inflater.inflate(ByteSpan(bytes), from: 0, limit: 256)
            #expect(head.bytes == Array(expected.utf8))
            #expect(head.bytes == HandWrittenInflater.inflate(ByteSpan(bytes), from: 0, limit: 256))
            #expect(head.end == .streamEnd)
        }
    }

    @Test("the corpus TGS sticker: its Lottie head, and the detector still calls it a sticker")
    func tgsSticker() throws {
        let sticker = try CorpusFolder.bytes("sticker.tgs")
        let head = try Inflater.inflate(ByteSpan(sticker), from: Self.gzipHeader, limit: 256)
        #expect(head.bytes == HandWrittenInflater.inflate(ByteSpan(sticker), from: Self.gzipHeader, limit: 256))
        #expect(head.bytes.starts(with: Array("{".utf8)))
        #expect(String(decoding: head.bytes, as: UTF8.self).contains("\"w\":512"))
        let detection = MIMEDetector().detect(prefix: sticker, filename: nil)
        #expect(detection.mimeType == "application/x-tgsticker")
        #expect(detection.metadata.width == 512)
        #expect(detection.metadata.isAnimated == true)
    }

    @Test("a truncated gzip gives the prefix it holds, the same as before, at every cut")
    func truncatedGzip() async throws {
        let plain = Self.sample("text", count: 3000, seed: 7)
        let compressed = try await Self.gzip(plain)
        for cut in Self.gzipHeader...compressed.count {
            let span = ByteSpan(Array(compressed.prefix(cut)))
            let head = try Inflater.inflate(span, from: Self.gzipHeader, limit: 512)
            #expect(plain.starts(with: head.bytes), "cut at \(cut)")
            #expect(head.bytes.count <= 512)
            if cut < compressed.count - 8, head.bytes.count < 512 {
                #expect(head.end == .inputEnded, "cut at \(cut)")
            }
            // The hand-written decoder gave up on a code cut in half; zlib gives every whole byte.
            let reference = HandWrittenInflater.inflate(span, from: Self.gzipHeader, limit: 512)
            #expect(head.bytes.starts(with: reference), "cut at \(cut)")
        }
    }

    @Test("a gzip bomb's head costs the limit, not the bomb")
    func gzipBomb() async throws {
        // 64 MiB of zeros in about 64 KB; nested once more, a bomb of a bomb.
        let bomb = try await Self.gzip([UInt8](repeating: 0, count: 64 << 20), level: 9)
        #expect(bomb.count < 100_000)
        let head = try Inflater.inflate(ByteSpan(bomb), from: Self.gzipHeader, limit: 256)
        #expect(head.bytes == [UInt8](repeating: 0, count: 256))
        #expect(head.end == .limitReached)
        let detection = MIMEDetector().detect(prefix: bomb, filename: "bomb.gz")
        #expect(detection.mimeType == "application/gzip")
        let nested = try await Self.gzip(bomb, level: 9)
        #expect(MIMEDetector().detect(prefix: nested, filename: nil).mimeType == "application/gzip")
    }

    @Test("garbage: an error end or a short head, never more than the limit, never a crash", arguments: 0..<64)
    func garbage(_ seed: Int) throws {
        var bytes = Self.sample("random", count: 16 + seed * 37, seed: UInt64(seed) &* 0x9E37_79B9)
        // Half of them inside a gzip header, as detection meets them.
        if seed % 2 == 0 { bytes = [0x1F, 0x8B, 0x08, 0, 0, 0, 0, 0, 0, 3] + bytes }
        let start = seed % 2 == 0 ? Self.gzipHeader : 0
        let head = try Inflater.inflate(ByteSpan(bytes), from: start, limit: 256)
        #expect(head.bytes.count <= 256)
        _ = MIMEDetector().detect(prefix: bytes, filename: nil)
    }

    @Test("the robustness cases' broken deflate streams end as corrupt")
    func corruptStreams() throws {
        // A stored block whose length check fails; a block of the reserved type 3.
        for bytes: [UInt8] in [[0x00, 0x05, 0x00, 0x00, 0x00, 0x05], [0x07, 0x00]] {
            let head = try Inflater.inflate(ByteSpan(bytes), from: 0, limit: 256)
            guard case .corrupt(let message) = head.end else {
                Issue.record("expected a corrupt end, got \(head.end)")
                continue
            }
            #expect(!message.isEmpty)
            #expect(head.bytes.isEmpty)
        }
        // Out of range and empty starts decode nothing.
        #expect(try Inflater.inflate(ByteSpan([1, 2, 3]), from: 3, limit: 256).bytes.isEmpty)
        #expect(try Inflater.inflate(ByteSpan([]), from: 0, limit: 256).bytes.isEmpty)
    }
}
