package import Attache
import AttacheCore

/// Sends span batches to a collector over OTLP/HTTP with protobuf bodies, through Attache's own
/// transport (libcurl), never through the instrumented client: an export makes no span of its own.
///
/// One POST per batch to the traces endpoint, `Content-Type: application/x-protobuf`, gzipped when asked
/// (`Content-Encoding: gzip`), with the headers of `OTEL_EXPORTER_OTLP_HEADERS`. A 2xx answer is
/// success; anything else, or no answer within the timeout, is a ``SpanExportFailure`` that names the
/// transport's error code or the status, never the URL or a header (either may hold a credential). No
/// retry: the processor counts the spans as lost and goes on.
package struct OTLPHTTPSpanExporter: SpanExporter {
    /// Where and how to send.
    package struct Settings: Sendable {
        /// The full traces URL (`…/v1/traces`).
        package var endpoint: String
        /// Extra headers (credentials for the collector).
        package var headers: [HeaderField] = []
        /// The longest one export may take, connection included.
        package var timeout: Duration = .seconds(10)
        /// Whether bodies are gzipped.
        package var gzip = false
        /// A PEM file of CA certificates to trust for an https collector.
        package var caFile: String?
        /// A client certificate and its key (PEM) for a collector that asks for one.
        package var clientCertificate: String?
        package var clientKey: String?

        /// Settings for `endpoint`, with the defaults for the rest.
        package init(endpoint: String) { self.endpoint = endpoint }
    }

    let settings: Settings
    let encoder: OTLPTraceEncoder
    let transport: any HTTPTransport

    /// Creates an exporter over `transport` (Attache's shared curl transport by default).
    package init(settings: Settings, encoder: OTLPTraceEncoder, transport: any HTTPTransport = CurlTransport.shared) {
        self.settings = settings
        self.encoder = encoder
        self.transport = transport
    }

    /// The connection options of every export.
    private var connection: ConnectionConfiguration {
        var connection = ConnectionConfiguration()
        connection.connectTimeout = min(connection.connectTimeout, settings.timeout)
        connection.stallTimeout = settings.timeout
        connection.caFile = settings.caFile
        connection.clientCertificate = settings.clientCertificate
        connection.clientKey = settings.clientKey
        // A collector answers where it is asked; a redirect is a failure like any other answer but 2xx.
        connection.redirects = .none
        return connection
    }

    package func export(_ spans: [FinishedSpan]) async throws {
        var body = encoder.encode(spans)
        var headers = settings.headers
        headers.append(HeaderField(name: "Content-Type", value: "application/x-protobuf"))
        if settings.gzip {
            body = try Gzip.compress(body)
            headers.append(HeaderField(name: "Content-Encoding", value: "gzip"))
        }
        let response: ServerResponse
        do {
            let request = try TransportRequest(
                method: "POST", url: settings.endpoint, headers: headers, body: DataSource(body),
                connection: connection, maximumResponseBodySize: 64 * 1024, timeout: settings.timeout
            ).prepared()
            response = try await transport.send(request)
        } catch let error as TransportError {
            throw SpanExportFailure(error.code.rawValue)
        } catch {
            throw SpanExportFailure(String(describing: type(of: error)))
        }
        guard (200..<300).contains(response.status) else { throw SpanExportFailure("HTTP \(response.status)") }
    }
}
