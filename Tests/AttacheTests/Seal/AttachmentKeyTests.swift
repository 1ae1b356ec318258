import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

@Suite struct AttachmentKeyTests {
    @Test(arguments: [(SealScheme.streamGCM, 32), (.signal, 64), (.legacyCBC, 32), (.legacyECB, 32)])
    func randomKeysHaveTheSchemesSize(_ scheme: SealScheme, count: Int) {
        let a = AttachmentKey.random(for: scheme)
        let b = AttachmentKey.random(for: scheme)
        #expect(a.bytes.count == count)
        #expect(a.base64EncodedString != b.base64EncodedString)
        #expect(a.isPassphrase == scheme.usesPassphrase)
    }

    @Test func writesAndReadsBackAKeyFileWithMode0600() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("k")
        let key = AttachmentKey.random(for: .signal)
        try key.write(toNewFile: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try AttachmentKey(contentsOfFile: path).base64EncodedString == key.base64EncodedString)
    }

    @Test func refusesToOverwriteAnExistingKeyFile() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("k")
        try AttachmentKey.random(for: .streamGCM).write(toNewFile: path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(sealErrorCode { try AttachmentKey.random(for: .streamGCM).write(toNewFile: path) } == .fileUnwritable)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func readsRawAndBase64KeyFiles() throws {
        let directory = TemporaryDirectory()
        let raw = patternBytes(32)
        try Data(raw).write(to: URL(fileURLWithPath: directory.file("raw")))
        try Data((" " + Base64.encode(raw, alphabet: .url) + "\n").utf8).write(to: URL(fileURLWithPath: directory.file("text")))
        #expect(try AttachmentKey(contentsOfFile: directory.file("raw")).bytes.withUnsafeBytes { Array($0) } == raw)
        #expect(try AttachmentKey(contentsOfFile: directory.file("text")).bytes.withUnsafeBytes { Array($0) } == raw)
    }

    @Test(arguments: [Array("not a key".utf8), patternBytes(31), patternBytes(5000), Array(Base64.encode(patternBytes(16)).utf8)])
    func rejectsFilesThatHoldNoKey(_ contents: [UInt8]) throws {
        let directory = TemporaryDirectory()
        try Data(contents).write(to: URL(fileURLWithPath: directory.file("k")))
        #expect(sealErrorCode { _ = try AttachmentKey(contentsOfFile: directory.file("k")) } == .invalidKey)
        #expect(sealErrorCode { _ = try AttachmentKey(contentsOfFile: directory.file("missing")) } == .fileNotFound)
    }

    @Test func readsAKeyFromTheEnvironment() throws {
        let raw = patternBytes(32, seed: 4)
        setenv("ATTACHE_TEST_SEAL_KEY", Base64.encode(raw), 1)
        defer { unsetenv("ATTACHE_TEST_SEAL_KEY") }
        #expect(try AttachmentKey(environmentVariable: "ATTACHE_TEST_SEAL_KEY").bytes.withUnsafeBytes { Array($0) } == raw)
        #expect(sealErrorCode { _ = try AttachmentKey(environmentVariable: "ATTACHE_TEST_SEAL_KEY_UNSET") } == .invalidKey)
    }

    @Test func readsAPassphraseFileWithoutItsLineBreak() throws {
        let directory = TemporaryDirectory()
        try Data("secret\n".utf8).write(to: URL(fileURLWithPath: directory.file("p")))
        let key = try AttachmentKey(passphraseFile: directory.file("p"))
        #expect(key.isPassphrase)
        #expect(key.bytes.withUnsafeBytes { Array($0) } == Array("secret".utf8))
    }

    @Test func neverShowsKeyMaterial() throws {
        let key = AttachmentKey(passphrase: "hunter2-hunter2")
        #expect(!"\(key)".contains("hunter2"))
        #expect(!"\(key.bytes)".contains("hunter2"))
        let gcm = AttachmentKey.random(for: .streamGCM)
        #expect(!"\(gcm)".contains(gcm.base64EncodedString))
        let sealed = try seal(patternBytes(100), Sealer(scheme: .streamGCM, key: gcm))
        do {
            _ = try unseal(sealed, Unsealer(scheme: .streamGCM, key: rawKey(patternBytes(32))))
            Issue.record("a wrong key must fail")
        } catch let error as AttacheError {
            #expect(!error.description.contains(gcm.base64EncodedString))
        }
    }
}

@Suite struct UnsealFileTests {
    @Test func decryptsAFileAndLeavesNothingBehindOnFailure() throws {
        let directory = TemporaryDirectory()
        let key = AttachmentKey.random(for: .streamGCM)
        let plaintext = patternBytes(150_000)
        try Data(plaintext).write(to: URL(fileURLWithPath: directory.file("plain")))
        let payload = try Sealer(scheme: .streamGCM, key: key, transferEncoding: .base64)
            .seal(try FileSource(path: directory.file("plain")))
        try payload.write(toFile: directory.file("sealed"))
        let unsealer = Unsealer(scheme: .streamGCM, key: key, transferEncoding: .base64)
        try unsealer.unseal(fileAt: directory.file("sealed"), to: directory.file("out"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.file("out"))) == Data(plaintext))

        var sealed = try Data(contentsOf: URL(fileURLWithPath: directory.file("sealed")))
        sealed = sealed.prefix(sealed.count - 400)
        try sealed.write(to: URL(fileURLWithPath: directory.file("cut")))
        var thrown: AttacheError?
        do {
            try unsealer.unseal(fileAt: directory.file("cut"), to: directory.file("out2"))
        } catch let error as AttacheError {
            thrown = error
        }
        #expect(thrown?.file == directory.file("cut"))
        #expect(!FileManager.default.fileExists(atPath: directory.file("out2")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["cut", "out", "plain", "sealed"])
    }

    /// Around the file writer's 256 KiB buffer (below it: written directly; above: a writing thread).
    @Test(arguments: [0, 262_083, 262_084, 262_085, 3_000_001])
    func sealedFilesRoundTripAtSizesAroundTheWriterBuffer(count: Int) throws {
        let directory = TemporaryDirectory()
        let key = AttachmentKey.random(for: .streamGCM)
        let plaintext = patternBytes(count, seed: 9)
        try Data(plaintext).write(to: URL(fileURLWithPath: directory.file("plain")))
        let payload = try Sealer(scheme: .streamGCM, key: key).seal(try FileSource(path: directory.file("plain")))
        try payload.write(toFile: directory.file("sealed"))
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.file("sealed"))
        #expect((attributes[.size] as? NSNumber)?.int64Value == payload.byteCount)
        try Unsealer(scheme: .streamGCM, key: key).unseal(fileAt: directory.file("sealed"), to: directory.file("out"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.file("out"))) == Data(plaintext))
    }

    @Test func aFailureAfterManyBuffersLeavesNoOutputFile() throws {
        let directory = TemporaryDirectory()
        let key = AttachmentKey.random(for: .streamGCM)
        let sealed = try seal(patternBytes(3_000_000), Sealer(scheme: .streamGCM, key: key))
        // Tamper with the last segment: the error comes after several buffers have been written.
        var tampered = sealed
        tampered[tampered.count - 100] ^= 1
        try Data(tampered).write(to: URL(fileURLWithPath: directory.file("tampered")))
        #expect(sealErrorCode {
            try Unsealer(scheme: .streamGCM, key: key).unseal(fileAt: directory.file("tampered"), to: directory.file("out"))
        } == .authenticationFailed)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["tampered"])
    }
}
