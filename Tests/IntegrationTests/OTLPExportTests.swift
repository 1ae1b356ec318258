import AttacheBatch
import AttacheTestSupport
import Foundation
import Testing

/// What a collector receives over OTLP/HTTP from `attache batch --otlp-endpoint` and from the reference
/// server exporting to the same place, decoded by the official protobuf classes (PyPI's
/// opentelemetry-proto, in `Tools/otlp_receiver.py`), never by our own code.
@Suite("Observability: OTLP export")
struct OTLPExportTests {
    static let token = "tok-otlp-5e1f0a9c7b3d2e84"
    static let headerSecret = "hdr-otlp-a4c9e2f7b1d05386"
    static let querySecret = "sig-otlp-3b8d6f1e9a2c7054"
    static let collectorPassword = "pw-otlp-c7e1a5d93f0b2864"
    static let stages: Set<String> = ["attache.detect", "attache.transform", "attache.seal"]

    /// 50 files; requests 2–9 answered 503 (retried), requests 30–34 answered 413 (five files fail for good).
    @Test func batchAndServerSpansFormOneTracePerFileWithRetriesFailuresAndNoSecret() async throws {
        let scratch = try ScratchFolder(prefix: "attache-otlp")
        defer { scratch.remove() }
        for index in 0..<50 { try scratch.write("files/f\(index).txt", "note \(index)\n") }
        let exportedPath = scratch.path + "/otlp.jsonl"
        let receiver = try await ServiceProcess(
            [try python(with: ["opentelemetry.proto"]), ServiceProcess.tools + "/otlp_receiver.py", exportedPath])
        defer { receiver.stop() }
        // A password in the endpoint's user info: it must reach no log line.
        let collector = "http://collector:\(Self.collectorPassword)@127.0.0.1:\(receiver.port)"
        let server = try await ServerProcess.start(
            store: scratch.path + "/store", extra: ["--fault", "503@2-9,413@30-34", "--otlp-endpoint", collector])
        let batch: ChildProcess
        do {
            batch = try ChildProcess(
                executable: try attacheBinary(),
                arguments: [
                    "batch", scratch.path + "/files", "--url", "http://127.0.0.1:\(server.port)/upload?sig=\(Self.querySecret)",
                    "--journal", scratch.path + "/journal.sqlite", "--json", "--concurrency", "4", "-v",
                    "--bearer-env", "OTLP_TEST_TOKEN", "--header", "X-Upload-Token: \(Self.headerSecret)",
                    "--otlp-endpoint", collector,
                ], environment: ["OTLP_TEST_TOKEN": Self.token])
            // Exit 3: some files failed. The exporters have flushed once the process has ended.
            #expect(try await batch.wait(upTo: 300) == 3, "\(batch.standardError)")
            // SIGTERM: the server stops gracefully and flushes its spans before it exits.
            #expect(try await server.terminate() == .status(0))
        } catch {
            await server.stop()
            throw error
        }

        let exportedText = try String(contentsOfFile: exportedPath, encoding: .utf8)
        let items = try exportedText.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
        let spans = items.filter { $0["signal"] as? String == "span" }.map(ExportedSpan.init)
        let client = spans.filter { $0.service == "attache" }
        let serverSpans = spans.filter { $0.service == "attache-server" }

        // One trace per file, the stages nested under its send span.
        let sends = client.filter { $0.name == "attache.send" }
        #expect(sends.count == 50)
        #expect(Set(sends.map(\.traceID)).count == 50)
        // Two kinds of span a file by default: the send, and an attempt span per request under it.
        #expect(Set(client.map(\.name)) == ["attache.batch", "attache.send", "POST"], "\(Set(client.map(\.name)))")

        let attempts = client.filter { $0.kind == 3 && $0.name == "POST" }
        #expect(attempts.count == 58, "50 first attempts and 8 retries")
        #expect(attempts.filter { $0.attributes["http.response.status_code"] as? Int == 503 }.count == 8)
        var failures = 0
        for send in sends {
            let children = client.filter { $0.parentSpanID == send.spanID }
            // Each retry is an attempt span of its own under the send, counted by resend_count.
            let tries = attempts.filter { $0.parentSpanID == send.spanID }
                .sorted { $0.resendCount < $1.resendCount }
            #expect(!tries.isEmpty)
            #expect(tries.map(\.resendCount) == Array(0..<tries.count), "resend counts \(tries.map(\.resendCount))")
            #expect(tries.first?.attributes["http.request.resend_count"] == nil)
            for attempt in tries {
                #expect((attempt.attributes["url.full"] as? String)?.hasSuffix("/upload?sig=REDACTED") == true)
            }
            if let errorType = send.attributes["error.type"] as? String {
                failures += 1
                #expect(!errorType.isEmpty)
                #expect(tries.last?.attributes["http.response.status_code"] as? Int == 413)
                #expect(tries.last?.attributes["error.type"] as? String == "413")
            } else {
                // The stages are the send's events, in the order they ran, each with its outcome.
                #expect(Array(send.events.prefix(3)) == ["attache.detect", "attache.transform", "attache.seal"], "\(send.events)")
                #expect(send.events.dropFirst(3).allSatisfy { $0 == "attache.interpret" } && send.events.count == 3 + tries.count)
                #expect(send.attributes["attache.stage.transform.outcome"] as? String == "ok")
                #expect(send.attributes["attache.stage.detect.duration_s"] as? Double != nil)
                #expect(tries.last?.attributes["http.response.status_code"] as? Int == 200)
            }
            #expect(children.allSatisfy { $0.name == "POST" }, "\(children.map(\.name))")
        }
        #expect(failures == 5)

        // The server's request spans join the client's traces through traceparent: one under each attempt.
        let received = serverSpans.filter { $0.kind == 2 }
        #expect(received.count == 58)
        let attemptIDs = Dictionary(attempts.map { ($0.spanID, $0.traceID) }, uniquingKeysWith: { first, _ in first })
        for span in received {
            #expect(attemptIDs[span.parentSpanID] == span.traceID, "server span \(span.name) outside the client's trace")
            #expect(span.attributes["url.query"] as? String == "sig=REDACTED")
        }
        #expect(Set(received.map(\.parentSpanID)).count == 58)

        // Metrics came too, from the batch's last reading.
        let metrics = items.filter { $0["signal"] as? String == "metric" }
        #expect(metrics.contains { $0["name"] as? String == "attache.attachments" })

        // No secret anywhere: span and resource attributes, metric labels, the -v log.
        var secrets = [Self.token, Self.headerSecret, Self.querySecret, Self.collectorPassword]
        secrets += batch.standardOutput.split(separator: "\n").compactMap { line in
            let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return ((event?["receipt"] as? [String: Any])?["seal"] as? [String: Any])?["key"] as? String
        }
        #expect(secrets.count == 4 + 45, "a seal key from every stored file's receipt")
        let log = batch.standardError
        #expect(log.contains("trace_id="), "the -v lines carry the trace ids of the bootstrapped tracer")
        for secret in secrets {
            #expect(!exportedText.contains(secret), "a secret was exported")
            #expect(!log.contains(secret), "a secret is in the -v log")
        }
    }

