import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// The check of a multipart object's checksum against the parts sent: what each kind of store answer
/// concludes, and the CRC-32C arithmetic behind the full-object form.
@Suite("object checksum check")
struct ObjectChecksumCheckTests {
    /// Three parts of known bytes, the last one short, with what a store that took them whole answers.
    struct Upload {
        let parts: [[UInt8]]
        var whole: [UInt8] { parts.flatMap { $0 } }

        init() {
            var generator = SplitMix(seed: 48)
            parts = [70_001, 65_536, 13].map { count in (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) } }
        }

        /// Each part's CRC-32C in base64, as sent.
        var sent: [String] { parts.map { CRC32C.base64(CRC32C.checksum($0)) } }

        /// Each part's MD5 in hex: the bytes' own digest, and the ETag of a store that took them.
        var md5s: [String] { parts.map { hex(try! MD5Digest.hash($0)) } }

        func check(
            reported: String, type: String? = nil, confirmed: [String?]? = nil, etags: [String]? = nil, digests: Bool = false,
            storedSize: Int64? = nil
        ) -> ObjectChecksumCheck {
            let md5s = md5s
            let sent = sent
            var check = ObjectChecksumCheck(
                algorithm: .crc32c, reported: reported, type: type,
                parts: parts.indices.map { index in
                    ObjectChecksumCheck.Part(
                        number: index + 1, size: Int64(parts[index].count), sent: sent[index],
                        confirmed: confirmed.map { $0[index] } ?? sent[index], etag: etags?[index] ?? md5s[index],
                        digest: digests ? md5s[index] : nil)
                },
                expectedSize: Int64(whole.count))
            check.storedSize = storedSize
            return check
        }

        /// S3's composite: the CRC-32C of the parts' CRCs one after the other, then `-3`.
        var composite: String {
            let digests = sent.flatMap { try! Base64.decode($0) }
            return CRC32C.base64(CRC32C.checksum(digests)) + "-\(parts.count)"
        }

