// A Hummingbird gateway in front of an upload endpoint: a client POSTs a file's bytes to
// /attachments/NAME, and the gateway streams the request body through the Attache pipeline
// (detect, recompress, seal with a fresh key, upload) without spooling small bodies to disk, forwards
// the client's Authorization header with that one send, and answers with the receipt as JSON (key
// included: the client writes it into the chat message).
//
//   swift run --package-path Samples/Backend gateway http://127.0.0.1:8080/upload 8090
//   curl --data-binary @Samples/photo.jpg http://127.0.0.1:8090/attachments/photo.jpg
//
// Prints "gateway ready on port PORT" once it listens (PORT 0 picks a free one).
//
// Telemetry, as the `attache` executable exports it (AttacheMetricsExport's TelemetryExport): with
// OTEL_EXPORTER_OTLP_ENDPOINT set, spans and metrics go to that collector, the pipeline's spans under the
// gateway's own request span; with GATEWAY_METRICS_LISTEN=HOST:PORT, /metrics is served there too
// ("gateway metrics on port PORT"). SIGTERM or SIGINT stops the gateway and sends what is left.
import Attache
import AttacheMetricsExport
import Foundation
import Hummingbird

let arguments = CommandLine.arguments
guard arguments.count == 3, let port = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: gateway UPLOAD-URL PORT\n".utf8))
    exit(64)
}
// Before the pipeline is made: a process bootstraps its telemetry once, before anything records.
let telemetry = try TelemetryExport.bootstrap(
    serviceName: "gateway", metricsListen: ProcessInfo.processInfo.environment["GATEWAY_METRICS_LISTEN"])
if let metricsPort = telemetry.metricsPort {
    FileHandle.standardOutput.write(Data("gateway metrics on port \(metricsPort)\n".utf8))
}
let pipeline = try AttachmentPipeline(configuration: PipelineConfiguration(url: arguments[1]))

let router = Router()
// A server span for each request, which the pipeline's spans (the send and its attempts) hang from.
router.add(middleware: TracingMiddleware())
router.post("/attachments/:name") { request, context -> Response in
    let name = try context.parameters.require("name")
    var options = SendOptions()
    if let token = request.headers[.authorization] {
        options.headers = [HeaderField(name: "Authorization", value: token)]
    }
    options.timeLimit = .seconds(120)
    // The body as it arrives, chunk by chunk; its declared length is checked.
    let chunks = request.body.map { Array(buffer: $0) }
    let length = request.headers[.contentLength].flatMap { Int64($0) }
    do {
        let receipt = try await pipeline.send(
            Attachment(stream: chunks, filename: name, byteCount: length), options: options)
        let json = try JSONEncoder().encode(receipt)
        return Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: json)))
    } catch let error as AttacheError {
        // A typed error, as JSON; the upstream's refusal keeps its status.
        let status: HTTPResponse.Status = error.rejection != nil ? .badGateway : .unprocessableContent
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(error))))
    }
}

let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port)),
    onServerRunning: { channel in
        // Written straight to the descriptor: print() would sit in a buffer when stdout is a pipe.
        FileHandle.standardOutput.write(Data("gateway ready on port \(channel.localAddress?.port ?? port)\n".utf8))
    })
// Until SIGTERM or SIGINT; then what the exporters still hold goes to the collector (5 s at most).
try await app.runService()
if let warning = await telemetry.shutdown() {
    FileHandle.standardError.write(Data((warning + "\n").utf8))
}
