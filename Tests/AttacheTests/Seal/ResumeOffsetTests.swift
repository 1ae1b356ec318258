import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// A resumed upload regenerates the sealed stream from the server's offset: the bytes from any offset
/// must equal the same bytes of a reader from the start, for every scheme and encoding.
@Suite struct ResumeOffsetTests {
    static let plaintext: [UInt8] = (0..<(3 * 65536 + 12345)).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 7) }

    static func file() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("attache-resume-\(UUID().uuidString)").path
        try Data(plaintext).write(to: URL(fileURLWithPath: path))
        return path
    }

    static let offsets: [Int64] = [0, 1, 59, 60, 61, 65536 + 60, 65536 + 76, 65552 + 60 + 1000, 2 * 65552 + 60, 200_000]

    @Test(arguments: [
        (SealScheme.streamGCM, TransferEncoding.binary), (.streamGCM, .base64), (.signal, .binary), (.none, .binary),
    ])
    func bytesFromAnyOffsetEqualTheWholeStream(scheme: SealScheme, encoding: TransferEncoding) throws {
        let path = try Self.file()
        defer { unlink(path) }
        let material = SealMaterial.random(for: scheme)
        let sealer = Sealer(scheme: scheme, key: material.key, transferEncoding: encoding)
        let payload = try sealer.seal(try FileSource(path: path), material: material, part: 0)
        let whole = try payload.makeReader().readToEnd()
        #expect(Int64(whole.count) == payload.byteCount)
        for offset in Self.offsets + [payload.byteCount - 1, payload.byteCount] where offset <= payload.byteCount {
            let tail = try payload.makeReader(startingAt: offset).readToEnd()
            let same = tail == Array(whole[Int(offset)...])
            #expect(same, "offset \(offset): \(tail.count) bytes, expected \(whole.count - Int(offset))")
        }
        // A slice in the middle, as one append of a resumable upload sends it.
        let slice = ByteSourceSlice(payload, offset: 70_000, count: 100_000)
        let sliced = try slice.makeReader().readToEnd()
        #expect(sliced == Array(whole[70_000..<170_000]), "slice: \(sliced.count) bytes")
    }

    /// A plaintext (`none`, binary) payload opened at an offset opens its source there: an S3 part or a
    /// resumed chunk costs only its own bytes, not a read of everything before it.
    @Test func aPlaintextPayloadSeeksInsteadOfReading() throws {
        struct Recording: ByteSource {
            let base = DataSource(ResumeOffsetTests.plaintext)
            let opened = LockedValue<[Int64]>([])
            var byteCount: Int64 { base.byteCount }
            func makeReader() throws -> any ByteReader {
                opened.withLock { $0.append(0) }
                return try base.makeReader()
            }
            func makeReader(startingAt offset: Int64) throws -> any ByteReader {
                opened.withLock { $0.append(offset) }
                return try base.makeReader(startingAt: offset)
            }
        }
        let source = Recording()
        let payload = try Sealer(scheme: .none, key: SealMaterial.random(for: .none).key).seal(source)
        let tail = try ByteSourceSlice(payload, offset: 150_000, count: 20_000).makeReader().readToEnd()
        #expect(tail == Array(Self.plaintext[150_000..<170_000]))
        #expect(source.opened.withLock { $0 } == [150_000])
    }

    @Test func aResumedStreamDecryptsToThePlaintext() throws {
        let path = try Self.file()
        defer { unlink(path) }
        let material = SealMaterial.random(for: .streamGCM)
        let payload = try Sealer(scheme: .streamGCM, key: material.key).seal(
            try FileSource(path: path), material: material, part: 0)
        // Another process, the same material: the first 100 000 bytes from one reader, the rest from a
        // reader opened at the offset.
        let again = try Sealer(scheme: .streamGCM, key: material.key).seal(
            try FileSource(path: path), material: material, part: 0)
        var joined = try ByteSourceSlice(payload, offset: 0, count: 100_000).makeReader().readToEnd()
        joined += try again.makeReader(startingAt: 100_000).readToEnd()
        let opened = try Unsealer(scheme: .streamGCM, key: material.key).unseal(DataSource(joined)).readToEnd()
        #expect(opened == Self.plaintext, "opened \(opened.count) bytes")
    }
}
