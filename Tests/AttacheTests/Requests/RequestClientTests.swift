import Foundation
import Logging
import Synchronization
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

/// A token store with a refresh count: what a 401-refresh retrier and its adapter share.
actor TokenStore {
    private(set) var token = "stale-token-0001"
    private(set) var refreshes = 0
    func refresh() {
        refreshes += 1
        token = "fresh-token-000\(refreshes + 1)"
    }
}

struct BearerFromStore: RequestAdapter {
    let store: TokenStore
    func adapt(_ request: ClientRequest) async throws -> ClientRequest {
        var request = request
        request.setHeader("Authorization", "Bearer \(await store.token)")
        return request
    }
}

/// Refreshes the token once on 401; a second 401 is the answer.
actor RefreshOnceOn401: RequestRetrier {
    let store: TokenStore
    private var refreshed = false
    init(store: TokenStore) { self.store = store }
    func retry(_ request: ClientRequest, response: ServerResponse?, error: AttacheError?, attempt: Int) async -> RetryDecision {
        guard response?.status == 401, !refreshed else { return .useDefault }
        refreshed = true
        await store.refresh()
        return .retryAfter(.zero)
    }
}

/// Adds `sign=` over the sorted query, as the old backends' signing did: sees the system parameters.
struct QuerySigner: RequestAdapter {
    func adapt(_ request: ClientRequest) async throws -> ClientRequest {
        var request = request
        let keys = request.query.keys.sorted().joined(separator: ",")
        request.query["sign"] = .string("sig(\(keys))")
        return request
    }
}

struct FailingAdapter: RequestAdapter {
    struct Boom: Error {}
    func adapt(_ request: ClientRequest) async throws -> ClientRequest { throw Boom() }
}

@Suite("RequestClient through the transport seam")
struct RequestClientTests {
    static let json = [("Content-Type", "application/json")]

    func client(
        _ transport: ScriptedTransport, _ sleeps: RecordedSleeps = RecordedSleeps(),
        _ configure: (inout RequestClient.Configuration) -> Void = { _ in }
    ) -> RequestClient {
        var configuration = RequestClient.Configuration()
        configuration.acceptLanguage = "de-AT,de;q=0.9"
        configure(&configuration)
        return RequestClient(configuration: configuration, transport: transport, sleep: sleeps.sleep)
    }

    func headers(_ request: TransportRequest) -> [String] { request.headerLines(withCredentials: true) }

    func bodyText(_ request: TransportRequest) throws -> String {
        guard let body = request.body else { return "" }
        return String(decoding: try body.makeReader().readToEnd(), as: UTF8.self)
    }

    @Test("defaults: User-Agent, Accept-Language, transparent Accept-Encoding, bearer credentials")
    func defaults() async throws {
        let transport = ScriptedTransport([.answer(status: 200)])
        let client = client(transport) { $0.connection.authorization = .bearer("t0k3n-abc"); $0.connection.userAgent = "app/1" }
        _ = try await client.get("http://127.0.0.1:9/a")
        let sent = try #require(transport.sent.first)
        #expect(sent.method == "GET")
        #expect(sent.acceptEncoding == "")
        #expect(headers(sent).contains("User-Agent: app/1"))
        #expect(headers(sent).contains("Authorization: Bearer t0k3n-abc"))
        #expect(headers(sent).contains("Accept-Language: de-AT,de;q=0.9"))
    }

