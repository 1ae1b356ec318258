import AttacheServer
import Foundation
import AttacheTestSupport
import Testing

/// `attache request` against servers that are not ours: PHP's built-in server running
/// `Tools/request_echo.php` (PHP's own parser reads the nested parameters and reports what it made of
/// them), and nginx (`Tools/nginx-sink.sh`) over TLS.
@Suite("attache request against PHP and nginx", .serialized)
struct RequestCommandTests {

    /// Runs `body` with the PHP echo server (``ReceiverProcess/withPHPEcho(_:)``).
    func withEcho<T>(_ body: (String) async throws -> T) async throws -> T {
        try await ReceiverProcess.withPHPEcho(body)
    }

    /// Runs `attache request` in this process; with `-v` or a trace level as the built binary, since log
    /// lines written on the transport's own threads reach only the process's standard error, and a test of
    /// what the log shows must see every one.
    func attache(_ arguments: [String], environment: [String: String] = [:]) async throws -> CommandResult {
        if arguments.contains("-v") || arguments.contains("--log-level") {
            return try await runCommand(try attacheBinary(), ["request"] + arguments, environment: environment)
        }
        return await AttacheTestSupport.attache(["request"] + arguments, environment: environment)
    }

    func json(_ text: String) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        return try #require(object as? [String: Any], "not a JSON object: \(text)")
    }

    @Test("GET with nested query parameters: PHP reads the same structure; system parameters join, the caller's value wins")
    func nestedQuery() async throws {
        let run = try await withEcho { base in
            try await attache([
                base + "/list", "--query", "name=bang", "--query", "phone[mobile]=1", "--query", "families[]=father",
                "--query", "families[]=mother", "--query", "app=mine", "--system-param", "app=system",
                "--system-param", "v=5.2",
            ])
        }
        #expect(run.status == 0, "\(run.standardError)")
        let echo = try json(run.standardOutput)
        #expect(echo["method"] as? String == "GET")
        let query = try #require(echo["query"] as? [String: Any])
        #expect(query["name"] as? String == "bang")
        #expect((query["phone"] as? [String: String]) == ["mobile": "1"])
        #expect((query["families"] as? [String]) == ["father", "mother"])
        #expect(query["app"] as? String == "mine")
        #expect(query["v"] as? String == "5.2")
        let headers = try #require(echo["headers"] as? [String: String])
        #expect(headers["User-Agent"]?.hasPrefix("attache/") == true)
        #expect(headers["Accept-Language"] != nil)
    }

    @Test("POST form with nested names and system parameters in the body")
    func nestedForm() async throws {
        let run = try await withEcho { base in
            try await attache([
                "POST", base + "/form", "--form", "user[name]=Ann Lee", "--form", "user[tags][]=a", "--form", "user[tags][]=b",
                "--form", "note=50% & more", "--system-param", "platform=linux",
            ])
        }
        #expect(run.status == 0, "\(run.standardError)")
        let echo = try json(run.standardOutput)
        let form = try #require(echo["form"] as? [String: Any])
        let user = try #require(form["user"] as? [String: Any])
        #expect(user["name"] as? String == "Ann Lee")
        #expect((user["tags"] as? [String]) == ["a", "b"])
        #expect(form["note"] as? String == "50% & more")
        #expect(form["platform"] as? String == "linux")
        #expect((echo["query"] as? [String: Any])?.isEmpty ?? true)
    }

    @Test("JSON POST with httpie-style typed fields; PUT with a JSON body file")
    func jsonBodies() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-request-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data(#"{"items":[1,2,3],"ok":true}"#.utf8).write(to: URL(fileURLWithPath: folder + "/body.json"))
        let (fields, file) = try await withEcho { base in
            (
                try await attache([
                    base + "/json", "--json-field", "name=Ann", "--json-field", "age:=37", "--json-field", "admin:=false",
                    "--json-field", #"tags:=["x","y"]"#, "--json-field", "none:=null",
                ]),
                try await attache(["PUT", base + "/file", "--json-body", "@" + folder + "/body.json"])
            )
        }
        #expect(fields.status == 0, "\(fields.standardError)")
        let echo = try json(fields.standardOutput)
        #expect(echo["method"] as? String == "POST")
        let body = try #require(echo["json"] as? [String: Any])
        #expect(body["name"] as? String == "Ann")
        #expect(body["age"] as? Int == 37)
        #expect(body["admin"] as? Bool == false)
        #expect((body["tags"] as? [String]) == ["x", "y"])
        #expect(body["none"] is NSNull)
        #expect((echo["headers"] as? [String: String])?["Content-Type"]?.hasPrefix("application/json") == true)

        #expect(file.status == 0, "\(file.standardError)")
        let put = try json(file.standardOutput)
        #expect(put["method"] as? String == "PUT")
        #expect((put["json"] as? [String: Any])?["items"] as? [Int] == [1, 2, 3])
    }

    @Test("--plist-body sends the JSON file as an XML property list that Foundation's parser reads back")
    func plistBody() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-request-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data(#"{"name":"Ann & <Bob>","age":37,"ratio":0.5,"ok":true,"tags":["a","b"]}"#.utf8)
            .write(to: URL(fileURLWithPath: folder + "/body.json"))
        let run = try await withEcho { base in try await attache(["POST", base + "/plist", "--plist-body", "@" + folder + "/body.json"]) }
        #expect(run.status == 0, "\(run.standardError)")
        let echo = try json(run.standardOutput)
        #expect((echo["headers"] as? [String: String])?["Content-Type"] == "application/x-plist")
        let body = try #require(echo["body"] as? String)
        let plist = try PropertyListSerialization.propertyList(from: Data(body.utf8), format: nil)
        let dictionary = try #require(plist as? [String: Any])
        #expect(dictionary["name"] as? String == "Ann & <Bob>")
        #expect(dictionary["age"] as? Int == 37)
        #expect(dictionary["ratio"] as? Double == 0.5)
        #expect(dictionary["ok"] as? Bool == true)
        #expect(dictionary["tags"] as? [String] == ["a", "b"])
    }

    @Test("a gzip-compressed answer is decompressed; --json shows status, headers, the parsed body and timings")
    func gzipAnswer() async throws {
        let run = try await withEcho { base in try await attache([base + "/gzip?x=1", "--json"]) }
        #expect(run.status == 0, "\(run.standardError)")
        let object = try json(run.standardOutput)
        #expect(object["status"] as? Int == 200)
        #expect((object["headers"] as? [String: String])?["content-encoding"] == "gzip")
        #expect(object["bodyEncoding"] as? String == "json")
        let body = try #require(object["body"] as? [String: Any])
        #expect(body["path"] as? String == "/gzip")
        let timings = try #require(object["timings"] as? [String: Any])
        let total = try #require(timings["totalMs"] as? Double)
        let firstByte = try #require(timings["firstByteMs"] as? Double)
        #expect(total >= firstByte)
        // The wire carried the compressed bytes: fewer than the text it decoded to.
        let received = try #require(timings["bytesReceived"] as? Int)
        let text = try JSONSerialization.data(withJSONObject: body)
        #expect(received > 0 && received < text.count)
    }

    @Test("-o FILE streams a compressed answer to disk, decoded; --no-compressed gets it as it is")
    func outputFile() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-request-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let count = 3_000_000
        let runs = try await withEcho { base in
            [
                try await attache([base + "/bytes?n=\(count)", "-o", folder + "/a.bin", "--max-response-size", "1000"]),
                try await attache([base + "/bytes?n=\(count)", "-o", folder + "/b.bin", "--no-compressed"]),
            ]
        }
        for run in runs { #expect(run.status == 0, "\(run.standardError)") }
        let expected = Data(String(repeating: "0123456789", count: count / 10).utf8)
        #expect(FileManager.default.contents(atPath: folder + "/a.bin") == expected)
        #expect(FileManager.default.contents(atPath: folder + "/b.bin") == expected)
        #expect(runs[0].standardOutput.isEmpty)
    }

    @Test("a 4xx answer exits 77 with its body printed; a 503 after the retries exits 75")
    func exitStatuses() async throws {
        let (rejected, unavailable) = try await withEcho { base in
            (
                try await attache([base + "/missing?status=404", "--json"]),
                try await attache([base + "/busy?status=503", "--attempts", "2"])
            )
        }
        #expect(rejected.status == 77)
        #expect(try json(rejected.standardOutput)["status"] as? Int == 404)
        #expect(rejected.standardError.contains("404"))
        #expect(unavailable.status == 75)
        #expect(unavailable.standardOutput.contains("\"path\":\"/busy\""))
        #expect(unavailable.standardError.contains("503"))
    }

    @Test("-v and trace logs never show the secrets the server received")
    func logsRedacted() async throws {
        let token = "bearer-\(UUID().uuidString)"
        let password = "pw-\(UUID().uuidString)"
        let querySecret = "q-\(UUID().uuidString)"
        let sign = "sig-\(UUID().uuidString)"
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-request-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "Cookie: sid=cookie-\(sign)\n".write(toFile: folder + "/headers", atomically: true, encoding: .utf8)
        let runs = try await withEcho { base in
            [
                try await attache(
                    ["POST", base + "/login?token=\(querySecret)&page=1", "--form", "user=ann", "--form", "password=\(password)",
                     "--form", "auth[sign]=\(sign)", "--header", "@" + folder + "/headers", "--bearer-env", "API_TOKEN",
                     "--log-level", "trace"],
                    environment: ["API_TOKEN": token]),
                try await attache(
                    [base + "/gzip?token=\(querySecret)", "--bearer-env", "API_TOKEN", "-v"], environment: ["API_TOKEN": token]),
            ]
        }
        for run in runs { #expect(run.status == 0, "\(run.standardError)") }
        // The server got every secret: they were in the requests the log lines describe.
        let echo = try json(runs[0].standardOutput)
        #expect((echo["form"] as? [String: Any])?["password"] as? String == password)
        #expect((echo["headers"] as? [String: String])?["Authorization"] == "Bearer \(token)")
        let log = runs.map(\.standardError).joined(separator: "\n")
        for secret in [token, password, querySecret, sign] {
            #expect(!log.contains(secret), "a secret reached the log")
        }
        #expect(log.contains("POST http://127.0.0.1:"))
        #expect(log.contains("token=REDACTED&page=REDACTED → 200"))
        #expect(log.contains("user=ann"))
        #expect(log.contains("curl -X POST"))
        #expect(log.contains("first-byte"))
    }

    @Test("--seal-json: the reference server opens the encrypted form and answers it sealed; the answer is decrypted")
    func sealedJSON() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-request-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Base64 of 32 random bytes: a stream-gcm key, and as text a passphrase for the legacy schemes.
        let passphrase = folder + "/server.key"
        try Data(Data(randomBytes(32)).base64EncodedString().utf8).write(to: URL(fileURLWithPath: passphrase))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passphrase)
        let wrong = folder + "/wrong.pass"
        try Data("not the server's passphrase".utf8).write(to: URL(fileURLWithPath: wrong))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: wrong)
        var configuration = ReferenceServerConfiguration(storeDirectory: folder + "/store")
        configuration.port = 0
        configuration.logLevel = .critical
        configuration.keyFile = passphrase
        let runs = try await withReferenceServerProcess(configuration: configuration) { port in
            let url = "http://127.0.0.1:\(port)/echo-sealed"
            return [
                try await attache([
                    "POST", url, "--json-field", "userId:=7", "--json-field", "text=hi", "--seal-json", "legacy-cbc",
                    "--key-file", passphrase, "--json", "--log-level", "trace",
                ]),
                try await attache([
                    "POST", url + "?scheme=legacy-ecb&field=data", "--json-field", "text=named", "--seal-json", "legacy-ecb",
                    "--seal-field", "data", "--key-file", passphrase,
                ]),
                try await attache(["POST", url, "--json-field", "text=x", "--seal-json", "legacy-cbc", "--key-file", wrong]),
                try await attache(
                    ["POST", url + "?scheme=stream-gcm", "--json-body", #"{"n":[1,2],"gcm":true}"#, "--seal-json", "stream-gcm", "--key-env", "SEAL_KEY"],
                    environment: ["SEAL_KEY": try String(contentsOfFile: passphrase, encoding: .utf8)]),
            ]
        }
        #expect(runs[0].status == 0, "\(runs[0].standardError)")
        let object = try json(runs[0].standardOutput)
        #expect(object["bodyEncoding"] as? String == "json")
        let body = try #require(object["body"] as? [String: Any])
        #expect(body["userId"] as? Int == 7)
        #expect(body["text"] as? String == "hi")
        // The sealed body is never shown, only its size; the plaintext is not in the request log either.
        #expect(runs[0].standardError.contains("bytes, secret>"))
        #expect(!runs[0].standardError.contains("userId"))

        #expect(runs[1].status == 0, "\(runs[1].standardError)")
        #expect(try json(runs[1].standardOutput)["text"] as? String == "named")

        // A wrong passphrase: the server cannot open the form and refuses it. legacy-cbc has no
        // authentication: a wrong key fails the padding check, except when the garbage it decrypts to
        // happens to end in valid padding (about 1 time in 256, with the random IV), and then the body is
        // not JSON. Either way the form is refused.
        #expect(runs[2].status == 77, "\(runs[2].all)")
        #expect(
            runs[2].standardOutput.contains("cannot open the sealed form")
                || runs[2].standardOutput.contains("the decrypted body is not JSON"), "\(runs[2].all)")

        #expect(runs[3].status == 0, "\(runs[3].all)")
        #expect(runs[3].standardOutput == #"{"gcm":true,"n":[1,2]}"#)
    }

    @Test("--endpoint: the config file's headers and credentials go with the request; the token is not logged")
    func endpointFromConfigFile() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attache-request-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let config = "[endpoints.api]\nurl = \"http://127.0.0.1:9/unused\"\nbearer-env = \"API_TOKEN\"\nheaders = { \"X-Tenant\" = \"acme\" }\n"
        try Data(config.utf8).write(to: URL(fileURLWithPath: folder + "/config.toml"))
        let token = "endpoint-\(UUID().uuidString)"
        let run = try await withEcho { base in
            try await attache(
                [base + "/e", "--endpoint", "api", "--config", folder + "/config.toml", "-v"], environment: ["API_TOKEN": token])
        }
        #expect(run.status == 0, "\(run.standardError)")
        let headers = try #require(try json(run.standardOutput)["headers"] as? [String: String])
        #expect(headers["Authorization"] == "Bearer \(token)")
        #expect(headers["X-Tenant"] == "acme")
        #expect(run.standardError.contains("GET http://127.0.0.1:"))
        #expect(!run.standardError.contains(token))
    }

    @Test("usage errors exit 64")
    func usage() async throws {
        for arguments in [["ftp://x/y"], ["GET", "http://127.0.0.1:9/", "extra"], ["http://127.0.0.1:9/", "--form", "novalue"],
                          ["http://127.0.0.1:9/", "--form", "a=1", "--json-field", "b=2"],
                          ["http://127.0.0.1:9/", "--query", "a=1", "--query", "a=2"]] {
            let run = try await attache(arguments)
            #expect(run.status == 64, "\(arguments): \(run.all)")
        }
    }

    @Test("the `attache` executable runs `attache request` and lists it")
    func frontExecutable() async throws {
        let help = await AttacheTestSupport.attache(["--help"])
        #expect(help.standardOutput.contains("Send one HTTP request and print the answer's body."))
        let requestHelp = await AttacheTestSupport.attache(["request", "--help"])
        #expect(requestHelp.status == 0)
        #expect(requestHelp.standardOutput.contains("--json-field"))
        #expect(requestHelp.standardOutput.contains("Examples"))
    }

    @Test("nginx over TLS: a JSON POST with --ca-file gets the 200-byte answer, nginx read the whole body, TLS time measured")
    func nginxTLS() async throws {
        let sink = try await NginxSink.start()
        let run: CommandResult
        do {
            let url = sink.httpsURL.replacingOccurrences(of: "/upload", with: "/answer200")
            run = try await attache(["POST", url, "--ca-file", sink.certificate, "--json-field", "text=hello", "--json"])
        } catch {
            await sink.stop()
            throw error
        }
        await sink.stop()
        #expect(run.status == 0, "\(run.standardError)")
        let object = try json(run.standardOutput)
        #expect(object["status"] as? Int == 200)
        let body = try #require(object["body"] as? [String: Any])
        #expect(try JSONSerialization.data(withJSONObject: body).count > 150)
        let timings = try #require(object["timings"] as? [String: Any])
        #expect((timings["tlsMs"] as? Double ?? 0) > 0)
        #expect((timings["tlsMs"] as? Double ?? 0) >= (timings["connectMs"] as? Double ?? .infinity))
    }
}
