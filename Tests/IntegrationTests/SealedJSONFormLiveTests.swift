import Attache
import AttacheCore
import AttacheServer
import Foundation
import AttacheTestSupport
import Testing

/// The encrypted JSON form POST end to end: sent with the transport to `attache-server`'s
/// `POST /echo-sealed`, and opened by a PHP decryptor written from docs/FORMAT.md alone.
@Suite("Encrypted JSON form POST, live", .serialized)
struct SealedJSONFormLiveTests {
    static let message = JSONValue.object([
        "userId": .number(7), "text": .string("hi — 漢字 + / = & %"), "tags": .array([.string("a"), .string("b")]),
    ])

    /// A key file of exactly 32 printable bytes, no line break: the server reads it both as a legacy
    /// passphrase and as a raw 32-byte `stream-gcm` key, so one server serves every scheme.
    static let keyText = "0123456789abcdefghijklmnopqrstuv"

    static func form(_ scheme: SealScheme, field: String?) -> SealedJSONForm {
        let key =
            scheme.usesPassphrase
            ? AttachmentKey(passphrase: keyText) : AttachmentKey(bytes: SecureBytes(Array(keyText.utf8)))
        return SealedJSONForm(scheme: scheme, key: key, field: field)
    }

    static let cases: [(scheme: SealScheme, field: String?)] = [
        (.legacyCBC, nil), (.legacyCBC, "data"), (.legacyECB, nil), (.legacyECB, "payload"), (.streamGCM, nil),
        (.streamGCM, "data"),
    ]

    /// Runs `body` against a reference server whose `--key-file` holds ``keyText``; passes the port and
    /// the key file's path.
    static func withServer(_ body: @Sendable (Int, String) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-sealed-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let keyFile = folder + "/key"
        _ = FileManager.default.createFile(
            atPath: keyFile, contents: Data(keyText.utf8), attributes: [.posixPermissions: 0o600])
        var configuration = ReferenceServerConfiguration(storeDirectory: folder + "/store", port: 0, keyFile: keyFile)
        configuration.logLevel = .critical
        try await withReferenceServerProcess(configuration: configuration) { port in try await body(port, keyFile) }
    }

    static func post(_ url: String, _ body: RequestBody) async throws -> ServerResponse {
        var headers: [HeaderField] = []
        if let type = body.contentType { headers.append(HeaderField(name: "Content-Type", value: type)) }
        return try await CurlTransport.shared.send(
            TransportRequest(method: "POST", url: url, headers: headers, body: body.source).prepared())
    }

    @Test func theReferenceServerOpensEverySchemeAndLayoutAndAnswersTheSameWay() async throws {
        try await Self.withServer { port, _ in
            for (scheme, field) in Self.cases {
                let form = Self.form(scheme, field: field)
                let context = "\(scheme), \(field ?? "bare")"
                let url = "http://127.0.0.1:\(port)/echo-sealed?scheme=\(scheme.rawValue)"

                let sealed = try await Self.post(url, try form.body(json: Self.message))
                #expect(sealed.status == 200, "\(context): \(String(decoding: sealed.body, as: UTF8.self))")
                #expect(sealed.header("Content-Type") == "application/x-www-form-urlencoded; charset=utf-8")
                // The answer has the layout of the request.
                #expect(SealedJSONForm.formFieldName(in: sealed.body) == field, "\(context)")
                #expect(try form.openJSON(sealed.body) == Self.message, "\(context)")

                let plain = try await Self.post(url + "&answer=plain", try form.body(json: Self.message))
                #expect(plain.status == 200)
                #expect(plain.mediaType == "application/json")
                #expect(try JSONValue.parse(plain.body) == Self.message, "\(context)")
            }
        }
    }

    @Test func theReferenceServerAnswers400ToBadForms() async throws {
        try await Self.withServer { port, _ in
            let base = "http://127.0.0.1:\(port)/echo-sealed"
            let good = try Self.form(.legacyCBC, field: nil).body(json: Self.message)
            let wrongKey = try SealedJSONForm(scheme: .legacyCBC, key: AttachmentKey(passphrase: "nope"))
                .body(json: Self.message)
            let notJSON = RequestBody(
                bytes: try Self.form(.legacyCBC, field: nil).sealedText(Array("plain text".utf8)),
                contentType: SealedJSONForm.contentType)
            let gcm = try Self.form(.streamGCM, field: nil).body(json: Self.message)
            var tampered = gcm.inMemoryBytes ?? []
            tampered[100] = tampered[100] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            let attempts: [(String, RequestBody, String)] = [
                (base, wrongKey, "cannot open the sealed form"),
                (base, notJSON, "not JSON"),
                (base, .bytes(Array("%%%not base64".utf8)), "cannot open the sealed form (base64-invalid)"),
                (base, .bytes([]), "empty"),
                (base + "?scheme=signal", good, "scheme must be"),
                (base + "?scheme=stream-gcm", .bytes(tampered), "(authentication-failed)"),
                (base + "?field=other", try Self.form(.legacyCBC, field: "data").body(json: Self.message), "no field named"),
            ]
            for (url, body, expected) in attempts {
                let response = try await Self.post(url, body)
                #expect(response.status == 400, "\(url): \(response.status)")
                #expect(response.mediaType == "application/json")
                let answer = try JSONValue.parse(response.body)
                #expect(answer["errorCode"] == .number(400))
                let message = answer["message"]?.stringValue ?? ""
                // legacy-cbc has no authentication: a wrong key fails the padding check, except when the
                // garbage it decrypts to happens to end in valid padding (about 1 time in 256, with the
                // random IV); then the body is not JSON. Either is the refusal of a form it cannot open.
                let alsoRight = expected == "cannot open the sealed form" && message.contains("the decrypted body is not JSON")
                #expect(message.contains(expected) || alsoRight, "\(url): \(message)")
            }
        }
    }