    @Test("a request's own header replaces the default and the connection's of the same name")
    func headerOverrides() async throws {
        let transport = ScriptedTransport([.answer(status: 200)])
        let client = client(transport) {
            $0.connection.headers = [HeaderField(name: "X-Tenant", value: "acme")]
            $0.connection.authorization = .basic(user: "u", password: "p4ssw0rd")
        }
        _ = try await client.get(
            "http://127.0.0.1:9/a",
            headers: [HeaderField(name: "x-tenant", value: "other"), HeaderField(name: "Accept-Language", value: "fr"), HeaderField(name: "Authorization", value: "Bearer own"), HeaderField(name: "User-Agent", value: "mine")])
        let lines = headers(try #require(transport.sent.first))
        #expect(lines.filter { $0.lowercased().hasPrefix("x-tenant") } == ["x-tenant: other"])
        #expect(lines.filter { $0.hasPrefix("Accept-Language") } == ["Accept-Language: fr"])
        #expect(lines.filter { $0.hasPrefix("Authorization") } == ["Authorization: Bearer own"])
        #expect(lines.filter { $0.hasPrefix("User-Agent") } == ["User-Agent: mine"])
    }

    @Test("GET: system parameters join the query; the caller's value wins")
    func systemParametersInQuery() async throws {
        let transport = ScriptedTransport([.answer(status: 200)])
        let client = client(transport) { $0.systemParameters = ["app": "attache", "lang": "en"] }
        _ = try await client.get("http://127.0.0.1:9/list?fixed=1", query: ["lang": "de", "page": 2])
        let url = try #require(transport.sent.first?.url)
        let query = try #require(URLComponents(string: url)?.queryItems)
        #expect(query.count == 4)
        #expect(Dictionary(query.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
            == ["fixed": "1", "app": "attache", "lang": "de", "page": "2"])
    }

    @Test("POST with parameters: system parameters join the form body; the caller's value wins, in the body or the query")
    func systemParametersInForm() async throws {
        let transport = ScriptedTransport([.answer(status: 200)])
        let client = client(transport) { $0.systemParameters = ["app": "attache", "v": "1"] }
        _ = try await client.post("http://127.0.0.1:9/send", query: ["app": "mine"], parameters: ["v": "2", "text": "hi"])
        let sent = try #require(transport.sent.first)
        // `app` given in the query: the system's `app` is left out of the body, not sent twice.
        #expect(sent.url.hasSuffix("/send?app=mine"))
        #expect(sent.headers.contains { $0.name == "Content-Type" && $0.value.hasPrefix("application/x-www-form-urlencoded") })
        let pairs = Set(try bodyText(sent).split(separator: "&").map(String.init))
        #expect(pairs == ["v=2", "text=hi"])
    }

    @Test("POST with parameters as JSON: system parameters join the object")
    func systemParametersInJSON() async throws {
        let transport = ScriptedTransport([.answer(status: 200)])
        let client = client(transport) { $0.systemParameters = ["app": "attache", "v": "1"] }
        var request = ClientRequest(method: .post, url: "http://127.0.0.1:9/send", parameters: ["v": "2"])
        request.bodyParameterEncoding = .json
        _ = try await client.send(request)
        let sent = try #require(transport.sent.first)
        #expect(try JSONValue.parse(Array(try bodyText(sent).utf8)) == .object(["app": .string("attache"), "v": .string("2")]))
        #expect(sent.headers.contains { $0.name == "Content-Type" && $0.value.hasPrefix("application/json") })
    }

    @Test("an explicit body keeps its bytes; system parameters go to the query then")
    func explicitBody() async throws {
        let transport = ScriptedTransport([.answer(status: 200)])
        let client = client(transport) { $0.systemParameters = ["app": "attache"] }
        _ = try await client.post("http://127.0.0.1:9/raw", body: .bytes(Array("abc".utf8), contentType: "text/plain"))
        let sent = try #require(transport.sent.first)
        #expect(try bodyText(sent) == "abc")
        #expect(sent.url == "http://127.0.0.1:9/raw?app=attache")
    }

    @Test("adapters run on every attempt, after the system parameters")
    func adaptersSign() async throws {
        let transport = ScriptedTransport([.answer(status: 503), .answer(status: 200)])
        let client = client(transport) { $0.systemParameters = ["app": "a"]; $0.adapters = [QuerySigner()] }
        let response = try await client.get("http://127.0.0.1:9/x", query: ["q": "1"])
        #expect(response.status == 200)
        #expect(transport.sent.count == 2)
        for sent in transport.sent {
            let items = try #require(URLComponents(string: sent.url)?.queryItems)
            #expect(items.first { $0.name == "sign" }?.value == "sig(app,q)")
        }
    }

