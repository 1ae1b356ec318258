import Attache
import Hummingbird
import Logging

/// Logs each request's method and path at a level, with its query's names but no value.
///
/// Hummingbird's `LogRequestsMiddleware` logs the URI as it came, so a presigned URL's signature (or a
/// token in a query) would reach the server's log; this one logs the query with every value replaced
/// (`URLRedaction`, the client's rule too).
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let level: Logger.Level

    init(_ level: Logger.Level) {
        self.level = level
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var metadata: Logger.Metadata = [
            "hb.request.method": "\(request.method.rawValue)", "hb.request.path": "\(request.uri.path)",
        ]
        if let query = request.uri.query, !query.isEmpty {
            metadata["hb.request.query"] = "\(URLRedaction.redacting(query: query))"
        }
        context.logger.log(level: level, "Request", metadata: metadata)
        return try await next(request, context)
    }
}
