import Testing
@testable import Attache
@testable import AttacheCore

@Suite struct SealPrimitiveTests {
    struct GCMVector: Sendable {
        let key, iv, plaintext, ciphertext, tag: String
    }

    // The GCM specification's AES-256 test cases 13, 14 and 15 (no additional data).
    static let gcmVectors = [
        GCMVector(
            key: String(repeating: "00", count: 32), iv: String(repeating: "00", count: 12), plaintext: "",
            ciphertext: "", tag: "530f8afbc74536b9a963b4f1c4cb738b"),
        GCMVector(
            key: String(repeating: "00", count: 32), iv: String(repeating: "00", count: 12),
            plaintext: String(repeating: "00", count: 16), ciphertext: "cea7403d4d606b6e074ec5d3baf39d18",
            tag: "d0d1c8a799996bf0265b98b5d48ab919"),
        GCMVector(
            key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", iv: "cafebabefacedbaddecaf888",
            plaintext: "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
            ciphertext: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
            tag: "b094dac5d93471bdec1a502270e3cc6c"),
    ]

    @Test(arguments: gcmVectors)
    func aesGCMMatchesTheSpecificationVectors(_ vector: GCMVector) throws {
        let cipher = try CipherContext()
        let plaintext = hexBytes(vector.plaintext)
        var output = [UInt8](repeating: 0, count: plaintext.count + 16)
        try hexBytes(vector.key).withUnsafeBytes { key in
            try hexBytes(vector.iv).withUnsafeBytes { iv in
                try cipher.start(.aes256GCM, encrypt: true, key: key, iv: iv)
            }
        }
        let n = try output.withUnsafeMutableBytes { out in
            var n = 0
            if !plaintext.isEmpty {
                n = try plaintext.withUnsafeBytes {
                    try cipher.update($0.baseAddress!, count: plaintext.count, output: out.baseAddress!)
                }
            }
            let final = cipher.finish(output: out.baseAddress! + n)
            #expect(final.ok)
            n += final.written
            try cipher.tag(into: out.baseAddress! + n, count: 16)
            return n
        }
        #expect(hex(Array(output[..<n])) == vector.ciphertext)
        #expect(hex(Array(output[n...])) == vector.tag)
    }

    struct HKDFVector: Sendable {
        let ikm, salt, info, okm: String
    }

    // RFC 5869 appendix A, test cases 1, 2 and 3 (SHA-256).
    static let hkdfVectors = [
        HKDFVector(
            ikm: String(repeating: "0b", count: 22), salt: "000102030405060708090a0b0c", info: "f0f1f2f3f4f5f6f7f8f9",
            okm: "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"),
        HKDFVector(
            ikm: hex((0x00...0x4f).map { UInt8($0) }), salt: hex((0x60...0xaf).map { UInt8($0) }),
            info: hex((0xb0...0xff).map { UInt8($0) }),
            okm: "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87"),
        HKDFVector(
            ikm: String(repeating: "0b", count: 22), salt: "", info: "",
            okm: "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"),
    ]

    @Test(arguments: hkdfVectors)
    func hkdfMatchesRFC5869(_ vector: HKDFVector) throws {
        let expected = hexBytes(vector.okm)
        let okm = try hexBytes(vector.ikm).withUnsafeBytes {
            try HKDF.sha256(key: $0, salt: hexBytes(vector.salt), info: hexBytes(vector.info), count: expected.count)
        }
        #expect(okm.withUnsafeBytes { Array($0) } == expected)
    }

    @Test func sha256AndHMACMatchKnownAnswers() throws {
        #expect(hex(try SHA256Digest.hash(Array("abc".utf8)))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // RFC 4231 test case 2.
        let mac = try Array("Jefe".utf8).withUnsafeBytes { try HMACSHA256(key: $0) }
        try Array("what do ya want for nothing?".utf8).withUnsafeBytes { try mac.update($0) }
        #expect(hex(try mac.finish()) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
