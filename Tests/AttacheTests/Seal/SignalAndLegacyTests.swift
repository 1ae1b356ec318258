import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

@Suite struct SignalAttachmentTests {
    // Key = AES key 00..1f ‖ HMAC key 20..3f, IV 40..4f, plaintext "signal attachment". The expected blob
    // digest was computed with the openssl command-line tool (enc -aes-256-cbc, dgst -mac HMAC).
    static let vectorKey = rawKey((0..<64).map { UInt8($0) })
    static let vectorIV = (0x40..<0x50).map { UInt8($0) }

    @Test func matchesAnIndependentlyComputedBlob() throws {
        let sealer = Sealer(scheme: .signal, key: Self.vectorKey)
        let payload = try sealer.seal(DataSource("signal attachment"), signalIV: Self.vectorIV)
        #expect(payload.digest == nil)
        let blob = try readAll(payload.makeReader())
        #expect(blob.count == 592)
        #expect(Array(blob[..<16]) == Self.vectorIV)
        #expect(hex(Array(blob[560...])) == "8870e99e880ca16fe2fb527e97d47dd2c8c18cc4dc4d7075f0afb18fc13de466")
        #expect(payload.digest == "6f24a15570a68feb9d9db1b4c57657e5cf72727ef83437bcda6a46449e9daa2c")
    }

    @Test(arguments: [(0, 541), (1, 541), (541, 541), (542, 568), (1000, 1020), (1_000_000, 1_041_743)])
    func bucketPaddingFollowsSignal(plaintext: Int64, padded: Int64) {
        #expect(SignalAttachment.paddedCount(forPlaintextCount: plaintext) == padded)
    }

    @Test(arguments: [0, 1, 17, 541, 542, 65536, 300_001])
    func roundTripsWithTheRealLength(count: Int) throws {
        let k = AttachmentKey.random(for: .signal)
        let plaintext = patternBytes(count)
        for encoding in [TransferEncoding.binary, .base64] {
            let sealer = Sealer(scheme: .signal, key: k, transferEncoding: encoding)
            let payload = try sealer.seal(DataSource(plaintext))
            let sealed = try readAll(payload.makeReader(), chunk: 5000)
            #expect(Int64(sealed.count) == payload.byteCount)
            #expect(try readAll(payload.makeReader()) == sealed)
            let unsealer = Unsealer(scheme: .signal, key: k, transferEncoding: encoding, plaintextByteCount: Int64(count))
            #expect(try unseal(sealed, unsealer) == plaintext)
            let padded = try unseal(sealed, Unsealer(scheme: .signal, key: k, transferEncoding: encoding))
            #expect(Int64(padded.count) == SignalAttachment.paddedCount(forPlaintextCount: Int64(count)))
        }
    }

    @Test func rejectsTamperingTruncationAndAWrongKey() throws {
        let k = AttachmentKey.random(for: .signal)
        let sealed = try seal(patternBytes(5000), Sealer(scheme: .signal, key: k))
        let unsealer = Unsealer(scheme: .signal, key: k)
        var modified = sealed
        modified[100] ^= 1
        #expect(sealErrorCode { _ = try unseal(modified, unsealer) } == .authenticationFailed)
        #expect(sealErrorCode { _ = try unseal(Array(sealed.dropLast(16)), unsealer) } == .authenticationFailed)
        #expect(sealErrorCode { _ = try unseal(Array(sealed[..<40]), unsealer) } == .sealedDataTruncated)
        #expect(sealErrorCode { _ = try unseal(sealed, Unsealer(scheme: .signal, key: .random(for: .signal))) }
            == .authenticationFailed)
        #expect(sealErrorCode { _ = try Sealer(scheme: .signal, key: .random(for: .streamGCM)).seal(DataSource("x")) }
            == .invalidKey)
    }

    @Test func rejectsALengthBeyondThePlaintext() throws {
        let k = AttachmentKey.random(for: .signal)
        let sealed = try seal(patternBytes(600), Sealer(scheme: .signal, key: k))
        let tooShortPadding = Unsealer(scheme: .signal, key: k, plaintextByteCount: 100)
        #expect(sealErrorCode { _ = try unseal(sealed, tooShortPadding) } == .sealedPaddingInvalid)
        let tooLong = Unsealer(scheme: .signal, key: k, plaintextByteCount: 5000)
        #expect(sealErrorCode { _ = try unseal(sealed, tooLong) } == .sealedDataTruncated)
    }
}

