import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

@Suite struct StreamGCMTests {
    static let vectorKey = (0..<32).map { UInt8($0) }
    static let vectorSalt = (0x40..<0x60).map { UInt8($0) }
    static let vectorPrefix = (0xa0..<0xa7).map { UInt8($0) }
    static let header =
        "4154534701404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5fa0a1a2a3a4a5a6bce80b49e4c0fda8dd46f2c17166fbd2"

    struct Vector: Sendable {
        let plaintextCount: Int
        let sealedCount: Int
        let sha256: String
        let tags: [String]
    }

    // The vectors of docs/FORMAT.md: key 00..1f, salt 40..5f, nonce prefix a0..a6, plaintext byte i = i mod 251.
    static let vectors = [
        Vector(plaintextCount: 0, sealedCount: 76, sha256: "29fd3cca6cfa6d40998284ecb0604aa51d9df26f5c4b329727501f7471d6fcac",
               tags: ["36c3961eb529ae45c6f9805fc98104c1"]),
        Vector(plaintextCount: 1, sealedCount: 77, sha256: "35cfb16533d36f10a97cfc27cfe8464d078a0cba3d97d41dd3ab6eb86373e9f7",
               tags: ["0b0c939b76554ef46f01c03d9d2e752b"]),
        Vector(plaintextCount: 65536, sealedCount: 65612, sha256: "09a22fd7048f34a8424d2bcce50aa8bc814a55eba13551f4387c321f5f09ea26",
               tags: ["ede6504ef88cb8f67bd54d0e924e1346"]),
        Vector(plaintextCount: 65537, sealedCount: 65629, sha256: "69e606168bc3fb77bd18ebb7288061d97e7410dfc758ca315a88c433ae2f1f28",
               tags: ["9084426987a5ae13080c85193ef996a1", "1cfbd6e21c5895d390f91d7a19c27cd2"]),
        Vector(plaintextCount: 200_000, sealedCount: 200_124, sha256: "ef703cb998b5a541fc13df144e8dc1f5a1fb7a9105099fb5a1bc1e9f13ecbc4a",
               tags: ["9084426987a5ae13080c85193ef996a1", "eb8cad4de1e3536b23c9279f3545731f",
                      "f3994735203916c380f744d99d1cff4b", "20a69d3b9da03690cc4ede99b5340746"]),
    ]

    static func sealVector(_ plaintext: [UInt8], encoding: TransferEncoding = .binary) throws -> [UInt8] {
        let sealer = Sealer(scheme: .streamGCM, key: rawKey(vectorKey), transferEncoding: encoding)
        let payload = try sealer.seal(DataSource(plaintext), salt: vectorSalt, noncePrefix: vectorPrefix)
        return try readAll(payload.makeReader())
    }

    @Test(arguments: vectors)
    func sealsTheFormatVectors(_ vector: Vector) throws {
        let plaintext = modBytes(vector.plaintextCount)
        let sealed = try Self.sealVector(plaintext)
        #expect(sealed.count == vector.sealedCount)
        #expect(hex(Array(sealed[..<60])) == Self.header)
        #expect(hex(try SHA256Digest.hash(sealed)) == vector.sha256)
        for (index, tag) in vector.tags.enumerated() {
            let end = min(60 + (index + 1) * StreamGCM.segmentCount, sealed.count)
            #expect(hex(Array(sealed[(end - 16)..<end])) == tag)
        }
        #expect(try unseal(sealed, Unsealer(scheme: .streamGCM, key: rawKey(Self.vectorKey))) == plaintext)
    }

