import Hummingbird
import HummingbirdTesting
import AttacheTestSupport
import Testing
@testable import AttacheServer

/// The query as the server's request spans and request log record it: every name kept, no value
/// (the package's one URL rule, `URLRedaction`, whose table is in `URLRedactionTests`).
@Suite struct QueryRedactionTests {
    /// The request log names method, path and the query's names; a presigned URL's signature and
    /// credential never reach it.
    @Test func theRequestLogHasNoQueryValue() async throws {
        let log = CapturedLog()
        let router = Router()
        router.add(middleware: RequestLogMiddleware(.info))
        router.put("/media/{key}") { _, _ in "stored" }
        let app = Application(router: router, logger: log.logger(level: .info))
        try await app.test(.router) { client in
            try await client.execute(
                uri: "/media/a.bin?X-Amz-Credential=AKIDSECRETPART&X-Amz-Signature=5ec7e7f00d&x-id=PutObject",
                method: .put
            ) { response in
                #expect(response.status == .ok)
            }
        }
        let text = log.text
        #expect(text.contains("/media/a.bin"), "\(text)")
        #expect(text.contains("X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&x-id=REDACTED"), "\(text)")
        #expect(!text.contains("AKIDSECRETPART") && !text.contains("5ec7e7f00d") && !text.contains("PutObject"), "\(text)")
    }
}
