import Attache
import AttacheServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import AttacheTestSupport
import Testing

/// The reference server started with a key (`--key-file`): it opens sealed uploads, stores the ones
/// that verify and answers 422 to the rest.
@Suite struct SealedUploadVerificationTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var scheme: SealScheme
        var encoding: TransferEncoding
        var testDescription: String { "\(scheme) \(encoding)" }
    }

    static let cases = [
        Case(scheme: .streamGCM, encoding: .binary), Case(scheme: .streamGCM, encoding: .base64),
        Case(scheme: .signal, encoding: .base64URL), Case(scheme: .legacyCBC, encoding: .binary),
    ]

    @Test("a sealed upload from the pipeline is decrypted and verified", arguments: cases)
    func pipelineUploadVerifies(_ testCase: Case) async throws {
        let key = Self.key(for: testCase.scheme)
        let plaintext = randomBytes(200_000)
        let file = try TemporaryFile(name: "notes.bin", bytes: plaintext)
        defer { file.remove() }
        try await KeyedServer.with(key: key) { server in
            var seal = SealConfiguration()
            seal.scheme = testCase.scheme
            seal.transferEncoding = testCase.encoding
            seal.key = key
            let receipt = try await server.pipeline(seal: seal).send(Attachment(path: file.path))
            let check = try #require(receipt.server["sealed"])
            #expect(check["verified"] == .bool(true))
            #expect(check["scheme"]?.stringValue == testCase.scheme.rawValue)
            #expect(check["plaintextSize"]?.intValue == plaintext.count)
            #expect(check["plaintextSha256"]?.stringValue == (try await sha256Hex(plaintext)))
            if testCase.scheme == .signal {
                #expect(check["digest"]?.stringValue == receipt.seal.digest)
            }
            // The store keeps what was sent, not the plaintext.
            let fileId = try #require(receipt.fileId)
            let stored = try Data(contentsOf: URL(fileURLWithPath: server.store + "/files/" + fileId))
            #expect(Int64(stored.count) == receipt.sentByteCount)
            #expect(stored != Data(plaintext))
        }
    }

    @Test("a tampered stream-gcm upload is refused with 422 and not stored")
    func tamperedUploadIsRejected() async throws {
        let key = Self.key(for: .streamGCM)
        var tampered = try Self.seal(randomBytes(150_000), scheme: .streamGCM, key: key)
        tampered[tampered.count / 2] ^= 0x01
        let sealed = tampered
        try await KeyedServer.with(key: key) { server in
            let (status, body) = try await server.post(
                fields: ["scheme": "stream-gcm", "encoding": "binary", "plaintextSize": "150000"], file: sealed)
            #expect(status == 422)
            #expect(body["errorCode"]?.intValue == 422)
            #expect(body["message"]?.stringValue?.contains("authentication-failed") == true)
            #expect(try await server.storedFileCount() == 0)
        }
    }

    @Test("an upload sealed with another key is refused with 422, through the pipeline too")
    func wrongKeyIsRejected() async throws {
        let plaintext = randomBytes(10_000)
        let file = try TemporaryFile(bytes: plaintext)
        defer { file.remove() }
        try await KeyedServer.with(key: Self.key(for: .streamGCM)) { server in
            let other = Self.key(for: .streamGCM)
            let (status, body) = try await server.post(
                fields: ["scheme": "stream-gcm", "encoding": "binary", "plaintextSize": "10000"],
                file: try Self.seal(plaintext, scheme: .streamGCM, key: other))
            #expect(status == 422)
            #expect(body["message"]?.stringValue?.contains("invalid-key") == true)

            var seal = SealConfiguration()
            seal.key = other
            var thrown: AttacheError?
            do {
                _ = try await server.pipeline(seal: seal).send(Attachment(path: file.path))
            } catch let error as AttacheError {
                thrown = error
            }
            #expect(thrown?.code == .rejected)
            #expect(try await server.storedFileCount() == 0)
        }
    }

    @Test("a signal upload whose digest field does not match its blob is refused")
    func signalDigestMismatchIsRejected() async throws {
        let key = Self.key(for: .signal)
        let sealed = try Self.seal(randomBytes(5_000), scheme: .signal, key: key)
        try await KeyedServer.with(key: key) { server in
            let wrongDigest = String(repeating: "ab", count: 32)
            let (status, body) = try await server.post(
                fields: ["scheme": "signal", "encoding": "binary", "plaintextSize": "5000", "digest": wrongDigest],
                file: sealed)
            #expect(status == 422)
            #expect(body["message"]?.stringValue?.contains("digest-mismatch") == true)
            let (goodStatus, goodBody) = try await server.post(
                fields: ["scheme": "signal", "encoding": "binary", "plaintextSize": "5000", "digest": try sha256Hex(sealed)],
                file: sealed)
            #expect(goodStatus == 200)
            #expect(goodBody["data"]?["sealed"]?["verified"] == .bool(true))
        }
    }

    @Test("a plaintext size that contradicts the sealed data is refused")
    func plaintextSizeMismatchIsRejected() async throws {
        let key = Self.key(for: .streamGCM)
        let sealed = try Self.seal(randomBytes(1_000), scheme: .streamGCM, key: key)
        try await KeyedServer.with(key: key) { server in
            let (status, body) = try await server.post(
                fields: ["scheme": "stream-gcm", "encoding": "binary", "plaintextSize": "999"], file: sealed)
            #expect(status == 422)
            #expect(body["message"]?.stringValue?.contains("plaintext-size-mismatch") == true)
        }
    }

    static func key(for scheme: SealScheme) -> AttachmentKey {
        scheme.usesPassphrase ? AttachmentKey(passphrase: "correct horse \(UUID().uuidString)") : .random(for: scheme)
    }

    static func seal(_ plaintext: [UInt8], scheme: SealScheme, key: AttachmentKey) throws -> [UInt8] {
        let payload = try Sealer(scheme: scheme, key: key).seal(DataSource(plaintext))
        let reader = try payload.makeReader()
        var out = [UInt8](repeating: 0, count: Int(payload.byteCount))
        let n = try out.withUnsafeMutableBytes { try reader.readFully(into: $0) }
        #expect(n == out.count)
        return out
    }
}