    /// A batch of 1,200 small files against a collector that answers each span export 2 s late: every
    /// file's trace arrives whole. With swift-otel's defaults (2,048 spans held, 512 sent per export)
    /// the spans of ~9,600 ended in a few seconds overflow the queue and are dropped.
    @Test func aLargeBatchLosesNoSpanToASlowCollector() async throws {
        let files = 1_200
        let scratch = try ScratchFolder(prefix: "attache-otlp-many")
        defer { scratch.remove() }
        for index in 0..<files { try scratch.write("files/f\(index).txt", "note \(index)\n") }
        let exportedPath = scratch.path + "/otlp.jsonl"
        let receiver = try await ServiceProcess([
            try python(with: ["opentelemetry.proto"]), ServiceProcess.tools + "/otlp_receiver.py", "--trace-delay", "2",
            exportedPath,
        ])
        defer { receiver.stop() }
        let server = try await ServerProcess.start(store: scratch.path + "/store")
        defer { server.kill() }
        let batch = try ChildProcess(
            executable: try attacheBinary(),
            arguments: [
                "batch", scratch.path + "/files", "--url", "http://127.0.0.1:\(server.port)/upload",
                "--journal", scratch.path + "/journal.sqlite", "--concurrency", "8", "--no-progress",
                "--otlp-endpoint", "http://127.0.0.1:\(receiver.port)",
                // Each export answered 2 s late: the end's flush may take several, more than the default 5 s.
                "--otlp-flush-timeout", "120",
                // A span for each stage too: six or more a file, what fills the span queue fastest.
                "--trace-detail", "stages",
            ])
        #expect(try await batch.wait(upTo: 600) == 0, "\(batch.standardError)")
        #expect(!batch.standardError.contains("dropped"), "\(batch.standardError)")

        let spans = try String(contentsOfFile: exportedPath, encoding: .utf8).split(separator: "\n").compactMap { line in
            (try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                .flatMap { $0["signal"] as? String == "span" ? ExportedSpan($0) : nil }
        }
        let sends = spans.filter { $0.name == "attache.send" }
        #expect(sends.count == files, "\(sends.count) of \(files) send spans arrived")
        #expect(Set(sends.map(\.traceID)).count == files)
        // Each trace whole: the three stage spans, an attempt and the answer's reading under its send.
        var byParent: [String: [ExportedSpan]] = [:]
        for span in spans { byParent[span.parentSpanID, default: []].append(span) }
        var whole = 0
        for send in sends {
            let children = byParent[send.spanID] ?? []
            guard Set(children.map(\.name)).isSuperset(of: Self.stages.union(["attache.interpret"])),
                children.contains(where: { $0.kind == 3 && $0.name == "POST" })
            else { continue }
            whole += 1
        }
        #expect(whole == files, "\(files - whole) traces lack a span")
    }

    /// A collector that is down (a port that refuses) or stalled (one that takes the bytes and never answers)
    /// does not hold the command: 300 files go as they would, and the process ends within a few seconds of
    /// the batch's `finished` line (its flush bounded by `--otlp-flush-timeout`, 2 s here), saying that
    /// what the collector had not taken is dropped. Unbounded, the exporters' retries held it some 18 s more.
    @Test(arguments: ["refusing", "silent"])
    func aCollectorThatIsDownDoesNotHoldTheCommand(collector kind: String) async throws {
        let scratch = try ScratchFolder(prefix: "attache-otlp-down")
        defer { scratch.remove() }
        for index in 0..<300 { try scratch.write("files/f\(index).txt", "note \(index)\n") }
        let silent = kind == "silent" ? try SilentListener() : nil
        let port = try silent?.port ?? refusedPort()
        let server = try await ServerProcess.start(store: scratch.path + "/store")
        defer { server.kill() }
        let batch = try ChildProcess(
            executable: try attacheBinary(),
            arguments: [
                "batch", scratch.path + "/files", "--url", "http://127.0.0.1:\(server.port)/upload",
                "--journal", scratch.path + "/journal.sqlite", "--json", "--otlp-endpoint", "http://127.0.0.1:\(port)",
                "--otlp-flush-timeout", "2",
            ])
        try await batch.waitForOutput(containing: "\"event\":\"finished\"", count: 1, upTo: 300)
        // 2 s of flush and the exit. Unbounded, the exporters held this run about 18 s past its finished line
        // (both collectors; 300 files end in about 3 s): 12 s leaves a loaded machine room and still fails that.
        let status = try await batch.wait(upTo: 12)
        if status == nil { kill(batch.processIdentifier, SIGKILL) }
        #expect(status == 0, "still running 12 s after its finished line, or failed: \(batch.standardError.suffix(2000))")
        #expect(batch.standardError.contains("did not take the last spans and metrics within 2 s"), "\(batch.standardError.suffix(2000))")
        #expect(try UploadJournal(path: scratch.path + "/journal.sqlite").entries().filter { $0.state == .done }.count == 300)
    }

    /// An `OTEL_*` value the exporters cannot honour is a usage error that names it (exit 64), never a crash
    /// or a silent default: a sampler, a propagator or a protocol they lack, an exporter other than OTLP,
    /// gzip for the metrics (swift-otel's exporter sends them uncompressed), a ratio out of range. Values
    /// they honour pass.
    @Test(arguments: [
        ("OTEL_TRACES_SAMPLER", "jaeger_remote"), ("OTEL_TRACES_SAMPLER", "parentbased_jaeger_remote"),
        ("OTEL_TRACES_SAMPLER", "xray"), ("OTEL_PROPAGATORS", "tracecontext,baggage"), ("OTEL_PROPAGATORS", "b3"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
        ("OTEL_TRACES_EXPORTER", "console"), ("OTEL_METRICS_EXPORTER", "prometheus"),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"), ("OTEL_TRACES_SAMPLER_ARG", "2"),
    ])
    func anEnvironmentValueThatCannotBeHonouredIsAUsageError(name: String, value: String) async throws {
        let scratch = try ScratchFolder(prefix: "attache-otlp-env")
        defer { scratch.remove() }
        let file = try scratch.write("note.txt", "note\n")
        let port = try refusedPort()
        var environment = [name: value]
        if name == "OTEL_TRACES_SAMPLER_ARG" { environment["OTEL_TRACES_SAMPLER"] = "traceidratio" }
        let result = try await runCommand(
            try attacheBinary(),
            ["upload", file, "--url", "http://127.0.0.1:\(port)/upload", "--otlp-endpoint", "http://127.0.0.1:\(port)",
             "--otlp-flush-timeout", "0"],
            environment: environment)
        #expect(result.status == 64, "\(result.all)")
        #expect(result.standardError.contains("\(name)=\(value)"), "\(result.all)")
    }

    @Test func environmentValuesTheExporterHonoursPass() async throws {
        let scratch = try ScratchFolder(prefix: "attache-otlp-env")
        defer { scratch.remove() }
        let file = try scratch.write("note.txt", "note\n")
        let server = try await ServerProcess.start(store: scratch.path + "/store")
        defer { server.kill() }
        let result = try await runCommand(
            try attacheBinary(),
            ["upload", file, "--url", "http://127.0.0.1:\(server.port)/upload",
             "--otlp-endpoint", "http://127.0.0.1:\(try refusedPort())", "--otlp-flush-timeout", "0"],
            environment: [
                "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5",
                "OTEL_PROPAGATORS": "tracecontext", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_EXPORTER_OTLP_COMPRESSION": "none", "OTEL_METRICS_EXPORTER": "none", "OTEL_TRACES_EXPORTER": "otlp",
            ])
        #expect(result.status == 0, "\(result.all)")
    }

    /// `OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=gzip`: the span exports arrive gzipped, with the headers of
    /// `OTEL_EXPORTER_OTLP_HEADERS` (percent-decoded), and decode whole; the header's token is on no line
    /// the command writes.
    @Test func spansGoGzippedWhenAsked() async throws {
        let scratch = try ScratchFolder(prefix: "attache-otlp-gzip")
        defer { scratch.remove() }
        let file = try scratch.write("note.txt", "note\n")
        let exportedPath = scratch.path + "/otlp.jsonl"
        let receiver = try await ServiceProcess(
            [try python(with: ["opentelemetry.proto"]), ServiceProcess.tools + "/otlp_receiver.py", exportedPath])
        defer { receiver.stop() }
        let server = try await ServerProcess.start(store: scratch.path + "/store")
        defer { server.kill() }
        let result = try await runCommand(
            try attacheBinary(),
            ["upload", file, "--url", "http://127.0.0.1:\(server.port)/upload", "-v",
             "--otlp-endpoint", "http://127.0.0.1:\(receiver.port)", "--otlp-flush-timeout", "120"],
            environment: [
                "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip", "OTEL_METRICS_EXPORTER": "none",
                "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20\(Self.token)",
            ])
        #expect(result.status == 0, "\(result.all)")
        #expect(!result.all.contains(Self.token))
        let items = try String(contentsOfFile: exportedPath, encoding: .utf8).split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
        let requests = items.filter { $0["signal"] as? String == "request" }
        #expect(!requests.isEmpty)
        #expect(requests.allSatisfy { $0["path"] as? String == "/v1/traces" && $0["encoding"] as? String == "gzip" }, "\(requests)")
        let names = items.filter { $0["signal"] as? String == "span" }.compactMap { $0["name"] as? String }
        #expect(Set(names).isSuperset(of: ["attache.send", "POST"]), "\(names)")
    }

    /// A batch stopped by a signal while a file is in flight still hands its spans to the collector:
    /// SIGINT (the batch's own stop, status 130) and SIGTERM (the export's, status 143).
    @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func aStoppedBatchFlushesItsSpans(signal: Int32, status: Int32) async throws {
        let scratch = try ScratchFolder(prefix: "attache-otlp-stop")
        defer { scratch.remove() }
        try scratch.write("files/held.txt", "held by the server\n")
        let exportedPath = scratch.path + "/otlp.jsonl"
        let receiver = try await ServiceProcess(
            [try python(with: ["opentelemetry.proto"]), ServiceProcess.tools + "/otlp_receiver.py", exportedPath])
        defer { receiver.stop() }
        // The server reads the request's head and then says nothing: the upload stays in flight.
        let server = try await ServerProcess.start(store: scratch.path + "/store", extra: ["--fault", "stall:seconds=120"])
        defer { server.kill() }
        let batch = try ChildProcess(
            executable: try attacheBinary(),
            arguments: [
                "batch", scratch.path + "/files", "--url", "http://127.0.0.1:\(server.port)/upload",
                "--journal", scratch.path + "/journal.sqlite", "--json",
                "--otlp-endpoint", "http://127.0.0.1:\(receiver.port)",
                // What is tested is that the flush happens, not its bound: the default 5 s is a wall-clock
                // deadline that a receiver on a loaded two-core machine has missed (the spans were then
                // dropped, as they should be, and the test failed).
                "--otlp-flush-timeout", "120",
            ])
        try await batch.waitForOutput(containing: "\"started\"", count: 1, upTo: 120)
        kill(batch.processIdentifier, signal)
        #expect(try await batch.wait(upTo: 120) == status, "\(batch.standardError)")

        let spans = try String(contentsOfFile: exportedPath, encoding: .utf8).split(separator: "\n").compactMap { line in
            (try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]).map(ExportedSpan.init)
        }
        #expect(spans.contains { $0.name == "attache.batch" }, "\(batch.standardError)")
        let send = try #require(
            spans.first { $0.name == "attache.send" }, "the in-flight file's span was not exported: \(batch.standardError)")
        #expect(send.attributes["error.type"] != nil)
    }
}

/// One span line of the receiver's output.
private struct ExportedSpan {
    let traceID: String
    let spanID: String
    let parentSpanID: String
    let name: String
    let kind: Int
    let service: String?
    let attributes: [String: Any]
    /// The names of its events, in order.
    let events: [String]

    init(_ line: [String: Any]) {
        traceID = line["traceId"] as? String ?? ""
        spanID = line["spanId"] as? String ?? ""
        parentSpanID = line["parentSpanId"] as? String ?? ""
        name = line["name"] as? String ?? ""
        kind = line["kind"] as? Int ?? 0
        service = (line["resource"] as? [String: Any])?["service.name"] as? String
        attributes = line["attributes"] as? [String: Any] ?? [:]
        events = (line["events"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
    }

    /// `http.request.resend_count`, 0 on a first attempt.
    var resendCount: Int { attributes["http.request.resend_count"] as? Int ?? 0 }
}
