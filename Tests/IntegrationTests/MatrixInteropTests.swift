import Attache
import AttacheCore
import AttacheTestSupport
import Foundation
import Testing

/// The `matrix` scheme against a Matrix client library: matrix-nio (PyPI, installed by
/// Scripts/bootstrap.sh) opens what Attache sealed, and Attache opens what matrix-nio sealed.
@Suite("matrix interop", .serialized)
struct MatrixInteropTests {
    static let nioModules = ["nio.crypto.attachments"]

    /// Decrypts every `(ciphertext path, EncryptedFile JSON, expected plaintext SHA-256 hex)` line of a list
    /// with nio's `decrypt_attachment`, given `key.k`, `hashes.sha256` and `iv` as a client does; prints
    /// `ok` or the error per line.
    static let decryptScript = """
        import hashlib, json, sys
        from nio.crypto.attachments import decrypt_attachment
        for line in open(sys.argv[1]):
            path, info, expected = json.loads(line)
            try:
                plain = decrypt_attachment(open(path, "rb").read(), info["key"]["k"], info["hashes"]["sha256"], info["iv"])
                print("ok" if hashlib.sha256(plain).hexdigest() == expected else "wrong-plaintext")
            except Exception as error:
                print(type(error).__name__ + ": " + str(error))
        """

    /// 0 bytes, then 2^(26·i/99) bytes for i = 1…99: from 1 byte to 64 MiB, every size class in between
    /// (about 390 MiB in all).
    static let sizes = [0] + (1..<100).map { Int(pow(2, 26 * Double($0) / 99)) }

    @Test("matrix-nio's decrypt_attachment opens 100 files of 0 B to 64 MiB sealed by Attache; a flipped byte fails its hash")
    func nioOpensWhatWeSeal() async throws {
        let python = try python(with: Self.nioModules)
        let folder = try ScratchFolder(prefix: "attache-matrix")
        defer { folder.remove() }
        #expect(Self.sizes.count == 100 && Self.sizes.last == 64 << 20)
        // One random buffer; each plaintext is a prefix of it, so that sizes differ in content too.
        let random = try [UInt8](FileHandle(forReadingAtPath: "/dev/urandom")!.read(upToCount: 64 << 20)!)
        var list = ""
        for (index, size) in Self.sizes.enumerated() {
            let plaintext = Array(random[..<size])
            let key = AttachmentKey.random(for: .matrix)
            let payload = try Sealer(scheme: .matrix, key: key).seal(DataSource(plaintext))
            let path = folder.path + "/\(index).sealed"
            try payload.write(toFile: path)
            let file = try #require(payload.matrixFile(url: nil, key: key))
            var sealed = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(sealed.count == size)
            let info = String(decoding: try JSONEncoder().encode(file), as: UTF8.self)
            let digest = hex(try SHA256Digest.hash(plaintext))
            list += "[\(jsonString(path)), \(info), \"\(digest)\"]\n"
            if [1, 17, 99].contains(index) {
                // The same file with one ciphertext byte flipped must fail nio's hash check.
                sealed[size / 2] ^= 0x20
                let flipped = try folder.write("\(index).flipped", sealed)
                list += "[\(jsonString(flipped)), \(info), \"\(digest)\"]\n"
            }
        }
        let listPath = try folder.write("list.jsonl", list)
        let script = try folder.write("decrypt.py", Self.decryptScript)
        let output = String(decoding: try await run(python, [script, listPath]), as: UTF8.self)
        let lines = output.split(separator: "\n").map(String.init)
        try #require(lines.count == 103, "\(output)")
        var flippedLines: [String] = []
        var index = 0
        for (number, size) in Self.sizes.enumerated() {
            #expect(lines[index] == "ok", "size \(size): \(lines[index])")
            index += 1
            if [1, 17, 99].contains(number) {
                flippedLines.append(lines[index])
                index += 1
            }
        }
        for line in flippedLines { #expect(line == "EncryptionError: Mismatched SHA-256 digest.", "\(line)") }
    }

    @Test("a file sealed by matrix-nio's encrypt_attachment decrypts with `attache decrypt --scheme matrix --file-info`")
    func weOpenWhatNioSeals() async throws {
        let python = try python(with: Self.nioModules)
        let folder = try ScratchFolder(prefix: "attache-matrix")
        defer { folder.remove() }
        for size in [0, 1, 100_000, 3 << 20] {
            let plaintext = try folder.write("plain-\(size)", (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })
            let script = try folder.write("encrypt.py", """
                import json, sys
                from nio.crypto.attachments import encrypt_attachment
                data, info = encrypt_attachment(open(sys.argv[1], "rb").read())
                open(sys.argv[2], "wb").write(data)
                json.dump(info, open(sys.argv[3], "w"))
                """)
            let sealed = folder.path + "/sealed-\(size)"
            let info = folder.path + "/info-\(size).json"
            try await run(python, [script, plaintext, sealed, info])
            let output = folder.path + "/out-\(size)"
            let result = try await runCommand(
                try attacheBinary(), ["decrypt", sealed, "-o", output, "--scheme", "matrix", "--file-info", info])
            #expect(result.status == 0, "\(result.all)")
            #expect(FileManager.default.contents(atPath: output) == FileManager.default.contents(atPath: plaintext))
            if size > 0 {
                var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: sealed)))
                bytes[bytes.count / 2] ^= 1
                try folder.write("tampered-\(size)", bytes)
                let refused = try await runCommand(
                    try attacheBinary(),
                    ["decrypt", folder.path + "/tampered-\(size)", "-o", folder.path + "/no-\(size)", "--scheme", "matrix",
                     "--file-info", info])
                #expect(refused.status != 0)
                #expect(refused.standardError.contains("authentication-failed"), "\(refused.all)")
                #expect(!FileManager.default.fileExists(atPath: folder.path + "/no-\(size)"))
            }
        }
    }

    @Test("an upload sealed with matrix: the receipt's EncryptedFile (url from the answer) opens the stored file in matrix-nio")
    func receiptOpensStoredFile() async throws {
        let python = try python(with: Self.nioModules)
        let folder = try ScratchFolder(prefix: "attache-matrix")
        defer { folder.remove() }
        let source = try folder.write("notes.bin", (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try await LiveServer.with { server in
            let pipeline = try server.pipeline { $0.seal = SealConfiguration(); $0.seal.scheme = .matrix }
            let receipt = try await pipeline.send(Attachment(path: source))
            #expect(receipt.seal.scheme == .matrix)
            let file = try #require(receipt.seal.encryptedFile)
            let url = try #require(file.url)
            #expect(url == receipt.url)
            #expect(file.key.k != nil)
            let (stored, _) = try await server.get(try #require(URL(string: url)).path)
            let sealedPath = try folder.write("stored", [UInt8](stored))
            let digest = hex(try SHA256Digest.hash([UInt8](try Data(contentsOf: URL(fileURLWithPath: source)))))
            let info = String(decoding: try JSONEncoder().encode(file), as: UTF8.self)
            let list = try folder.write("list.jsonl", "[\(jsonString(sealedPath)), \(info), \"\(digest)\"]\n")
            let script = try folder.write("decrypt.py", Self.decryptScript)
            let output = String(decoding: try await run(python, [script, list]), as: UTF8.self)
            #expect(output == "ok\n")
        }
    }

    func jsonString(_ text: String) -> String {
        String(decoding: try! JSONEncoder().encode(text), as: UTF8.self)
    }
}
