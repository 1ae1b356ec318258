import Attache
import HTTPTypes
import Hummingbird
import Tracing

/// One server span per request, a child of the client's span when the request carries its context
/// (`traceparent`, through the bootstrapped instrument), with OpenTelemetry's HTTP server attributes.
///
/// Hummingbird's own `TracingMiddleware` records the query as it came; uploads to presigned URLs carry
/// their signatures there, so this one records the query with every value replaced (`URLRedaction`, the
/// client's rule too), and never a header.
struct RequestTracingMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var parent = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: HeaderFieldExtractor())
        let method = request.method.rawValue
        let span = startSpan(method, context: parent, ofKind: .server)
        defer { span.end() }
        span.updateAttributes { attributes in
            attributes["http.request.method"] = method
            attributes["url.path"] = request.uri.path
            if let query = request.uri.query, !query.isEmpty { attributes["url.query"] = URLRedaction.redacting(query: query) }
            attributes["http.request.body.size"] = request.headers[.contentLength].flatMap { Int($0) }
        }
        do {
            let response = try await ServiceContext.$current.withValue(span.context) { try await next(request, context) }
            finish(span, status: Int(response.status.code), route: context.endpointPath, method: method)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code
            finish(span, status: status.map { Int($0) }, route: context.endpointPath, method: method)
            // The error's type, not its text, which may name a file.
            if status == nil { span.attributes["error.type"] = String(describing: type(of: error)) }
            span.setStatus(SpanStatus(code: .error))
            throw error
        }
    }

    private func finish(_ span: any Span, status: Int?, route: String?, method: String) {
        if let route {
            span.operationName = "\(method) \(route)"
            span.attributes["http.route"] = route
        }
        guard let status else { return }
        span.attributes["http.response.status_code"] = status
        if status >= 500 {
            span.attributes["error.type"] = String(status)
            span.setStatus(SpanStatus(code: .error))
        }
    }
}

private struct HeaderFieldExtractor: Extractor {
    func extract(key name: String, from headers: HTTPFields) -> String? {
        HTTPField.Name(name).flatMap { headers[$0] }
    }
}
