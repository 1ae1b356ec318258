import Foundation
import Testing
@testable import AttacheCore

/// The `stream-gcm` range reader (``SealedPayload/makeReader(startingAt:)``), which an S3 part and a resumed
/// chunk open: every start offset near the first two and the last two segments, lengths that end before,
/// on and after each segment edge, for payloads of 0, 1, segment−1, segment, segment+1 and 3·segment+17
/// plaintext bytes, binary and base64. A range must be exactly those bytes of a reader from the start, and
/// the whole stream must open to the plaintext.
@Suite struct SealedRangeTests {
    static let segment = 65_536
    static let sizes = [0, 1, segment - 1, segment, segment + 1, 3 * segment + 17]

    struct Sealed {
        let payload: SealedPayload
        let whole: [UInt8]
        let plaintext: [UInt8]
        let material: SealMaterial
    }

    /// A payload sealed from a file (the plaintext source S3 parts open), with durable material.
    static func sealed(_ size: Int, encoding: TransferEncoding, in folder: String) throws -> Sealed {
        let plaintext = (0..<size).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 11) }
        let path = folder + "/plain-\(size)"
        try Data(plaintext).write(to: URL(fileURLWithPath: path))
        let material = SealMaterial.random(for: .streamGCM)
        let payload = try Sealer(scheme: .streamGCM, key: material.key, transferEncoding: encoding).seal(
            try FileSource(path: path), material: material, part: 0)
        let whole = try payload.makeReader().readToEnd()
        return Sealed(payload: payload, whole: whole, plaintext: plaintext, material: material)
    }

    /// The sealed offsets (binary) where each segment begins (the first at the header's end), then the end.
    static func edges(plaintextCount: Int) -> [Int] {
        let segments = max(1, (plaintextCount + segment - 1) / segment)
        let total = Int(StreamGCM.sealedCount(forPlaintextCount: Int64(plaintextCount)))
        return (0..<segments).map { StreamGCM.headerCount + $0 * StreamGCM.segmentCount } + [total]
    }

    /// Every offset in the first two and the last two segments (binary), or near each edge (base64,
    /// whose ranges are read from the start and only need the edges).
    static func starts(_ sealed: Sealed, encoding: TransferEncoding) -> [Int] {
        let total = sealed.whole.count
        guard encoding == .binary else {
            let near = edges(plaintextCount: sealed.plaintext.count).flatMap { edge in
                [-2, -1, 0, 1, 2].map { Base64.encodedCount(Int64(max(0, edge + $0)), padded: true) }
            }
            return Set((near.map { Int($0) } + [0, 1, total - 1, total]).filter { $0 >= 0 && $0 <= total }).sorted()
        }
        let edges = edges(plaintextCount: sealed.plaintext.count)
        let firstTwo = 0..<min(total, edges[min(2, edges.count - 1)])
        let lastTwo = max(0, edges[max(0, edges.count - 3)])...total
        return Set(Array(firstTwo) + Array(lastTwo)).sorted()
    }

    @Test(arguments: [TransferEncoding.binary, .base64], sizes)
    func everyRangeIsTheSameBytesAsTheWholeStream(encoding: TransferEncoding, size: Int) throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sealed = try Self.sealed(size, encoding: encoding, in: folder)
        let total = sealed.whole.count
        #expect(Int64(total) == sealed.payload.byteCount)
        let opened = try Unsealer(scheme: .streamGCM, key: sealed.material.key, transferEncoding: encoding)
            .unseal(DataSource(sealed.whole)).readToEnd()
        #expect(opened == sealed.plaintext)

        let edges = encoding == .binary ? Self.edges(plaintextCount: size) : []
        var failures: [String] = []
        for start in Self.starts(sealed, encoding: encoding) {
            // A short read from every start: the first bytes a part or a resumed chunk sends.
            let head = try read(sealed.payload, from: start, count: min(17, total - start))
            if head != Array(sealed.whole[start..<min(total, start + 17)]) { failures.append("start \(start), 17 bytes") }
        }
        // Lengths that end one before, on and one after every edge (and the end), from starts in each region.
        let ends = Set((edges + [total]).flatMap { [$0 - 1, $0, $0 + 1] }.filter { $0 >= 0 && $0 <= total })
        let someStarts = Set(Self.starts(sealed, encoding: encoding).enumerated().filter { $0.offset % 251 == 0 }.map(\.element)
            + edges.flatMap { [$0 - 1, $0, $0 + 1] }.filter { $0 >= 0 && $0 <= total })
        for start in someStarts.sorted() {
            for end in ends.sorted() where end >= start {
                let bytes = try read(sealed.payload, from: start, count: end - start)
                if bytes != Array(sealed.whole[start..<end]) { failures.append("\(start)..<\(end)") }
            }
        }
        #expect(failures.isEmpty, "\(failures.count) ranges differ, first: \(failures.prefix(8))")
    }

    /// Ranges read as the object store reads a part: through a slice of the payload.
    func read(_ payload: SealedPayload, from start: Int, count: Int) throws -> [UInt8] {
        try ByteSourceSlice(payload, offset: Int64(start), count: Int64(count)).makeReader().readToEnd()
    }

    /// Parts reassembled from readers opened where each part starts (a fresh payload per part, the same
    /// material, as parts sent by another process): the object opens to the plaintext.
    @Test(arguments: sizes)
    func partsFromFreshReadersOpenToThePlaintext(size: Int) throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sealed = try Self.sealed(size, encoding: .binary, in: folder)
        let path = folder + "/plain-\(size)"
        let total = sealed.whole.count
        var cuts = Set(Self.edges(plaintextCount: size).flatMap { [$0 - 1, $0, $0 + 1] }.filter { $0 > 0 && $0 < total })
        cuts.insert(total - 1)
        for cut in cuts.sorted() {
            let again = try Sealer(scheme: .streamGCM, key: sealed.material.key).seal(
                try FileSource(path: path), material: sealed.material, part: 0)
            var joined = try read(sealed.payload, from: 0, count: cut)
            joined += try again.makeReader(startingAt: Int64(cut)).readToEnd()
            #expect(joined == sealed.whole, "cut at \(cut)")
        }
    }

    func temporaryFolder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("attache-ranges-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
