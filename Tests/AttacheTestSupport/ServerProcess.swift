import AttacheServer
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The built `attache-server` executable running on 127.0.0.1, stopped by its pid.
///
/// Live tests run the reference server in a process of its own rather than in the test process: there
/// its handlers would share the cooperative pool (one thread per core) with every CPU-bound test that
/// runs in parallel, and have been seen held back for over a minute, long enough for an upload's stall
/// timeout to end an attempt that nothing was wrong with. A process of its own is scheduled by the
/// kernel like any other.
package struct ServerProcess {
    package let port: Int
    /// `http` or `https`.
    package let scheme: String
    private let process: ChildProcess

    package enum Exit: Equatable { case killed, status(Int32) }

    /// Starts the server on `port` (0: a free one) over `store` and waits for its `listening` line.
    package static func start(store: String, port: Int = 0, extra: [String] = []) async throws -> ServerProcess {
        let process = try ChildProcess(
            executable: try builtExecutable("attache-server"),
            arguments: ["--host", "127.0.0.1", "--port", String(port), "--store", store, "--log-level", "critical"] + extra)
        try await process.waitForOutput(containing: "listening on", count: 1, upTo: 60)
        let line = process.standardOutput
        guard let range = line.range(of: "://127.0.0.1:"),
            let bound = Int(line[range.upperBound...].prefix { $0.isNumber })
        else {
            Glibc.kill(process.processIdentifier, SIGKILL)
            throw TestFailure("attache-server did not start: \(line) \(process.standardError)")
        }
        let scheme = line.contains("https://") ? "https" : "http"
        return ServerProcess(port: bound, scheme: scheme, process: process)
    }

    /// Starts the server with `configuration`, given as the command line's options; its `port` may be 0.
    package static func start(configuration: ReferenceServerConfiguration) async throws -> ServerProcess {
        try await start(
            store: configuration.storeDirectory, port: configuration.port, extra: try arguments(for: configuration))
    }

    /// The options of `attache-server` that give a server `configuration` (host, port, store and log level
    /// aside).
    /// - Throws: ``TestFailure`` for a setting the command line cannot express.
    package static func arguments(for configuration: ReferenceServerConfiguration) throws -> [String] {
        guard configuration.host == "127.0.0.1" else { throw TestFailure("live tests listen on 127.0.0.1 only") }
        guard configuration.maxFieldSize == ReferenceServerConfiguration(storeDirectory: "").maxFieldSize else {
            throw TestFailure("attache-server has no option for the field size limit")
        }
        // The log level is always `critical` (``start(store:port:extra:)``): nothing reads the server's logs.
        var arguments: [String] = []
        if !configuration.faults.isEmpty { arguments += ["--fault", configuration.faults.description] }
        if !configuration.fileFaults.isEmpty { arguments += ["--file-fault", configuration.fileFaults.description] }
        if !configuration.appendFaults.isEmpty { arguments += ["--append-fault", configuration.appendFaults.description] }
        if let path = configuration.fileLogPath { arguments += ["--file-log", path] }
        if let path = configuration.uploadLogPath { arguments += ["--upload-log", path] }
        if let path = configuration.resumableLogPath { arguments += ["--resumable-log", path] }
        if let size = configuration.maxBodySize { arguments += ["--max-body", String(size)] }
        if let size = configuration.maxAppendSize { arguments += ["--max-append", String(size)] }
        if !configuration.resumable { arguments.append("--no-resumable") }
        let lifetime = configuration.resumableLifetime.components
        guard lifetime.attoseconds == 0 else { throw TestFailure("--resumable-expiry takes whole seconds") }
        arguments += ["--resumable-expiry", String(lifetime.seconds)]
        if let keyFile = configuration.keyFile { arguments += ["--key-file", keyFile] }
        if let clamd = configuration.clamd { arguments += ["--clamd", clamd.description] }
        if let tls = configuration.tls { arguments += ["--tls-cert", tls.certificateChain, "--tls-key", tls.privateKey] }
        return arguments
    }

    /// Sends SIGKILL to the server.
    package func kill() { process.kill() }

    /// Waits for the server to end and says how: killed by SIGKILL, or its status (a signal's number when
    /// another signal ended it).
    package func waitForExit() async throws -> Exit {
        guard let status = try await process.wait(upTo: 60) else { throw TestFailure("attache-server did not exit") }
        return process.endedBySignal && status == SIGKILL ? .killed : .status(status)
    }

    /// Sends SIGTERM, a graceful stop (requests in flight end, exporters flush), and waits for the end.
    package func terminate() async throws -> Exit {
        Glibc.kill(process.processIdentifier, SIGTERM)
        return try await waitForExit()
    }

    /// Kills the server and waits for it to end, so that its port and store are free again.
    package func stop() async {
        kill()
        _ = try? await process.wait(upTo: 60)
    }
}

/// Runs `body` against an `attache-server` process started with `configuration` (`port` 0 for a free
/// one), given the port it listens on; stops the server afterwards, also when `body` throws.
package func withReferenceServerProcess<T>(
    configuration: ReferenceServerConfiguration, _ body: (_ port: Int) async throws -> T
) async throws -> T {
    let server = try await ServerProcess.start(configuration: configuration)
    do {
        let result = try await body(server.port)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}
