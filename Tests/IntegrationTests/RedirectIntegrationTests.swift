import Attache
import Foundation
import Synchronization
import AttacheTestSupport
import Testing

/// Redirects against a server that is not ours (Python's http.server): what is followed, what is
/// sent again, and where credentials go.
@Suite("Redirects and credentials")
struct RedirectIntegrationTests {
    struct Seen: Decodable {
        var method: String
        var path: String
        var host: String
        var proxied: Bool
        var authorization: Bool
        var cookie: Bool
        var bytes: Int
    }

    func log(_ server: ServiceProcess) throws -> [Seen] {
        let data = try Data(contentsOf: URL(string: "http://127.0.0.1:\(server.port)/log")!)
        return try JSONDecoder().decode([Seen].self, from: data)
    }

    func connection() -> ConnectionConfiguration {
        var connection = ConnectionConfiguration()
        connection.authorization = .bearer("redirect-secret")
        connection.headers = [HeaderField(name: "Cookie", value: "session=1")]
        connection.retry = .never
        return connection
    }

    @Test("a download follows a redirect to another host without its credentials, and to the same host with them")
    func credentialsStayWithTheirHost() async throws {
        let server = try await ServiceProcess.python("redirect_server.py")
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("redirect-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let downloader = Downloader(configuration: connection())
        for route in ["cross", "same"] {
            let destination = directory.appendingPathComponent(route).path
            _ = try await downloader.download(
                DownloadRequest(url: "http://127.0.0.1:\(server.port)/\(route)", destination: destination))
            let text = try String(contentsOfFile: destination, encoding: .utf8)
            #expect(text == "final")
        }
        let seen = try log(server)
        let cross = try #require(seen.first { $0.path == "/final" && $0.host.hasPrefix("localhost") })
        #expect(!cross.authorization && !cross.cookie, "credentials went to another host")
        let same = try #require(seen.first { $0.path == "/final" && $0.host.hasPrefix("127.0.0.1") })
        #expect(same.authorization && same.cookie)
        let hops = seen.filter { $0.path == "/cross" || $0.path == "/same" }
        #expect(hops.count == 2 && hops.allSatisfy { $0.authorization })
    }

    @Test("an upload answered 307 is sent again whole to the new place; 302 is not followed; 303 is fetched with GET")
    func uploadRedirects() async throws {
        let server = try await ServiceProcess.python("redirect_server.py")
        defer { server.stop() }
        let uploader = Uploader(connection: connection())
        func request(_ path: String) throws -> UploadRequest {
            var body = MultipartBody()
            try body.addFile(
                name: "file", filename: "a.txt", contentType: "text/plain",
                source: DataSource(Array(repeating: 0x62, count: 2000)))
            return UploadRequest(url: "http://127.0.0.1:\(server.port)/\(path)", body: body)
        }
        let temporary = try await uploader.upload(try request("temporary"))
        guard case .stored(let receipt) = temporary.outcome else {
            Issue.record("307 not followed: \(temporary.outcome)")
            return
        }
        #expect(receipt.fileId == "r1")
        let moved = try await uploader.upload(try request("moved"))
        guard case .rejected(let rejection) = moved.outcome else {
            Issue.record("302 was followed: \(moved.outcome)")
            return
        }
        #expect(rejection.status == 302)
        let seeOther = try await uploader.upload(try request("see-other"))
        guard case .stored(let result) = seeOther.outcome else {
            Issue.record("303 not fetched: \(seeOther.outcome)")
            return
        }
        #expect(result.fileId == "r2")
        let seen = try log(server)
        let posts = seen.filter { $0.method == "POST" }
        #expect(posts.map(\.path) == ["/temporary", "/stored", "/moved", "/see-other"])
        let first = try #require(posts.first)
        #expect(posts[1].bytes == first.bytes && first.bytes > 2000, "the 307 hop did not carry the whole body")
        #expect(seen.contains { $0.method == "GET" && $0.path == "/result" })
    }

    @Test("a proxy is used from the configuration and from http_proxy in the environment")
    func proxy() async throws {
        let server = try await ServiceProcess.python("redirect_server.py")
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("proxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var connection = ConnectionConfiguration()
        connection.retry = .never
        connection.proxy = "http://127.0.0.1:\(server.port)"
        // `.invalid` never resolves: only the proxy can answer for it.
        let configured = directory.appendingPathComponent("configured").path
        _ = try await Downloader(configuration: connection).download(
            DownloadRequest(url: "http://files.invalid/final", destination: configured))
        #expect(try Data(contentsOf: URL(fileURLWithPath: configured)) == Data("final".utf8))

        let fromEnvironment = directory.appendingPathComponent("environment").path
        var environment = ProcessInfo.processInfo.environment
        environment["http_proxy"] = "http://127.0.0.1:\(server.port)"
        environment["no_proxy"] = ""
        let download = try ChildProcess(
            executable: try builtExecutable("attache"),
            arguments: ["download", "http://files.invalid/final", "-o", fromEnvironment, "--attempts", "1"],
            environment: environment)
        let status = try await download.wait(upTo: 60)
        #expect(status == 0, "\(download.standardError)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: fromEnvironment)) == Data("final".utf8))
        let seen = try log(server)
        #expect(seen.filter { $0.path == "/final" && $0.proxied && $0.host == "files.invalid" }.count == 2)
    }

    @Test("an interim 1xx answer reaches the sink with its headers, before the final answer")
    func informationalAnswers() async throws {
        let server = try await ServiceProcess.python("redirect_server.py")
        defer { server.stop() }
        let interim = Mutex<[(Int, String?)]>([])
        let sink = CollectingSink(limit: 1 << 16, onInformational: { status, headers in
            let location = headers.first { $0.name.caseInsensitiveCompare("Location") == .orderedSame }?.value
            interim.withLock { $0.append((status, location)) }
        })
        var connection = ConnectionConfiguration()
        connection.retry = .never
        let request = TransportRequest(
            method: "POST", url: "http://127.0.0.1:\(server.port)/interim", headers: [HeaderField(name: "Expect", value: "")],
            body: DataSource(Array("part".utf8)), connection: connection)
        let response = try await CurlTransport.shared.send(request.prepared(), sink: sink)
        #expect(response.status == 201)
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"id":"u7"}"#)
        let seen = interim.withLock { $0 }
        #expect(seen.count == 1)
        #expect(seen.first?.0 == 104)
        #expect(seen.first?.1 == "/uploads/7")
    }
}
