import Testing
@testable import AttacheServer

/// The query as the server's request spans record it: every name kept, no value.
@Suite struct RequestTracingMiddlewareTests {
    @Test(arguments: [
        ("sig=abc123", "sig=REDACTED"),
        ("a=1&X-Amz-Signature=f00d&flag", "a=REDACTED&X-Amz-Signature=REDACTED&REDACTED"),
        ("token=a=b", "token=REDACTED"),
        ("a=&&b=2", "a=REDACTED&REDACTED&b=REDACTED"),
    ])
    func everyQueryValueIsRedacted(query: String, recorded: String) {
        #expect(RequestTracingMiddleware<ServerRequestContext>.redacted(query) == recorded)
    }
}