        /// The CRC-32C of every byte, summed in one pass (not combined).
        var fullObject: String { CRC32C.base64(CRC32C.checksum(whole)) }
    }

    /// A store's answer, and what the check must conclude from it.
    enum Answer: String, CaseIterable, CustomTestStringConvertible {
        case compositeWithCount, compositeWithoutCount, fullObjectTyped, fullObjectUntyped
        case unexplainedPartsConfirmed, unexplainedPartsConfirmedAndDigestsMatched, unexplainedDigestsMatched
        case unexplainedNothingConfirmed, unexplainedETagsNotMD5
        case partAnsweredOtherChecksum, partETagNotMD5OfBytesSent, objectOfAnotherSize

        var testDescription: String { rawValue }

        /// A value moto sums without its `crc32c` module (CRC-32 of the parts' CRC-32s): no CRC-32C of these bytes.
        static let odd = "m/bvHw==-3"

        func check(_ upload: Upload) -> ObjectChecksumCheck {
            switch self {
            case .compositeWithCount: return upload.check(reported: upload.composite)
            case .compositeWithoutCount: return upload.check(reported: String(upload.composite.prefix { $0 != "-" }))
            case .fullObjectTyped: return upload.check(reported: upload.fullObject, type: "FULL_OBJECT")
            case .fullObjectUntyped: return upload.check(reported: upload.fullObject)
            case .unexplainedPartsConfirmed: return upload.check(reported: Self.odd)
            case .unexplainedPartsConfirmedAndDigestsMatched: return upload.check(reported: Self.odd, digests: true)
            case .unexplainedDigestsMatched:
                return upload.check(reported: Self.odd, confirmed: [nil, nil, nil], digests: true)
            case .unexplainedNothingConfirmed: return upload.check(reported: Self.odd, confirmed: [nil, nil, nil])
            case .unexplainedETagsNotMD5:
                // SSE-KMS: ETags that are no MD5, so the digests are not compared even when summed.
                return upload.check(
                    reported: Self.odd, confirmed: [nil, nil, nil], etags: ["kms-1", "kms-2", "kms-3"], digests: true)
            case .partAnsweredOtherChecksum:
                return upload.check(reported: Self.odd, confirmed: [upload.sent[0], "AAAAAA==", upload.sent[2]])
            case .partETagNotMD5OfBytesSent:
                var etags = upload.md5s
                etags[1] = String(repeating: "0", count: 32)
                return upload.check(reported: Self.odd, etags: etags, digests: true)
            case .objectOfAnotherSize:
                return upload.check(reported: Self.odd, digests: true, storedSize: Int64(upload.whole.count) - 1)
            }
        }

        var expected: ObjectChecksumCheck.Verdict {
            switch self {
            case .compositeWithCount, .compositeWithoutCount: return .composite
            case .fullObjectTyped, .fullObjectUntyped: return .fullObject
            case .unexplainedPartsConfirmed: return .unexplained(partChecksumsConfirmed: true, partDigestsMatched: false)
            case .unexplainedPartsConfirmedAndDigestsMatched:
                return .unexplained(partChecksumsConfirmed: true, partDigestsMatched: true)
            case .unexplainedDigestsMatched: return .unexplained(partChecksumsConfirmed: false, partDigestsMatched: true)
            case .unexplainedNothingConfirmed, .unexplainedETagsNotMD5:
                return .unexplained(partChecksumsConfirmed: false, partDigestsMatched: false)
            case .partAnsweredOtherChecksum:
                return .differs(
                    "the store answered part 2 with another CRC-32C (AAAAAA==) than the one summed over the bytes sent "
                        + "(\(Upload().sent[1]))")
            case .partETagNotMD5OfBytesSent:
                return .differs(
                    "the store's ETag of part 2 (\(String(repeating: "0", count: 32))) is not the MD5 of the bytes sent "
                        + "(\(Upload().md5s[1]))")
            case .objectOfAnotherSize: return .differs("the object holds 135549 bytes where 135550 were sent")
            }
        }
    }

    @Test("each store answer is explained, kept with a note, or shown to hold other bytes", arguments: Answer.allCases)
    func verdicts(_ answer: Answer) throws {
        let upload = Upload()
        let check = answer.check(upload)
        let verdict = check.verdict
        #expect(verdict == answer.expected)
        let note = check.note(verdict)
        switch verdict {
        case .composite, .fullObject, .differs:
            #expect(note == nil)
            #expect((check.explanation != nil) == (verdict == .composite || verdict == .fullObject))
        case .unexplained(let confirmed, let matched):
            let sentence = try #require(note)
            #expect(sentence.hasPrefix("the store's object checksum could not be explained"), "\(sentence)")
            #expect(sentence.hasSuffix(": the object was kept"), "\(sentence)")
            #expect(sentence.contains(Answer.odd) && sentence.contains(upload.composite), "\(sentence)")
            #expect(sentence.contains(upload.fullObject), "\(sentence)")
            #expect(sentence.contains("each part's checksum was confirmed by the store") == confirmed, "\(sentence)")
            #expect(sentence.contains("each part's ETag is the MD5 of the bytes sent") == matched, "\(sentence)")
            #expect(sentence.contains("nothing shows that the bytes differ") == (!confirmed && !matched), "\(sentence)")
        }
    }

    @Test("a store that names the type is held to it: a FULL_OBJECT answer is not taken for the composite")
    func typeIsHonoured() {
        let upload = Upload()
        #expect(upload.check(reported: upload.composite, type: "FULL_OBJECT").explanation == nil)
        #expect(upload.check(reported: upload.fullObject, type: "COMPOSITE").explanation == nil)
        #expect(upload.check(reported: upload.composite, type: "COMPOSITE").explanation == .composite)
    }

    @Test("CRC-32C of two runs combined from their CRCs equals the CRC of the runs summed in one pass")
    func combine() {
        var generator = SplitMix(seed: 7)
        let bytes = (0..<20_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        for split in [0, 1, 7, 8, 9, 4095, 4096, 10_000, 19_999, 20_000] {
            let first = CRC32C.checksum(Array(bytes[..<split]))
            let second = CRC32C.checksum(Array(bytes[split...]))
            #expect(
                CRC32C.combine(first, second, secondLength: Int64(bytes.count - split)) == CRC32C.checksum(bytes),
                "split at \(split)")
        }
        // Lengths past 32 bits (parts of a 5 TiB object): joining A to B then C must equal joining A to B‖C,
        // whatever the CRCs, since both are A·x^(8(|B|+|C|)) ⊕ B·x^(8|C|) ⊕ C.
        let (a, b, c): (UInt32, UInt32, UInt32) = (0x1234_5678, 0x9ABC_DEF0, 0x0F1E_2D3C)
        for (lengthB, lengthC) in [(Int64(3) << 30, (Int64(2) << 30) + 5), (Int64(5) << 40, Int64(1)), (Int64(1), Int64(5) << 40)] {
            #expect(
                CRC32C.combine(CRC32C.combine(a, b, secondLength: lengthB), c, secondLength: lengthC)
                    == CRC32C.combine(a, CRC32C.combine(b, c, secondLength: lengthC), secondLength: lengthB + lengthC),
                "\(lengthB) + \(lengthC)")
        }
    }

    @Test("the full-object CRC-32C of an upload is combined from its parts' CRCs and sizes")
    func fullObjectFromParts() {
        let upload = Upload()
        #expect(upload.check(reported: Answer.odd).fullObject == upload.fullObject)
    }
}

/// A small seeded generator, so that the bytes are the same in every run.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
