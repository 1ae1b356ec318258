import Foundation
import Synchronization
import Testing
@testable import Attache
@testable import AttacheCore

/// The body pump as curl's read callback drives it: pauses when the queue is empty, wakes when the
/// producer catches up, rewinds to the first byte, and hands out exactly the source's bytes.
@Suite("BodyPump")
struct BodyPumpTests {
    /// Reads the whole body the way the loop does, waiting for the wake-up after each pause.
    /// `rewindAfter`: start over once after that many bytes.
    func drain(_ pump: BodyPump, bufferSize: Int, rewindAfter: Int? = nil) async throws -> [UInt8] {
        let woken = AsyncStream<Void>.makeStream()
        pump.onWake { woken.continuation.yield() }
        var iterator = woken.stream.makeAsyncIterator()
        await pump.prime()
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: bufferSize)
        var rewound = false
        while true {
            if let rewindAfter, !rewound, output.count >= rewindAfter {
                rewound = true
                #expect(pump.rewind())
                output.removeAll()
            }
            let result = buffer.withUnsafeMutableBytes { pump.read(into: $0) }
            switch result {
            case .bytes(let n):
                output += buffer[..<n]
            case .pause:
                _ = await iterator.next()
            case .end:
                return output
            case .failed(let error):
                throw error
            }
        }
    }

    @Test("a body of many chunks arrives whole and in order, through pauses", arguments: [1, 3, 4_096, 700_000])
    func manyChunks(bufferSize: Int) async throws {
        let bytes = (0..<3_000_017).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }
        let pump = BodyPump(source: DataSource(bytes), chunkSize: 64 * 1024)
        let output = try await drain(pump, bufferSize: bufferSize == 1 ? 65_536 : bufferSize)
        #expect(output.count == bytes.count)
        #expect(output == bytes)
    }

    @Test("a rewind in the middle of a large body starts it over from its first byte")
    func rewindLarge() async throws {
        let bytes = (0..<1_000_003).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let pump = BodyPump(source: DataSource(bytes), chunkSize: 64 * 1024)
        let output = try await drain(pump, bufferSize: 16 * 1024, rewindAfter: 300_000)
        #expect(output == bytes)
    }

    @Test("a small body is read whole before the transfer and rewinds without reading again")
    func rewindSmall() async throws {
        let bytes = Array("a small body".utf8)
        let pump = BodyPump(source: DataSource(bytes), chunkSize: 64 * 1024)
        let output = try await drain(pump, bufferSize: 5, rewindAfter: 5)
        #expect(output == bytes)
    }

    @Test("a source shorter than it said is a file-changed error, not a short body")
    func shortSource() async throws {
        struct Short: ByteSource {
            var byteCount: Int64 { 200_000 }
            func makeReader() throws -> any ByteReader { try DataSource(Array(repeating: 1, count: 150_000)).makeReader() }
        }
        let pump = BodyPump(source: Short(), chunkSize: 64 * 1024)
        do {
            _ = try await drain(pump, bufferSize: 32 * 1024)
            Issue.record("no error")
        } catch let error as AttacheError {
            #expect(error.code == .fileChanged)
        }
    }
}
