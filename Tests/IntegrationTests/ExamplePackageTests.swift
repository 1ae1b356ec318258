import Attache
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import AttacheTestSupport
import Testing

/// `Samples/Examples` is a package of its own that depends on Attache exactly as the README's "Use it in
/// your package" says. Here it is built, and its two programs are run against a live reference server:
/// files from a path, from memory and from an AsyncSequence, each fetched back from its receipt and
/// opened with the receipt's key; and a Hummingbird gateway that streams a client's upload through the
/// pipeline.
@Suite("Example package", .serialized)
struct ExamplePackageTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let examples = root.appendingPathComponent("Samples/Examples").path

    /// Builds the example package and returns the folder of its executables.
    ///
    /// It builds in this package's own `.build`: the example depends on this package by path, so every
    /// module it needs is already compiled there, and only its two programs are (minutes saved against a
    /// scratch path of its own, which compiles Attache, GRDB, SwiftNIO and Hummingbird a second time).
    /// `Scripts/test.sh` runs the same build before the tests, so this one finds everything up to date.
    /// `--ignore-lock`: the running `swift test` holds that build folder's lock for as long as it runs.
    /// `ATTACHE_SWIFTPM_FLAGS` (set by `Scripts/test.sh`) holds the flags that build was made with.
    /// `ATTACHE_EXAMPLE_PACKAGE_BUILT` (also set by the script, which runs that same command before the tests)
    /// saves loading the package graph a second time to find nothing to do.
    static func build() async throws -> String {
        let scratch = root.appendingPathComponent(".build").path
        let environment = ProcessInfo.processInfo.environment
        if environment["ATTACHE_EXAMPLE_PACKAGE_BUILT"] == nil {
            let flags = (environment["ATTACHE_SWIFTPM_FLAGS"] ?? "").split(separator: " ").map(String.init)
            // --disable-build-manifest-caching: SwiftPM would otherwise take the plan it cached for this
            // package's own build in the same folder, and make neither program (Scripts/test.sh).
            let arguments = ["build", "--package-path", examples, "--scratch-path", scratch, "--ignore-lock", "--disable-build-manifest-caching"] + flags
            let built = try await runCommand("/usr/bin/env", ["swift"] + arguments)
            try #require(built.status == 0, "the example package does not build:\n\(built.all.suffix(4000))")
        }
        // SwiftPM links `debug` in the scratch path to the debug build's folder of executables.
        return scratch + "/debug"
    }

    @Test("the example package builds, and its programs send, fetch back and forward through a gateway")
    func examplePackage() async throws {
        let bin = try await Self.build()
        let samples = Self.root.appendingPathComponent("Samples").path
        let files = ["document.pdf", "photo.jpg", "notes.txt"].map { samples + "/" + $0 }
        try await LiveServer.with { server in
            // send-attachments: three ways in, one way back, then a batch.
            let sent = try await runCommand(bin + "/send-attachments", [server.uploadURL] + files)
            #expect(sent.status == 0, "\(sent.all)")
            for name in ["document.pdf", "photo.jpg", "notes.txt"] {
                for way in ["path", "memory", "stream"] {
                    #expect(sent.standardOutput.contains("checked \(way) \(name)"), "\(way) \(name):\n\(sent.all)")
                }
                #expect(sent.standardOutput.contains("/\(name) "), "no batch line for \(name)")
            }
            // Printed receipts name the key's size, never the key.
            #expect(sent.standardOutput.contains("AttachmentKey(32 bytes)"))

            // gateway: a client's upload streamed through the pipeline, the receipt answered as JSON.
            let gateway = try await ServiceProcess([bin + "/gateway", server.uploadURL, "0"], ready: "gateway ready on port")
            defer { gateway.stop() }
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

            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("attache-ex-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            _ = try await Downloader().download(receipt: receipt, to: scratch)
            #expect(try Data(contentsOf: URL(fileURLWithPath: scratch)) == original)
        }
    }
}