    @Test func theServerWithoutAKeyAnswers501() async throws {
        try await LiveServer.with { server in
            let response = try await Self.post(
                "http://127.0.0.1:\(server.port)/echo-sealed", try Self.form(.legacyCBC, field: nil).body(json: .null))
            #expect(response.status == 501)
        }
    }

    /// A PHP decryptor written from docs/FORMAT.md (openssl_decrypt, hash_hkdf) opens what the library
    /// sends, in every scheme and layout, and the documented vectors.
    @Test func aDecryptorWrittenFromTheSpecificationOpensEveryBody() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-php-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let keyFile = folder + "/key"
        _ = FileManager.default.createFile(atPath: keyFile, contents: Data(Self.keyText.utf8), attributes: [.posixPermissions: 0o600])
        let script = ServiceProcess.tools + "/sealed_form_open.php"
        let plaintext = try Self.message.jsonBytes()
        for (scheme, field) in Self.cases {
            let body = try Self.form(scheme, field: field).body(json: Self.message)
            // A large message too, so stream-gcm has several segments.
            let large = JSONValue.object(["blob": .string(String(repeating: "x", count: 150_000))])
            let largeBody = try Self.form(scheme, field: field).body(json: large)
            var arguments = ["-n", script, scheme.rawValue, keyFile]
            if let field { arguments.append(field) }
            let opened = try await run("php", arguments, input: Data(body.inMemoryBytes ?? []))
            #expect(Array(opened) == plaintext, "\(scheme), \(field ?? "bare")")
            let openedLarge = try await run("php", arguments, input: Data(largeBody.inMemoryBytes ?? []))
            #expect(Array(openedLarge) == (try large.jsonBytes()), "\(scheme), \(field ?? "bare"), large")
        }

        // The vectors of docs/FORMAT.md.
        let passphrase = folder + "/passphrase"
        let gcmKey = folder + "/gcm"
        _ = FileManager.default.createFile(atPath: passphrase, contents: Data("attache-legacy-passphrase".utf8))
        _ = FileManager.default.createFile(atPath: gcmKey, contents: Data((0..<32).map { UInt8($0) }))
        let vectors: [(String, String, String)] = [
            ("legacy-cbc", passphrase, "gEKuQTSj76vPwOIyZZucsge1R43r/unAFzz0aZLVxL4="),
            ("legacy-ecb", passphrase, "data=8U7cepTZ8ryDOsBFQllu0h%2FIwIB874CsV9BMK%2FFGOr0%3D"),
            (
                "stream-gcm", gcmKey,
                "data=QVRTRwE0AzVlAbMna7PWpNwcbGN9X7g5nSKDm%2BLzzdItMiZ5YvPt4j4z%2B8L%2FwxtMihURTZNW%2FvkGONgvCRh2NwQTbFGxCZ7Zdfs8%2F0vuPXdnSnw75IiDOG6KashruniS91Gkvw%3D%3D"
            ),
        ]
        for (scheme, key, body) in vectors {
            let opened = try await run("php", ["-n", script, scheme, key], input: Data(body.utf8))
            #expect(String(decoding: opened, as: UTF8.self) == #"{"text":"hi","userId":7}"#, "\(scheme)")
        }

        // And it refuses a tampered stream-gcm body, as the specification requires.
        var tampered = try Base64.decode(String(decoding: try Self.form(.streamGCM, field: nil).sealedText(plaintext), as: UTF8.self))
        tampered[65] ^= 0x40
        _ = FileManager.default.createFile(atPath: folder + "/tampered", contents: Data(Base64.encode(tampered).utf8))
        let refused = try await runCommand(
            "/usr/bin/env", ["sh", "-c", "php -n '\(script)' stream-gcm '\(keyFile)' < '\(folder)/tampered'"])
        #expect(refused.status != 0)
        #expect(refused.standardError.contains("does not authenticate"))
    }
}
