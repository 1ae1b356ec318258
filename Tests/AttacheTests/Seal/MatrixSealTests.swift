import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

/// The `matrix` scheme against the docs/FORMAT.md vectors (computed with `openssl enc -aes-256-ctr` and
/// `openssl dgst -sha256`), and its EncryptedFile object.
@Suite struct MatrixSealTests {
    static let key = rawKey((0..<32).map { UInt8($0) })
    static let iv = hexBytes("f0f1f2f3f4f5f6f70000000000000000")

    struct Vector: Sendable, CustomTestStringConvertible {
        var plaintext: [UInt8]
        var ciphertextHead: String
        var ciphertextTail: String
        var sha256: String
        var testDescription: String { "\(plaintext.count) bytes" }
    }

    static let documented = [
        Vector(plaintext: [], ciphertextHead: "", ciphertextTail: "", sha256: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"),
        Vector(plaintext: Array("matrix attachment".utf8), ciphertextHead: "b66dcec039a9e29e1aa978b880864b8b05",
               ciphertextTail: "", sha256: "1Z8JysF0TmBlida6BA9BF6EABk1M2NhcvXv2youi6Xg"),
        Vector(plaintext: modBytes(1000), ciphertextHead: "db0db8b154d4c4f866d413d0e4e620ea",
               ciphertextTail: "4757df5fd3884160f4c9f92ab24f1996", sha256: "t09LN+La5mT7vIepnhCj+UlTlbFsuY8tJKJff/Sdl2M"),
    ]

    @Test("seals the FORMAT.md vectors byte for byte, and the EncryptedFile says so", arguments: documented)
    func vectors(_ vector: Vector) throws {
        let payload = try Sealer(scheme: .matrix, key: Self.key).seal(DataSource(vector.plaintext), matrixIV: Self.iv)
        #expect(payload.byteCount == Int64(vector.plaintext.count))
        #expect(payload.matrixFile(url: nil, key: Self.key) == nil, "no digest before the end")
        let sealed = try readAll(payload.makeReader(), chunk: 7)
        #expect(sealed.count == vector.plaintext.count)
        #expect(hex(Array(sealed.prefix(vector.ciphertextHead.count / 2))) == vector.ciphertextHead)
        #expect(hex(Array(sealed.suffix(vector.ciphertextTail.count / 2))) == vector.ciphertextTail)
        let file = try #require(payload.matrixFile(url: "mxc://example.org/abc", key: Self.key))
        #expect(file.hashes == ["sha256": vector.sha256])
        #expect(file.iv == "8PHy8/T19vcAAAAAAAAAAA")
        #expect(file.key.k == "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")
        #expect(file.v == "v2")
        #expect(try unseal(sealed, Unsealer(matrixFile: file)) == vector.plaintext)
    }

    @Test("the EncryptedFile is Matrix's JSON object, and its description hides the key")
    func encryptedFileJSON() throws {
        let file = MatrixEncryptedFile(url: "mxc://h/x", key: Self.key, iv: Self.iv, sha256: [UInt8](repeating: 7, count: 32))
        let json = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(file)) as? [String: Any])
        #expect(Set(json.keys) == ["url", "key", "iv", "hashes", "v"])
        let jwk = try #require(json["key"] as? [String: Any])
        #expect(jwk["kty"] as? String == "oct")
        #expect(jwk["alg"] as? String == "A256CTR")
        #expect(jwk["ext"] as? Bool == true)
        #expect(jwk["key_ops"] as? [String] == ["encrypt", "decrypt"])
        #expect(!"\(file)".contains(file.key.k!))
        let back = try JSONDecoder().decode(MatrixEncryptedFile.self, from: JSONEncoder().encode(file))
        #expect(back == file)
    }

    @Test("a flipped ciphertext byte, a wrong hash, a bad key or IV are refused before any plaintext")
    func tampering() throws {
        let plaintext = modBytes(200_000)
        let payload = try Sealer(scheme: .matrix, key: Self.key).seal(DataSource(plaintext), matrixIV: Self.iv)
        var sealed = try readAll(payload.makeReader())
        let file = try #require(payload.matrixFile(url: nil, key: Self.key))
        sealed[123_456] ^= 1
        #expect(sealErrorCode { _ = try unseal(sealed, Unsealer(matrixFile: file)) } == .authenticationFailed)
        var noKey = file
        noKey.key.k = nil
        #expect(sealErrorCode { _ = try Unsealer(matrixFile: noKey) } == .invalidKey)
        var badIV = file
        badIV.iv = "AAAA"
        #expect(sealErrorCode { _ = try Unsealer(matrixFile: badIV) } == .sealedHeaderInvalid)
        var oldVersion = file
        oldVersion.v = "v1"
        #expect(sealErrorCode { _ = try Unsealer(matrixFile: oldVersion) } == .sealedHeaderInvalid)
    }

    @Test("pipeline seal material: the counter block's low 64 bits are zero, each part has its own")
    func materialParts() throws {
        let material = SealMaterial.random(for: .matrix)
        #expect(material.suits(.matrix))
        let sealer = Sealer(scheme: .matrix, key: material.key)
        let first = try sealer.seal(DataSource(modBytes(10)), material: material, part: 0)
        let again = try sealer.seal(DataSource(modBytes(10)), material: material, part: 0)
        let second = try sealer.seal(DataSource(modBytes(10)), material: material, part: 1)
        let iv = try #require(first.matrixIV)
        #expect(iv.count == 16 && iv.suffix(8).allSatisfy { $0 == 0 })
        #expect(first.matrixIV == again.matrixIV)
        #expect(first.matrixIV != second.matrixIV)
        #expect(try readAll(first.makeReader()) == readAll(again.makeReader()))
        #expect(sealErrorCode { _ = try Sealer(scheme: .matrix, key: rawKey(Array(repeating: 1, count: 64))).seal(DataSource([1])) } == .invalidKey)
    }
}
