import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// Part planning within S3's limits, and the CRC-32C that parts are checked with.
@Suite("multipart part plan")
struct PartPlanTests {
    @Test("16 MiB parts by default, at least 5 MiB, at most 10,000 parts")
    func limits() {
        let gib: Int64 = 1 << 30
        let standard = PartPlan(total: gib)
        #expect(standard.partSize == 16 << 20)
        #expect(standard.count == 64)
        #expect(PartPlan(total: gib, preferred: 1 << 20).partSize == 5 << 20)
        let huge = PartPlan(total: 1 << 40)
        #expect(huge.count <= 10_000)
        #expect(huge.partSize % (1 << 20) == 0)
        #expect(Int64(huge.count) * huge.partSize >= 1 << 40)
        #expect(PartPlan(total: 10).count == 1)
    }

    @Test("the parts cover the payload once, in order; a tiny tail is a part of its own")
    func ranges() {
        for total: Int64 in [5 << 20, (5 << 20) + 1, (23 << 20) + 5_000, (90 << 20) + 23_100, (90 << 20) + 200_000] {
            let plan = PartPlan(total: total, preferred: 5 << 20)
            var next: Int64 = 0
            for number in 1...plan.count {
                let (offset, length) = plan.range(ofPart: number)
                #expect(offset == next)
                #expect(length >= (number < plan.count ? PartPlan.minimumPartSize : 1))
                next = offset + length
            }
            #expect(next == total)
        }
        #expect(PartPlan(total: (90 << 20) + 23_100, preferred: 5 << 20).count == 19)
        #expect(PartPlan(total: (90 << 20) + 23_100, preferred: 5 << 20).range(ofPart: 19).length == 23_100)
    }

    @Test("CRC-32C: the standard check value, and S3's base64 of the big-endian bytes")
    func crc32c() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([]) == 0)
        var split = CRC32C()
        let bytes = (0..<1000).map { UInt8($0 % 251) }
        bytes[..<333].withUnsafeBytes { split.update($0) }
        bytes[333...].withUnsafeBytes { split.update($0) }
        #expect(split.value == CRC32C.checksum(bytes))
        #expect(CRC32C.base64(0xE306_9283) == "4waSgw==")
    }

    @Test("CRC-32C: the CPU's instruction and the tables agree at every alignment and length")
    func crc32cMethodsAgree() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<100_009).map { _ in UInt8.random(in: 0...255, using: &generator) }
        // Long inputs go as three runs side by side (3 × 8 KiB, then 3 × 256 bytes): each side of each edge.
        for start in 0..<9 {
            for count in [0, 1, 7, 8, 9, 63, 767, 768, 769, 1000, 4090, 24_575, 24_576, 24_577, 25_349, 100_000 - start] {
                var either = CRC32C()
                var tables = CRC32C()
                bytes[start..<(start + count)].withUnsafeBytes {
                    either.update($0)
                    tables.updateWithTables($0)
                }
                #expect(either.value == tables.value, "start \(start), count \(count)")
                var split = CRC32C()
                let cut = start + count / 3
                bytes[start..<cut].withUnsafeBytes { split.update($0) }
                bytes[cut..<(start + count)].withUnsafeBytes { split.update($0) }
                #expect(split.value == tables.value, "start \(start), count \(count), cut at \(cut)")
            }
        }
        // This machine's CPU has SSE 4.2: the first test checks the instruction's path against the check value.
        #if arch(x86_64)
        #expect(CRC32C.hardware)
        #endif
    }
}