/// A reference server on 127.0.0.1 holding a key, with its own store and key file.
struct KeyedServer: Sendable {
    let port: Int
    let store: String

    static func with(key: AttachmentKey, _ body: @Sendable (KeyedServer) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attache-keyed-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keyFile = directory + "/server.key"
        if key.isPassphrase {
            var passphrase = [UInt8](repeating: 0, count: key.bytes.count)
            key.bytes.withUnsafeBytes { passphrase = Array($0) }
            try Data(passphrase).write(to: URL(fileURLWithPath: keyFile))
        } else {
            try key.write(toNewFile: keyFile)
        }
        var configuration = ReferenceServerConfiguration(storeDirectory: directory + "/store", port: 0, keyFile: keyFile)
        configuration.logLevel = .critical
        let store = configuration.storeDirectory
        try await withReferenceServerProcess(configuration: configuration) { port in
            try await body(KeyedServer(port: port, store: store))
        }
    }

    func pipeline(seal: SealConfiguration) throws -> AttachmentPipeline {
        var configuration = PipelineConfiguration(url: "http://127.0.0.1:\(port)/upload")
        configuration.connection.retry = RetryPolicy(
            maximumAttempts: 1, initialDelay: .milliseconds(20), maximumDelay: .milliseconds(20), budget: .seconds(30))
        configuration.seal = seal
        return try AttachmentPipeline(configuration: configuration)
    }

    /// POSTs a multipart form with `fields` and one file part named `file`; returns the status and JSON.
    func post(fields: [String: String], file: [UInt8]) async throws -> (Int, JSONValue) {
        let boundary = "attache-test-\(UUID().uuidString)"
        var body = Data()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8))
        }
        body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n".utf8))
        body.append(Data(file))
        body.append(Data("\r\n--\(boundary)--\r\n".utf8))
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/upload")!)
        request.httpMethod = "POST"
        request.setValue("multipart/form-data; boundary=\(boundary)", forHTTPHeaderField: "Content-Type")
        let (data, response) = try await URLSession.shared.upload(for: request, from: body)
        let json = try JSONDecoder().decode(JSONValue.self, from: data)
        return ((response as! HTTPURLResponse).statusCode, json)
    }

    /// The number of stored files, from `GET /stats`.
    func storedFileCount() async throws -> Int {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/stats")!)
        return try JSONDecoder().decode(JSONValue.self, from: data)["files"]?.intValue ?? -1
    }
}
