import Attache
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import AttacheTestSupport
import Testing

/// The two example packages depend on Attache exactly as the README's "Use it in your package" says, and
/// are built and run here against a live reference server. `Samples/Examples` uses the `Attache` library
/// alone: files from a path, from memory and from an AsyncSequence, each fetched back from its receipt
/// and opened with the receipt's key; and what it brings in is checked (no GRDB, PostgresNIO or SwiftNIO
/// among its dependencies, neither GRDB nor full Foundation in its program). `Samples/Backend` adds the
/// journaled batch (AttacheBatch) and a Hummingbird gateway that streams a client's upload through the
/// pipeline.
@Suite("Example packages", .serialized)
struct ExamplePackageTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let examples = root.appendingPathComponent("Samples/Examples").path
    static let backend = root.appendingPathComponent("Samples/Backend").path
    /// The build folder of `Samples/Examples`: a folder of its own inside this package's `.build`. The
    /// example asks Attache for no traits, so Attache's modules are compiled with other flags than in this
    /// package's build (SwiftPM passes each enabled trait to every module as a `-D` flag): in this
    /// package's own build folder, each of the two builds would compile them, and everything that
    /// imports them, again.
    static let examplesScratch = root.appendingPathComponent(".build/examples").path
    /// The build folder of `Samples/Backend`: this package's own `.build`. It takes Attache with its
    /// default traits and Hummingbird with the traits this package gives it, so every module it needs is
    /// already compiled there, and only its two programs are (minutes saved against a scratch path of its
    /// own, which compiles Attache, GRDB, SwiftNIO and Hummingbird a second time).
    static let backendScratch = root.appendingPathComponent(".build").path

    /// The flags this package's build was made with (`ATTACHE_SWIFTPM_FLAGS`, set by `Scripts/test.sh`).
    static var flags: [String] {
        (ProcessInfo.processInfo.environment["ATTACHE_SWIFTPM_FLAGS"] ?? "").split(separator: " ").map(String.init)
    }

    /// Builds both example packages and returns the folders of their executables.
    ///
    /// `Scripts/test.sh` runs the same builds before the tests and sets `ATTACHE_EXAMPLE_PACKAGE_BUILT`,
    /// which saves loading the package graphs a second time to find nothing to do.
    /// `--ignore-lock`: the running `swift test` holds this package's build folder's lock for as long as
    /// it runs. `--disable-build-manifest-caching`: SwiftPM would otherwise take the plan it cached for
    /// this package's own build in the same folder, and make neither program (Scripts/test.sh).
    static func build() async throws -> (examples: String, backend: String) {
        if ProcessInfo.processInfo.environment["ATTACHE_EXAMPLE_PACKAGE_BUILT"] == nil {
            let builds = [
                ["build", "--package-path", examples, "--scratch-path", examplesScratch],
                ["build", "--package-path", backend, "--scratch-path", backendScratch, "--ignore-lock", "--disable-build-manifest-caching"],
            ]
            for arguments in builds {
                let built = try await runCommand("/usr/bin/env", ["swift"] + arguments + flags)
                try #require(built.status == 0, "\(arguments[2]) does not build:\n\(built.all.suffix(4000))")
            }
        }
        // SwiftPM links `debug` in a scratch path to the debug build's folder of executables.
        return (examplesScratch + "/debug", backendScratch + "/debug")
    }

    @Test("the example packages build, and their programs send, fetch back, send a batch and forward through a gateway")
    func examplePackages() async throws {
        let bin = try await Self.build()
        let samples = Self.root.appendingPathComponent("Samples").path
        let names = ["document.pdf", "photo.jpg", "notes.txt"]
        let files = names.map { samples + "/" + $0 }
        try await LiveServer.with { server in
            // send-attachments: three ways in, one way back.
            let sent = try await runCommand(bin.examples + "/send-attachments", [server.uploadURL] + files)
            #expect(sent.status == 0, "\(sent.all)")
            for name in names {
                for way in ["path", "memory", "stream"] {
                    #expect(sent.standardOutput.contains("checked \(way) \(name)"), "\(way) \(name):\n\(sent.all)")
                }
            }
            // Printed receipts name the key's size, never the key.
            #expect(sent.standardOutput.contains("AttachmentKey(32 bytes)"))

            // send-batch: the same files as one journaled batch.
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("attache-ex-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            let batch = try await runCommand(bin.backend + "/send-batch", [server.uploadURL, scratch + "/batch.sqlite"] + files)
            #expect(batch.status == 0, "\(batch.all)")
            for name in names {
                #expect(batch.standardOutput.contains("/\(name) "), "no batch line for \(name):\n\(batch.all)")
            }

            // gateway: a client's upload streamed through the pipeline, the receipt answered as JSON, its
            // telemetry exported through TelemetryExport to a collector on opentelemetry-proto and on
            // /metrics.
            let exportedPath = scratch + "/otlp.jsonl"
            let receiver = try await ServiceProcess(
                [try python(with: ["opentelemetry.proto"]), ServiceProcess.tools + "/otlp_receiver.py", exportedPath])
            defer { receiver.stop() }
            let gateway = try await ServiceProcess(
                [bin.backend + "/gateway", server.uploadURL, "0"],
                environment: [
                    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiver.port)",
                    "GATEWAY_METRICS_LISTEN": "127.0.0.1:0",
                ],
                ready: "gateway ready on port")
            defer { gateway.stop() }
            let metricsLine = try #require(await gateway.process.waitForLine(containing: "gateway metrics on port", upTo: 10))
            let metricsPort = try #require(metricsLine.split(separator: " ").last.flatMap { Int($0) })
            let original = try Data(contentsOf: URL(fileURLWithPath: samples + "/document.pdf"))
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(gateway.port)/attachments/report.pdf")!)
            request.httpMethod = "POST"
            request.httpBody = original
            request.setValue("Bearer user-token", forHTTPHeaderField: "Authorization")
            let (data, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
            let receipt = try JSONDecoder().decode(UploadReceipt.self, from: data)
            #expect(receipt.filename == "report.pdf")
            #expect(receipt.mimeType == "application/pdf")
            #expect(receipt.seal.key != nil)

            let copy = scratch + "/report.pdf"
            _ = try await Downloader().download(receipt: receipt, to: copy)
            #expect(try Data(contentsOf: URL(fileURLWithPath: copy)) == original)

            // The send was measured: /metrics counts it while the gateway runs.
            let (metrics, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(metricsPort)/metrics")!)
            let exposition = String(decoding: metrics, as: UTF8.self)
            #expect(exposition.contains("attache_attachments_total"), "\(exposition.prefix(2000))")
            // SIGTERM: the gateway stops and sends its spans before it exits. One trace: the gateway's
            // request span, the pipeline's send under it, the upload's attempt under that.
            gateway.process.kill(SIGTERM)
            #expect(try await gateway.process.wait(upTo: 60) == 0, "\(gateway.outputTail())")
            let spans = try String(contentsOfFile: exportedPath, encoding: .utf8).split(separator: "\n").compactMap {
                try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.filter { $0["signal"] as? String == "span" }
            func field(_ span: [String: Any], _ name: String) -> String { span[name] as? String ?? "" }
            let serverSpan = try #require(spans.first { ($0["kind"] as? Int) == 2 }, "no server span in \(spans)")
            let send = try #require(spans.first { field($0, "name") == "attache.send" }, "no attache.send in \(spans)")
            let attempt = try #require(spans.first { field($0, "name") == "POST" }, "no attempt span in \(spans)")
            #expect(field(send, "parentSpanId") == field(serverSpan, "spanId"))
            #expect(field(attempt, "parentSpanId") == field(send, "spanId"))
            #expect(Set([serverSpan, send, attempt].map { field($0, "traceId") }).count == 1)
            #expect((send["resource"] as? [String: Any])?["service.name"] as? String == "gateway")
        }
    }

    @Test("a program on the Attache library alone links neither GRDB nor full Foundation")
    func attacheAloneLinksNoDatabaseAndNoFoundation() async throws {
        let program = try await Self.build().examples + "/send-attachments"

        // The shared libraries it loads: FoundationEssentials, never Foundation (CoreFoundation and ICU's
        // data), and no SQLite.
        let ldd = try await runCommand("/usr/bin/env", ["ldd", program])
        try #require(ldd.status == 0, "\(ldd.all)")
        let libraries = ldd.standardOutput.split(separator: "\n").compactMap {
            $0.split(whereSeparator: \.isWhitespace).first.map(String.init)
        }
        #expect(libraries.contains("libFoundationEssentials.so"), "\(ldd.standardOutput)")
        for absent in ["libFoundation.so", "libFoundationNetworking.so", "libFoundationXML.so", "libsqlite3.so.0"] {
            #expect(!libraries.contains(absent), "\(absent) is linked:\n\(ldd.standardOutput)")
        }

        // GRDB is a Swift module, linked statically when it is linked at all: none of its symbols (their
        // mangled names carry the module's name, `4GRDB`) is in the program. The pipeline's are.
        let nm = try await runCommand("/usr/bin/env", ["nm", "--defined-only", program])
        try #require(nm.status == 0, "\(nm.standardError)")
        #expect(nm.standardOutput.contains("7Attache18AttachmentPipeline"), "not the program expected")
        let grdb = nm.standardOutput.split(separator: "\n").filter { $0.contains("4GRDB") }
        #expect(grdb.isEmpty, "GRDB symbols: \(grdb.prefix(5))")
    }

    @Test("the example package on the Attache library alone resolves no GRDB, PostgresNIO or SwiftNIO")
    func attacheAloneResolvesNoDatabaseAndNoNIO() async throws {
        let shown = try await runCommand(
            "/usr/bin/env",
            ["swift", "package", "--package-path", Self.examples, "--scratch-path", Self.examplesScratch] + Self.flags
                + ["show-dependencies", "--format", "flatlist"])
        try #require(shown.status == 0, "\(shown.all)")
        let packages = shown.standardOutput.split(separator: "\n").map { $0.lowercased() }
        #expect(packages.contains { $0.contains("swift-log") }, "\(shown.standardOutput)")
        for absent in ["grdb", "postgres-nio", "swift-nio", "hummingbird"] {
            #expect(!packages.contains { $0.contains(absent) }, "\(absent) is a dependency:\n\(shown.standardOutput)")
        }
    }
}
