public import Hummingbird
import Attache
import Logging
internal import NIOCore
import HummingbirdCore
import HummingbirdTLS
internal import NIOSSL
import ServiceLifecycle

/// Builds the reference server: `POST /upload` (multipart, or the creation of a tus 1.0 or IETF
/// resumable upload, see ``ReferenceServerConfiguration/resumable``), `OPTIONS /upload` (tus),
/// `HEAD|PATCH|DELETE /resumable/{id}`, `GET /receipts/{id}`, `GET|HEAD /files/{id}`, `GET /stats`,
/// `GET /health`, and `POST /echo-sealed` (the encrypted JSON form POST, opened with the `--key-file` key).
///
/// The store directory is created (and its `tmp/` emptied) before this returns. Run the result with
/// `runService()` in an executable (SIGINT/SIGTERM shut it down), or use
/// ``withReferenceServer(configuration:_:)`` in tests, which also tells you the bound port.
///
/// ```swift
/// let app = try await buildApplication(configuration: .init(storeDirectory: "./attache-store"))
/// try await app.runService()
/// ```
///
/// - Parameters:
///   - configuration: where to listen and store, which faults to inject.
///   - onServerRunning: called once with the bound port when the server listens.
/// - Throws: ``AttacheError/Code/fileUnwritable`` when the store cannot be created.
public func buildApplication(
    configuration: ReferenceServerConfiguration,
    onServerRunning: @escaping @Sendable (_ port: Int) async -> Void = { _ in }
) async throws -> some ApplicationProtocol {
    var logger = Logger(label: "attache-server")
    logger.logLevel = configuration.logLevel
    let root = configuration.storeDirectory
    let store = try await BlockingPool.shared.run { try UploadStore(root: root) }
    let verifier = try configuration.keyFile.map { path in
        do {
            return try SealVerifier(keyFile: path)
        } catch let error as AttacheError {
            throw AttacheError(
                .invalidKey, stage: .configuration, "cannot read the server's key file: \(error.message)", file: path,
                cause: error)
        }
    }
    let router = try makeRouter(configuration: configuration, store: store, verifier: verifier)
    let server: HTTPServerBuilder
    if let tls = configuration.tls {
        server = try .tls(.http1(), tlsConfiguration: try makeTLSConfiguration(tls))
    } else {
        server = .http1()
    }
    return Application(
        router: router,
        server: server,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "attache-server"),
        onServerRunning: { channel in
            await onServerRunning(channel.localAddress?.port ?? configuration.port)
        },
        logger: logger)
}

/// Starts a reference server, waits until it listens, runs `body` with the bound port, then shuts
/// the server down, also when `body` throws.
///
/// Set `port` to 0 in the configuration to get a free port. This is what in-process tests,
/// benchmarks and demos use.
///
/// ```swift
/// let stats = try await withReferenceServer(configuration: .init(storeDirectory: dir, port: 0)) { port in
///     try await upload(to: "http://127.0.0.1:\(port)/upload")
/// }
/// ```
///
/// - Throws: whatever `body` throws; ``AttacheError/Code/connectionFailed`` when the server cannot
///   listen (port in use, bad host); ``AttacheError/Code/fileUnwritable`` when the store cannot be
///   created.
public func withReferenceServer<T: Sendable>(
    configuration: ReferenceServerConfiguration,
    _ body: @Sendable (_ port: Int) async throws -> T
) async throws -> T {
    let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
    let app = try await buildApplication(configuration: configuration) { port in
        portContinuation.yield(port)
        portContinuation.finish()
    }
    // A graceful shutdown rather than cancellation: connections are closed in order and a stalled
    // request's sleep ends at once (see FaultInjector), without error logs from torn-down channels.
    let services = ServiceGroup(configuration: .init(services: [app], logger: app.logger))
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            // Ends the port stream also when the server stops before listening.
            defer { portContinuation.finish() }
            try await services.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            var cause: (any Error & Sendable)?
            do { try await group.next() } catch { cause = error }
            throw AttacheError(
                .connectionFailed, stage: .configuration,
                "the reference server could not listen on \(configuration.host):\(configuration.port)", cause: cause)
        }
        let result: Result<T, any Error>
        do {
            result = .success(try await body(port))
        } catch {
            result = .failure(error)
        }
        await services.triggerGracefulShutdown()
        try? await group.waitForAll()
        return try result.get()
    }
}