    @Test("an adapter's own error ends the request as a typed error, nothing sent")
    func adapterFailure() async throws {
        let transport = ScriptedTransport([])
        let client = client(transport) { $0.adapters = [FailingAdapter()] }
        let error = await #expect(throws: AttacheError.self) { try await client.get("http://127.0.0.1:9/x") }
        #expect(error?.stage == .request)
        #expect(error?.message.contains("FailingAdapter") == true)
        #expect(transport.sent.isEmpty)
    }

    @Test("401: the token is refreshed exactly once and the retry carries the fresh one")
    func refreshOnceOn401() async throws {
        let store = TokenStore()
        let transport = ScriptedTransport([.answer(status: 401), .answer(status: 200, body: Array("ok".utf8))])
        let client = client(transport) {
            $0.adapters = [BearerFromStore(store: store)]
            $0.retriers = [RefreshOnceOn401(store: store)]
        }
        // A POST: not retried by the default rule, only because the retrier said so.
        let response = try await client.post("http://127.0.0.1:9/me", parameters: ["a": "1"])
        #expect(response.status == 200)
        #expect(response.text == "ok")
        #expect(await store.refreshes == 1)
        let tokens = transport.sent.map { headers($0).filter { $0.hasPrefix("Authorization") } }
        #expect(tokens == [["Authorization: Bearer stale-token-0001"], ["Authorization: Bearer fresh-token-0002"]])
    }

    @Test("a second 401 after the refresh is the answer: no second refresh, no third request")
    func refreshNotRepeated() async throws {
        let store = TokenStore()
        let transport = ScriptedTransport([.answer(status: 401), .answer(status: 401)])
        let client = client(transport) {
            $0.adapters = [BearerFromStore(store: store)]
            $0.retriers = [RefreshOnceOn401(store: store)]
        }
        let response = try await client.get("http://127.0.0.1:9/me")
        #expect(response.status == 401)
        #expect(await store.refreshes == 1)
        #expect(transport.sent.count == 2)
        #expect(throws: AttacheError.self) { try response.validate() }
    }

    @Test("GET is retried on 503 with Retry-After; POST is not; POST with an Idempotency-Key is")
    func retryRules() async throws {
        let sleeps = RecordedSleeps()
        let getTransport = ScriptedTransport([.answer(status: 503, headers: [HeaderField(name: "Retry-After", value: "2")]), .answer(status: 200)])
        #expect(try await client(getTransport, sleeps).get("http://127.0.0.1:9/x").status == 200)
        #expect(sleeps.all.count == 1)
        #expect(sleeps.all[0] >= .seconds(2))

        let postTransport = ScriptedTransport([.answer(status: 503)])
        #expect(try await client(postTransport).post("http://127.0.0.1:9/x").status == 503)
        #expect(postTransport.sent.count == 1)

        let keyed = ScriptedTransport([.answer(status: 503), .answer(status: 201)])
        let response = try await client(keyed).post("http://127.0.0.1:9/x", headers: [HeaderField(name: "Idempotency-Key", value: "k1")])
        #expect(response.status == 201)
        #expect(keyed.sent.count == 2)
    }

    @Test("when the retries run out on answers, the last answer is returned, not thrown")
    func lastAnswerReturned() async throws {
        let transport = ScriptedTransport([.answer(status: 502), .answer(status: 503, body: Array("busy".utf8))])
        let response = try await client(transport) { $0.connection.retry = RetryPolicy(maximumAttempts: 2) }
            .get("http://127.0.0.1:9/x")
        #expect(response.status == 503)
        #expect(response.text == "busy")
        let error = #expect(throws: AttacheError.self) { try response.validate() }
        #expect(error?.code == .retriesExhausted)
        #expect(error?.message.contains("503") == true)
    }

