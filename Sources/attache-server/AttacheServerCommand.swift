import ArgumentParser
import Attache
import AttacheMetricsExport
import AttacheServer
import Foundation
import Logging

/// `attache-server`: the reference upload server of the Attache project.
@main
struct AttacheServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache-server",
        abstract: "Reference server for Attache uploads: multipart or resumable (tus 1.0, IETF draft) POST /upload, GET /files/{id}, fault injection.",
        discussion: """
            Fault rules (--fault, repeatable or comma-separated; or per request in the X-Attache-Fault header):
              KIND[@WHEN][:key=value...]  KIND = 500|502|503|504|408|429|413|stall|drop|garbage|empty|truncated|business|crash
              WHEN = N | N-M | * | P%   (default *)
              crash:at=after-part|after-files|after-key kills the server (SIGKILL) at that point of the commit
              (--fault only).
            Examples: --fault 503@1-2:retry-after=1   --fault drop@3:after=4096   --fault business:code=1002
            """)

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0 picks a free one).")
    var port = 8080

    @Option(help: "Directory for stored uploads (created if missing).")
    var store = "./attache-store"

    @Option(name: .customLong("key-file"), help: "Key file: decrypt and verify sealed uploads (422 when they do not verify; the sealed bytes are stored), and open encrypted JSON forms at POST /echo-sealed.")
    var keyFile: String?

    @Option(name: .customLong("tls-cert"), help: "PEM certificate chain: serve HTTPS (with --tls-key).")
    var tlsCertificate: String?

    @Option(name: .customLong("tls-key"), help: "PEM private key for --tls-cert.")
    var tlsKey: String?

    @Option(help: "Fault rules to inject into POST /upload (repeatable).")
    var fault: [String] = []

    @Option(name: .customLong("file-fault"), help: "Fault rules to inject into GET /files/{id} (repeatable): change, cut:after=N, 416, throttle:rate=BYTES_PER_SECOND, each with an optional @WHEN.")
    var fileFault: [String] = []

    @Option(name: .customLong("file-log"), help: "Append one JSON line per GET|HEAD /files/{id} (id, range, ifRange, status, bytes sent) to this file.")
    var fileLog: String?

    @Option(name: .customLong("upload-log"), help: "Append one JSON line per POST /upload with an Idempotency-Key (key, outcome stored|replayed|in-progress, fileId) to this file.")
    var uploadLog: String?

    @Option(name: .customLong("max-body"), help: "Answer 413 early to bodies larger than this many bytes.")
    var maxBody: Int64?

    @Flag(name: .customLong("no-resumable"), help: "Serve multipart uploads only: no tus 1.0, no IETF resumable uploads.")
    var noResumable = false

    @Option(name: .customLong("resumable-expiry"), help: "Seconds an unfinished resumable upload is kept (default 86400).")
    var resumableExpiry: Int = 86400

    @Option(name: .customLong("max-append"), help: "Answer 413 to a resumable append (PATCH or creating POST) larger than this many bytes; announced in Upload-Limit.")
    var maxAppend: Int64?

    @Option(name: .customLong("append-fault"), help: "Fault rules to inject into resumable appends (repeatable): drop:after=N, cut:at=OFFSET, stall:after=N:seconds=S, 460, each with an optional @WHEN counting appends.")
    var appendFault: [String] = []

    @Option(name: .customLong("resumable-log"), help: "Append one JSON line per resumable upload event (create, append with its offset and bytes received, complete, delete, expired) to this file.")
    var resumableLog: String?

    @Option(
        help: "Scan every file part with clamd (unix:PATH or tcp:HOST:PORT) before storing it: 422 'infected: SIGNATURE' when clamd finds something, 503 when it gives no verdict.")
    var clamd: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    @OptionGroup(title: "Observability") var metrics: MetricsOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        if let maxBody, maxBody < 0 { throw ValidationError("--max-body must not be negative") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
        _ = try faultPlan()
        _ = try fileFaultPlan()
        _ = try appendFaultPlan()
        guard resumableExpiry > 0 else { throw ValidationError("--resumable-expiry must be positive") }
        if let maxAppend, maxAppend <= 0 { throw ValidationError("--max-append must be positive") }
        if (tlsCertificate == nil) != (tlsKey == nil) {
            throw ValidationError("--tls-cert and --tls-key go together")
        }
    }

    private func faultPlan() throws -> FaultPlan {
        var plan = FaultPlan.none
        for spec in fault {
            do {
                plan.append(try FaultPlan(parsing: spec))
            } catch {
                throw ValidationError("\(error)")
            }
        }
        return plan
    }

    private func fileFaultPlan() throws -> FileFaultPlan {
        do {
            return try FileFaultPlan(parsing: fileFault.joined(separator: ","))
        } catch {
            throw ValidationError("\(error)")
        }
    }

    private func appendFaultPlan() throws -> AppendFaultPlan {
        do {
            return try AppendFaultPlan(parsing: appendFault.joined(separator: ","))
        } catch {
            throw ValidationError("\(error)")
        }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var configuration = ReferenceServerConfiguration(
            storeDirectory: store, host: host, port: port, faults: try faultPlan(), maxBodySize: maxBody,
            logLevel: level, keyFile: keyFile)
        configuration.fileFaults = try fileFaultPlan()
        configuration.fileLogPath = fileLog
        configuration.uploadLogPath = uploadLog
        if let clamd {
            do { configuration.clamd = try ClamdAddress(parsing: clamd) } catch let error as AttacheError {
                throw ValidationError("--clamd: \(error.message)")
            }
        }
        configuration.resumable = !noResumable
        configuration.resumableLifetime = .seconds(resumableExpiry)
        configuration.maxAppendSize = maxAppend
        configuration.appendFaults = try appendFaultPlan()
        configuration.resumableLogPath = resumableLog
        configuration.recordsTelemetry = metrics.metricsListen != nil || metrics.otlp.isEnabled()
        if let tlsCertificate, let tlsKey {
            configuration.tls = .init(certificateChain: tlsCertificate, privateKey: tlsKey)
        }
        let host = self.host
        let scheme = configuration.scheme
        let app = try await buildApplication(configuration: configuration) { port in
            // Unbuffered, so a script waiting for this line sees it at once.
            FileHandle.standardOutput.write(Data("attache-server listening on \(scheme)://\(host):\(port)\n".utf8))
        }
        // Hummingbird stops on SIGINT and SIGTERM by itself; the exporters flush after it.
        try await metrics.serving(serviceName: "attache-server") { try await app.runService() }
    }
}