/// Loads the PEM certificate chain and key for HTTPS.
func makeTLSConfiguration(_ files: ReferenceServerConfiguration.TLSFiles) throws -> TLSConfiguration {
    do {
        let chain = try NIOSSLCertificate.fromPEMFile(files.certificateChain).map { NIOSSLCertificateSource.certificate($0) }
        let key = try NIOSSLPrivateKey(file: files.privateKey, format: .pem)
        return TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
    } catch {
        throw AttacheError(
            .invalidArgument, stage: .configuration,
            "cannot load the TLS certificate or key: \(error)", cause: ServerTLSError(description: "\(error)"))
    }
}

/// A TLS setup failure, kept as the cause of an ``AttacheError``.
struct ServerTLSError: Error, Sendable, CustomStringConvertible {
    let description: String
}

func makeRouter(
    configuration: ReferenceServerConfiguration, store: UploadStore, verifier: SealVerifier? = nil
) throws -> Router<ServerRequestContext> {
    let router = Router(context: ServerRequestContext.self)
    if configuration.recordsTelemetry {
        router.add(middleware: RequestTracingMiddleware())
        router.add(middleware: MetricsMiddleware())
    }
    router.add(middleware: RequestLogMiddleware(.info))
    let uploads = UploadController(
        configuration: configuration, store: store, verifier: verifier,
        log: configuration.uploadLogPath.map(UploadRequestLog.init(path:)),
        scanner: configuration.clamd.map(ClamAVScanner.init(address:)))
    let files = FileController(store: store, faults: configuration.fileFaults, logPath: configuration.fileLogPath)
    if configuration.resumable {
        let resumable = ResumableController(
            configuration: configuration,
            uploads: try ResumableStore(store: store, lifetime: configuration.resumableLifetime), verifier: verifier)
        router.post("/upload") { request, context in
            if resumable.handles(request) { return try await resumable.create(request, context: context) }
            return try await uploads.upload(request, context: context)
        }
        router.on("/upload", method: .options) { _, _ in resumable.options() }
        router.head("/resumable/{id}") { request, context in try await resumable.head(request, context: context) }
        router.patch("/resumable/{id}") { request, context in try await resumable.patch(request, context: context) }
        router.delete("/resumable/{id}") { request, context in try await resumable.delete(request, context: context) }
        router.get("/receipts/{id}") { request, context in try await resumable.receipt(request, context: context) }
    } else {
        router.post("/upload") { request, context in try await uploads.upload(request, context: context) }
    }
    let sealedEcho = SealedEchoController(verifier: verifier)
    router.post("/echo-sealed") { request, context in try await sealedEcho.echo(request, context: context) }
    router.get("/files/{id}") { request, context in try await files.serve(request, context: context, includeBody: true) }
    router.head("/files/{id}") { request, context in try await files.serve(request, context: context, includeBody: false) }
    // The request benchmarks' server that takes its time: reads the body, waits `delay-ms` (at most 10 s),
    // and answers 200 with a small JSON body, as nginx's `/answer200` does at once.
    router.post("/answer") { request, _ in
        for try await _ in request.body {}
        let delay = min(max(Int(request.uri.queryParameters.get("delay-ms") ?? "") ?? 0, 0), 10_000)
        if delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }
        return jsonResponse(.ok, Array(#"{"errorCode":0,"data":{"fileId":"a1"}}"#.utf8))
    }
    router.get("/stats") { _, _ in
        jsonResponse(.ok, (try? ServerJSON.encoder.encode(store.statistics)).map { Array($0) } ?? [])
    }
    router.get("/health") { _, _ in
        Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: "ok")))
    }
    return router
}

/// A complete JSON response.
func jsonResponse(_ status: HTTPResponse.Status, _ bytes: [UInt8], headers extra: HTTPFields = [:]) -> Response {
    var headers = extra
    headers[.contentType] = "application/json"
    return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
}

/// A JSON error response `{"errorCode":status,"message":message}`.
func errorResponse(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) -> Response {
    jsonResponse(status, ServerJSON.error(code: status.code, message: message), headers: headers)
}