    @Test("connection failures of a GET are retried, then thrown with stage request")
    func connectionFailures() async throws {
        let refused = AttacheError(.connectionFailed, stage: .upload, "cannot connect", isRetryable: true)
        let transport = ScriptedTransport([.fail(refused), .fail(refused)])
        let error = await #expect(throws: AttacheError.self) {
            try await client(transport) { $0.connection.retry = RetryPolicy(maximumAttempts: 2) }.get("http://127.0.0.1:9/x")
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.stage == .request)
        #expect(transport.sent.count == 2)
    }

    @Test("a retrier's doNotRetry ends a retryable GET at once")
    func retrierVeto() async throws {
        struct Never: RequestRetrier {
            func retry(_ request: ClientRequest, response: ServerResponse?, error: AttacheError?, attempt: Int) async -> RetryDecision {
                .doNotRetry
            }
        }
        let transport = ScriptedTransport([.answer(status: 503)])
        #expect(try await client(transport) { $0.retriers = [Never()] }.get("http://127.0.0.1:9/x").status == 503)
        #expect(transport.sent.count == 1)
    }

    @Test("validate: status and content type, errors name the status and the type", arguments: [
        (404, "application/json", "rejected"), (500, "application/json", "retries-exhausted"),
        (200, "text/html", "bad-response"), (302, "application/json", "bad-response"),
    ])
    func validation(status: Int, type: String, code: String) async throws {
        // Through a client: whether a status is retryable is the receiving client's rule.
        let transport = ScriptedTransport([
            .answer(status: status, headers: [HeaderField(name: "Content-Type", value: type + "; charset=utf-8")], body: Array("{}".utf8))
        ])
        let response = try await client(transport) { $0.connection.retry = RetryPolicy(maximumAttempts: 1) }.get("http://127.0.0.1:9/x")
        let error = #expect(throws: AttacheError.self) {
            try response.validate(statusCodes: 200..<300, contentTypes: ["application/json"])
        }
        #expect(error?.code.rawValue == code)
        #expect(error?.stage == .request)
        #expect(error?.message.contains("\(status)") == true)
        if status == 200 { #expect(error?.message.contains("text/html") == true) }
    }

    @Test("validate passes acceptable answers; wildcards match")
    func validationPasses() throws {
        let response = ServerResponse(status: 201, headers: [HeaderField(name: "Content-Type", value: "application/problem+json")], body: [1])
        #expect(try response.validate(contentTypes: ["application/*"]).status == 201)
        #expect(try ServerResponse(status: 204).validate(contentTypes: ["application/json"]).status == 204)
    }

    @Test("decode, json and text read the body; a body cut at the cap is an error")
    func decoding() throws {
        struct User: Decodable, Equatable { var id: Int; var name: String }
        let response = ServerResponse(status: 200, body: Array(#"{"id":7,"name":"Ann"}"#.utf8))
        #expect(try response.decode(User.self) == User(id: 7, name: "Ann"))
        #expect(try response.json["name"] == .string("Ann"))
        #expect(response.text == #"{"id":7,"name":"Ann"}"#)
        let missing = #expect(throws: AttacheError.self) {
            try ServerResponse(status: 200, body: Array(#"{"id":7}"#.utf8)).decode(User.self)
        }
        #expect(missing?.code == .badResponse)
        #expect(missing?.message.contains("name") == true)
        let cut = ServerResponse(status: 200, body: Array("{".utf8), bodyExceededCap: true)
        #expect((#expect(throws: AttacheError.self) { try cut.json })?.code == .limitExceeded)
    }

    @Test("the body size cap cuts a long answer and says so")
    func sizeCap() async throws {
        let transport = ScriptedTransport([.answer(status: 200, body: Array(repeating: 65, count: 5000))])
        let response = try await client(transport) { $0.maximumResponseBodySize = 1000 }.get("http://127.0.0.1:9/big")
        #expect(response.body.count == 1000)
        #expect(response.bodyExceededCap)
    }

    @Test("a URL that cannot be sent is invalid-argument, stage request, its secrets not in the message")
    func invalidURL() async throws {
        let error = await #expect(throws: AttacheError.self) {
            try await client(ScriptedTransport([])).get("ftp://user:hunter22@127.0.0.1/x?token=zzz-secret")
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.stage == .request)
        #expect(error?.message.contains("hunter22") == false)
        #expect(error?.message.contains("zzz-secret") == false)
    }
}

@Suite("RequestClient logs: one debug line per exchange, trace details, secrets never shown")
struct RequestClientLoggingTests {
    @Test("every secret is redacted from every line, at trace")
    func redaction() async throws {
        let secrets = [
            "bearer-SECRET-1", "query-SECRET-2", "form-SECRET-3", "cookie-SECRET-4", "setcookie-SECRET-5",
            "json-SECRET-6", "apikey-SECRET-7", "nested-SECRET-8", "answer-SECRET-9", "user:pw-SECRET-10",
            "custom-SECRET-11", "literal-SECRET-12",
        ]
        let log = CapturedLog()
        var configuration = RequestClient.Configuration(logger: log.logger())
        configuration.connection.authorization = .bearer(secrets[0])
        configuration.redaction.headerNames.insert("x-custom-secret")
        configuration.redaction.secretValues = [secrets[11]]
        // The answer also echoes what was sent under harmless names, as debug endpoints do.
        let answerBody = #"{"access_token":"answer-SECRET-9","user":{"password":"x"},"note":"fine","#
            + #""echo":"password=form-SECRET-3&cookie=sid=cookie-SECRET-4 bearer-SECRET-1 sign=nested-SECRET-8"}"#
        let transport = ScriptedTransport([
            .answer(status: 200, headers: [HeaderField(name: "Set-Cookie", value: "sid=\(secrets[4]); HttpOnly"), HeaderField(name: "Content-Type", value: "application/json")],
                    body: Array(answerBody.utf8)),
            .answer(status: 200, headers: [HeaderField(name: "Content-Type", value: "application/json")], body: Array(#"{"ok":true}"#.utf8)),
            .answer(status: 200),
        ])
        let client = RequestClient(configuration: configuration, transport: transport, sleep: RecordedSleeps().sleep)
        _ = try await client.post(
            "http://someone:\(secrets[9])@127.0.0.1:9/form?token=\(secrets[1])&page=2",
            parameters: ["password": .string(secrets[2]), "user": .dictionary(["sign": .string(secrets[7])]), "text": "hello"],
            headers: [HeaderField(name: "Cookie", value: "sid=\(secrets[3])"), HeaderField(name: "X-Api-Key", value: secrets[6]), HeaderField(name: "X-Custom-Secret", value: secrets[10])])
        _ = try await client.post(
            "http://127.0.0.1:9/json", body: .json(.object(["secret": .string(secrets[5]), "note": .string(secrets[11])])))
        var sealed = ClientRequest(method: .post, url: "http://127.0.0.1:9/sealed", body: .bytes(Array("opaque-sealed-bytes".utf8), contentType: "text/plain"))
        sealed.bodyIsSecret = true
        _ = try await client.send(sealed)

        let text = log.text
        for secret in secrets { #expect(!text.contains(secret), "\(secret) leaked") }
        #expect(!text.contains("opaque-sealed-bytes"))
        // The lines are still useful: method, path, status, the harmless fields, the curl command.
        #expect(text.contains("POST http://127.0.0.1:9/form?token=REDACTED&page=REDACTED → 200"))
        #expect(text.contains("text=hello"))
        #expect(text.contains("\"note\":\"fine\""))
        #expect(text.contains("curl -X POST"))
        #expect(text.contains("Authorization: <redacted>"))
        #expect(text.contains("<19 bytes, secret>"))
    }

    @Test("at debug: exactly one line per exchange, nothing from trace")
    func debugLine() async throws {
        let log = CapturedLog()
        var configuration = RequestClient.Configuration(logger: log.logger(level: .debug))
        configuration.connection.authorization = .bearer("debug-level-secret")
        let transport = ScriptedTransport([.answer(status: 204), .answer(status: 404)])
        let client = RequestClient(configuration: configuration, transport: transport, sleep: RecordedSleeps().sleep)
        _ = try await client.get("http://127.0.0.1:9/a")
        _ = try await client.delete("http://127.0.0.1:9/b")
        #expect(log.all.count == 2)
        #expect(log.all[0].contains("GET http://127.0.0.1:9/a → 204"))
        #expect(log.all[1].contains("DELETE http://127.0.0.1:9/b → 404"))
        #expect(!log.text.contains("debug-level-secret"))
        #expect(!log.text.contains("curl "))
    }

    @Test("redaction rules: nested field names, percent-encoded names, the one URL rule")
    func rules() {
        let redaction = LogRedaction()
        #expect(redaction.isSecret(field: "user[password]"))
        #expect(redaction.isSecret(field: "auth%5Btoken%5D%5B%5D"))
        #expect(!redaction.isSecret(field: "monkey"))
        #expect(redaction.form("a=1&api_key=zz&b=2") == "a=1&api_key=<redacted>&b=2")
        #expect(redaction.url("https://u:p@h.example:8443/p?sign=abc&page=2#frag") == "https://h.example:8443/p?sign=REDACTED&page=REDACTED")
        // A literal secret is masked in the part of the URL the one URL rule keeps.
        #expect(LogRedaction(secretValues: ["s3cr3t-path"]).url("https://h.example/s3cr3t-path/x") == "https://h.example/<redacted>/x")
    }
}

@Suite("RequestClient.sendBlocking")
struct RequestClientBlockingTests {
    @Test("from a plain thread it returns the answer without deadlocking")
    func fromThread() async throws {
        let transport = ScriptedTransport([.answer(status: 200, body: Array("pong".utf8))])
        let client = RequestClient(configuration: .init(), transport: transport, sleep: RecordedSleeps().sleep)
        let text = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, any Error>) in
            let thread = Thread {
                continuation.resume(with: Result { try client.sendBlocking(ClientRequest(url: "http://127.0.0.1:9/ping")).text })
            }
            thread.start()
        }
        #expect(text == "pong")
    }

    @Test("from inside a task it refuses instead of blocking the pool")
    func fromTask() async throws {
        let client = RequestClient(configuration: .init(), transport: ScriptedTransport([]), sleep: RecordedSleeps().sleep)
        let error = #expect(throws: AttacheError.self) { try client.sendBlocking(ClientRequest(url: "http://127.0.0.1:9/ping")) }
        #expect(error?.code == .invalidArgument)
    }
}

@Suite("Accept-Language from the locale")
struct AcceptLanguageTests {
    @Test("locale variables in POSIX order", arguments: [
        (["LANG": "de_AT.UTF-8"], "de-AT,de;q=0.9"),
        (["LANG": "de_AT.UTF-8", "LC_ALL": "fr_CA.UTF-8"], "fr-CA,fr;q=0.9"),
        (["LANG": "en_GB.UTF-8", "LC_MESSAGES": "pt_BR"], "pt-BR,pt;q=0.9"),
        (["LANG": "C.UTF-8"], "en-US,en;q=0.9"),
        ([:], "en-US,en;q=0.9"),
        (["LANG": "sr_RS@latin"], "sr-RS,sr;q=0.9"),
        (["LANG": "de_DE.UTF-8", "LANGUAGE": "de_DE:en_US"], "de-DE,de;q=0.9,en-US;q=0.8,en;q=0.7"),
    ])
    func fromEnvironment(environment: [String: String], expected: String) {
        #expect(AcceptLanguage.fromEnvironment(environment) == expected)
    }
}