@Suite struct LegacyAESTests {
    struct Vector: Sendable {
        let scheme: SealScheme
        let passphrase: String
        let plaintext: String
        let ciphertext: String
    }

    // Computed with the openssl command-line tool: enc -aes-256-cbc -iv 0…0 / enc -aes-128-ecb, with
    // the passphrase bytes zero-padded or cut to the key size.
    static let vectors = [
        Vector(scheme: .legacyCBC, passphrase: "secret", plaintext: "hello, legacy",
               ciphertext: "e66c5d6f9911ed3e2ef35c19e142a4e2"),
        Vector(scheme: .legacyECB, passphrase: "secret", plaintext: "hello, legacy",
               ciphertext: "6a2c95f29b059e8c9e6b628c0abbf7de"),
        Vector(scheme: .legacyCBC, passphrase: "0123456789abcdef0123456789abcdefXYZ",
               plaintext: "The quick brown fox jumps over the lazy dog",
               ciphertext: "08bd9995d03ceec879e26eff0ddac112e82faa6e8d3936edb780301c235f87b436fd02ec91d67adf345271d4a058e18f"),
        Vector(scheme: .legacyECB, passphrase: "0123456789abcdefXYZ",
               plaintext: "The quick brown fox jumps over the lazy dog",
               ciphertext: "08eaec72a2775e8a412e92731f4a4a2e4d8b9161a0f6411f4f7d0970100abbb0fba1ae2433a9674ca3f58a8f2efdfba9"),
    ]

    @Test(arguments: vectors)
    func matchesKnownAnswers(_ vector: Vector) throws {
        let k = AttachmentKey(passphrase: vector.passphrase)
        for encoding in [TransferEncoding.binary, .base64] {
            let sealer = Sealer(scheme: vector.scheme, key: k, transferEncoding: encoding)
            let sealed = try seal(Array(vector.plaintext.utf8), sealer)
            let binary = encoding == .base64 ? try Base64.decode(String(decoding: sealed, as: UTF8.self)) : sealed
            #expect(hex(binary) == vector.ciphertext)
            let opened = try unseal(sealed, Unsealer(scheme: vector.scheme, key: k, transferEncoding: encoding))
            #expect(String(decoding: opened, as: UTF8.self) == vector.plaintext)
        }
    }

    @Test(arguments: [SealScheme.legacyCBC, .legacyECB], [0, 15, 16, 65536, 200_000])
    func roundTrips(scheme: SealScheme, count: Int) throws {
        let k = AttachmentKey(passphrase: "p@ss")
        let plaintext = patternBytes(count)
        let payload = try Sealer(scheme: scheme, key: k).seal(DataSource(plaintext))
        let sealed = try readAll(payload.makeReader())
        #expect(Int64(sealed.count) == payload.byteCount)
        #expect(try unseal(sealed, Unsealer(scheme: scheme, key: k)) == plaintext)
    }

    @Test func rejectsBadPaddingAndPartialBlocks() throws {
        let sealed = try seal(Array("hello, legacy".utf8), Sealer(scheme: .legacyCBC, key: AttachmentKey(passphrase: "secret")))
        let wrong = Unsealer(scheme: .legacyCBC, key: AttachmentKey(passphrase: "Secret"))
        #expect(sealErrorCode { _ = try unseal(sealed, wrong) } == .sealedPaddingInvalid)
        let right = Unsealer(scheme: .legacyCBC, key: AttachmentKey(passphrase: "secret"))
        #expect(sealErrorCode { _ = try unseal(Array(sealed.dropLast(3)), right) } == .sealedDataTruncated)
        #expect(sealErrorCode { _ = try unseal([], right) } == .sealedDataTruncated)
    }

    @Test func noneIsThePlaintext() throws {
        let payload = try Sealer(scheme: .none, key: .random(for: .none)).seal(DataSource("as is"))
        #expect(String(decoding: try readAll(payload.makeReader()), as: UTF8.self) == "as is")
    }
}
