import ArgumentParser
import Attache
import Foundation
import Testing
@testable import AttacheCLI

/// The scan options and the config file's `clamd` and `scan-failure`, into the pipeline's Scan stage.
@Suite struct ScanOptionsTests {
    static func configuration(_ arguments: [String], endpoint: Endpoint = .none, scanWait: Double = 0) throws
        -> PipelineConfiguration
    {
        try PipelineFlagsParser.parse(["--url", "http://127.0.0.1:9/upload"] + arguments).flags
            .configuration(endpoint: endpoint, environment: [:], scanWait: scanWait)
    }

    @Test func flagsMakeTheScanStage() throws {
        let none = try Self.configuration([])
        #expect(none.scan.scanner == nil)
        let scan = try Self.configuration([
            "--clamd", "tcp:127.0.0.1:3310", "--scan-failure", "send", "--scan", "original", "--clamd-transfer", "stream",
        ]).scan
        let scanner = try #require(scan.scanner as? ClamAVScanner)
        #expect(scanner.configuration.address == .tcp(host: "127.0.0.1", port: 3310))
        #expect(scanner.configuration.transfer == .stream)
        #expect(scan.failurePolicy == .send)
        #expect(scan.scansOriginal)
        #expect(scan.unreachableWait == nil)
        // batch and worker wait for an unreachable clamd (600 s unless --scan-wait says otherwise).
        #expect(try Self.configuration(["--clamd", "unix:/run/clamd.ctl"], scanWait: 600).scan.unreachableWait == .seconds(600))
        #expect(try Self.configuration(["--clamd", "unix:/run/clamd.ctl", "--scan-wait", "2.5"], scanWait: 600).scan.unreachableWait == .milliseconds(2500))
    }

    @Test func badValuesAreUsageErrors() throws {
        for arguments in [["--clamd", "clamd.ctl"], ["--clamd", "tcp:host"], ["--scan-failure", "maybe"], ["--scan", "both"]] {
            #expect(throws: (any Error).self, "\(arguments)") { try Self.configuration(arguments) }
        }
        // Scan options without a clamd would silently do nothing.
        #expect(throws: ValidationError.self) { try Self.configuration(["--scan-failure", "send"]) }
    }

    @Test func endpointClamdAndFlagsOverIt() throws {
        let file = try EndpointConfigFile.parse(
            """
            [endpoints.scanned]
            url = "http://127.0.0.1:9/upload"
            clamd = "unix:/run/clamav/clamd.ctl"
            scan-failure = "send"
            """, path: "config.toml")
        let endpoint = try file.endpoint(named: "scanned")
        #expect(endpoint.clamd == .unix(path: "/run/clamav/clamd.ctl"))
        #expect(endpoint.scanFailure == .send)
        let fromFile = try Self.configuration([], endpoint: endpoint).scan
        #expect((fromFile.scanner as? ClamAVScanner)?.configuration.address == .unix(path: "/run/clamav/clamd.ctl"))
        #expect(fromFile.failurePolicy == .send)
        let overridden = try Self.configuration(["--clamd", "tcp:10.0.0.5:3310", "--scan-failure", "refuse"], endpoint: endpoint).scan
        #expect((overridden.scanner as? ClamAVScanner)?.configuration.address == .tcp(host: "10.0.0.5", port: 3310))
        #expect(overridden.failurePolicy == .refuse)
        for bad in ["clamd = \"clamd.ctl\"", "scan-failure = \"maybe\"", "clamd = 3310"] {
            #expect(throws: AttacheError.self, "\(bad)") {
                try EndpointConfigFile.parse("[endpoints.x]\n\(bad)\n", path: "config.toml").endpoint(named: "x")
            }
        }
    }
}