    @Test func oneByteVectorInFullAndInBase64() throws {
        let expected = Self.header + "160b0c939b76554ef46f01c03d9d2e752b"
        #expect(hex(try Self.sealVector([0])) == expected)
        let text = try Self.sealVector([0], encoding: .base64)
        #expect(String(decoding: text, as: UTF8.self)
            == "QVRTRwFAQUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVpbXF1eX6ChoqOkpaa86AtJ5MD9qN1G8sFxZvvSFgsMk5t2VU70bwHAPZ0udSs=")
    }

    @Test(arguments: [0, 1, 65535, 65536, 65537, 3 * 65536, 5_000_003])
    func roundTripsAndSealedLengthIsExact(count: Int) throws {
        let plaintext = patternBytes(count)
        let k = AttachmentKey.random(for: .streamGCM)
        for encoding in [TransferEncoding.binary, .base64, .base64URL] {
            let sealer = Sealer(scheme: .streamGCM, key: k, transferEncoding: encoding)
            let payload = try sealer.seal(DataSource(plaintext))
            let sealed = try readAll(payload.makeReader(), chunk: 7919)
            #expect(Int64(sealed.count) == payload.byteCount)
            #expect(payload.byteCount == sealer.sealedByteCount(forPlaintextCount: Int64(count)))
            #expect(try readAll(payload.makeReader()) == sealed, "a second reader must give identical bytes")
            let unsealer = Unsealer(scheme: .streamGCM, key: k, transferEncoding: encoding)
            #expect(try unseal(sealed, unsealer) == plaintext)
        }
    }

    // MARK: - Rejections

    /// A 4-segment file (3 full + 1 partial) and its key.
    static func fixture() throws -> (key: AttachmentKey, plaintext: [UInt8], sealed: [UInt8]) {
        let k = AttachmentKey.random(for: .streamGCM)
        let plaintext = patternBytes(3 * 65536 + 1000)
        return (k, plaintext, try seal(plaintext, Sealer(scheme: .streamGCM, key: k)))
    }

    static func code(_ sealed: [UInt8], _ k: AttachmentKey) -> AttacheError.Code? {
        sealErrorCode { _ = try unseal(sealed, Unsealer(scheme: .streamGCM, key: k)) }
    }

    static func segment(_ sealed: [UInt8], _ index: Int) -> Range<Int> {
        let start = 60 + index * StreamGCM.segmentCount
        return start..<min(start + StreamGCM.segmentCount, sealed.count)
    }

    @Test func rejectsAWrongKey() throws {
        let (_, _, sealed) = try Self.fixture()
        #expect(Self.code(sealed, AttachmentKey.random(for: .streamGCM)) == .invalidKey)
    }

    @Test func rejectsAKeyOfTheWrongSize() {
        let code = sealErrorCode { _ = try Sealer(scheme: .streamGCM, key: rawKey(patternBytes(64))).seal(DataSource("x")) }
        #expect(code == .invalidKey)
    }

    @Test(arguments: [
        ("bad magic", 0), ("bad version", 4),
    ])
    func rejectsAWrongHeader(_ name: String, offset: Int) throws {
        let (k, _, original) = try Self.fixture()
        var sealed = original
        sealed[offset] ^= 0x01
        #expect(Self.code(sealed, k) == .sealedHeaderInvalid, "\(name)")
    }

    @Test func rejectsAModifiedKeyCheckOrSaltAsTheWrongKey() throws {
        let (k, _, original) = try Self.fixture()
        var sealed = original
        sealed[10] ^= 0x80
        #expect(Self.code(sealed, k) == .invalidKey)
    }

    @Test func rejectsEmptyInputAndATruncatedHeader() throws {
        let (k, _, sealed) = try Self.fixture()
        #expect(Self.code([], k) == .sealedHeaderInvalid)
        #expect(Self.code(Array(sealed[..<30]), k) == .sealedDataTruncated)
        #expect(Self.code(Array(sealed[..<60]), k) == .sealedDataTruncated)
    }

    @Test(arguments: 1...3)
    func rejectsTruncationAtEverySegmentBoundary(keptSegments: Int) throws {
        let (k, _, sealed) = try Self.fixture()
        let cut = Array(sealed[..<(60 + keptSegments * StreamGCM.segmentCount)])
        #expect(Self.code(cut, k) == .sealedDataTruncated)
    }

    @Test func rejectsTruncationInsideASegment() throws {
        let (k, _, sealed) = try Self.fixture()
        #expect(Self.code(Array(sealed.dropLast(1)), k) == .authenticationFailed)
        #expect(Self.code(Array(sealed[..<(60 + 10)]), k) == .sealedDataTruncated)
    }

    @Test func rejectsReorderedSegments() throws {
        let (k, _, sealed) = try Self.fixture()
        let s0 = Self.segment(sealed, 0), s1 = Self.segment(sealed, 1)
        var swapped: [UInt8] = Array(sealed[..<60])
        swapped += sealed[s1]
        swapped += sealed[s0]
        swapped += sealed[Self.segment(sealed, 2).lowerBound...]
        #expect(Self.code(swapped, k) == .sealedSegmentMisplaced)
    }

    @Test func rejectsARemovedOrDuplicatedSegment() throws {
        let (k, _, sealed) = try Self.fixture()
        let s1 = Self.segment(sealed, 1)
        var removed = sealed
        removed.removeSubrange(s1)
        #expect(Self.code(removed, k) == .sealedSegmentMisplaced)
        var duplicated = sealed
        duplicated.insert(contentsOf: sealed[s1], at: s1.upperBound)
        #expect(Self.code(duplicated, k) == .sealedSegmentMisplaced)
    }

    @Test func rejectsDataAfterTheFinalSegment() throws {
        let k = AttachmentKey.random(for: .streamGCM)
        let first = try seal(patternBytes(65536), Sealer(scheme: .streamGCM, key: k))
        let appended = first + patternBytes(40, seed: 9)
        #expect(Self.code(appended, k) == .sealedSegmentMisplaced)
    }

    @Test(arguments: [60, 61, 60 + 65536 + 3, 60 + 65552 - 1])
    func rejectsAModifiedByte(offset: Int) throws {
        let (k, _, original) = try Self.fixture()
        var sealed = original
        sealed[offset] ^= 0x01
        #expect(Self.code(sealed, k) == .authenticationFailed)
    }

    @Test func rejectsASegmentSplicedFromAnotherFile() throws {
        let (k, plaintext, sealed) = try Self.fixture()
        // The same plaintext sealed again under the same key: new salt and nonce prefix.
        let other = try seal(plaintext, Sealer(scheme: .streamGCM, key: k))
        var spliced = sealed
        spliced.replaceSubrange(Self.segment(sealed, 1), with: other[Self.segment(other, 1)])
        #expect(Self.code(spliced, k) == .authenticationFailed)
    }

    @Test func releasesNoPlaintextOfAFailedSegment() throws {
        let (k, plaintext, original) = try Self.fixture()
        var sealed = original
        sealed[Self.segment(sealed, 1).lowerBound + 5] ^= 0x01
        let reader = try Unsealer(scheme: .streamGCM, key: k).unseal(DataSource(sealed))
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        #expect(throws: AttacheError.self) {
            while true {
                let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
                if n == 0 { break }
                received += buffer[..<n]
            }
        }
        #expect(received == Array(plaintext[..<65536]))
    }

    @Test func detectsAPlaintextThatChangesLength() throws {
        // The source claims 10 bytes but yields 5: the sealed length promised up front would be wrong.
        struct ShortSource: ByteSource {
            var byteCount: Int64 { 10 }
            func makeReader() throws -> any ByteReader { try DataSource(patternBytes(5)).makeReader() }
        }
        let payload = try Sealer(scheme: .streamGCM, key: .random(for: .streamGCM)).seal(ShortSource())
        #expect(sealErrorCode { _ = try readAll(payload.makeReader()) } == .fileChanged)
    }
}
