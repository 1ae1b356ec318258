import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

/// The `matrix` answer profile, on answers as Synapse 1.163 writes them, and the endpoint's URI helpers.
@Suite("Matrix answers")
struct MatrixAnswerTests {
    let profile = ResponseInterpreter.Configuration(profile: .matrix)

    func response(_ status: Int, _ body: String, headers: [HeaderField] = []) -> ServerResponse {
        ServerResponse(status: status, headers: [HeaderField(name: "Content-Type", value: "application/json")] + headers, body: Array(body.utf8))
    }

    func interpret(_ response: ServerResponse) -> ResponseOutcome {
        ResponseInterpreter(configuration: profile).interpret(response)
    }

    @Test func contentURIIsTheFileIdAndTheURL() throws {
        guard case .success(let receipt) = interpret(response(200, #"{"content_uri":"mxc://localhost/gQSBRgSL"}"#)) else {
            Issue.record("not a success")
            return
        }
        #expect(receipt.fileId == "mxc://localhost/gQSBRgSL")
        #expect(receipt.url == "mxc://localhost/gQSBRgSL")
        // An upload to a reserved id answers {}.
        guard case .success(let empty) = interpret(response(200, "{}")) else {
            Issue.record("{} is not a success")
            return
        }
        #expect(empty.fileId == nil)
    }

    @Test func limitExceededWaitsRetryAfterMilliseconds() throws {
        let limited = interpret(response(429, #"{"errcode":"M_LIMIT_EXCEEDED","error":"Too Many Requests","retry_after_ms":722}"#))
        guard case .retry(let advice) = limited else {
            Issue.record("429 M_LIMIT_EXCEEDED is not retried: \(limited)")
            return
        }
        #expect(advice.retryAfter == .milliseconds(722))
        #expect(advice.reason.contains("M_LIMIT_EXCEEDED"))
        // The refusal travels with the advice: a give-up error's `rejection` names the code.
        #expect(advice.refusal?.businessCode == "M_LIMIT_EXCEEDED")
        #expect(advice.refusal?.status == 429)
        // Retry-After, when present, comes first.
        let both = interpret(response(
            429, #"{"errcode":"M_LIMIT_EXCEEDED","retry_after_ms":722}"#, headers: [HeaderField(name: "Retry-After", value: "1")]))
        guard case .retry(let header) = both else {
            Issue.record("not retried: \(both)")
            return
        }
        #expect(header.retryAfter == .seconds(1))
    }

    @Test(arguments: [
        (413, "M_TOO_LARGE", "Upload request body is too large"), (403, "M_FORBIDDEN", "Only the creator of the media ID can upload to it"),
        (409, "M_CANNOT_OVERWRITE_MEDIA", "Media ID already has content"), (401, "M_UNKNOWN_TOKEN", "Invalid access token passed."),
        (401, "M_MISSING_TOKEN", "Missing access token"),
    ])
    func errorsAreRefusalsWithTheirCode(status: Int, code: String, message: String) throws {
        let outcome = interpret(response(status, #"{"errcode":"\#(code)","error":"\#(message)"}"#))
        guard case .rejection(let rejection) = outcome else {
            Issue.record("\(code) is not a refusal: \(outcome)")
            return
        }
        #expect(rejection.businessCode == code)
        #expect(rejection.status == status)
        let error = AttacheError(refusal: rejection, "the homeserver refused the upload", file: "a.jpg")
        #expect(error.code == (status == 401 ? .unauthorized : .rejected))
    }

    @Test func mediaIDsAndDownloadURLs() {
        #expect(MatrixEndpoint.mediaID(of: "mxc://localhost/abc")! == ("localhost", "abc"))
        #expect(MatrixEndpoint.mediaID(of: "mxc://matrix.org:8448/x_Y-1")! == ("matrix.org:8448", "x_Y-1"))
        for bad in ["mxc://", "mxc://server", "mxc://server/", "mxc:///id", "mxc://s/a/b", "https://s/a"] {
            #expect(MatrixEndpoint.mediaID(of: bad) == nil, "\(bad)")
        }
        let endpoint = MatrixEndpoint(homeserver: "https://matrix.example.org/")
        #expect(endpoint.homeserver == "https://matrix.example.org")
        #expect(endpoint.downloadURL(of: "mxc://example.org:8448/abc") == "https://matrix.example.org/_matrix/client/v1/media/download/example.org%3A8448/abc")
    }

    @Test func specVersionsFromV1_7ReserveIDs() {
        for version in ["v1.7", "v1.11", "v2.0"] { #expect(MatrixMedia.isAtLeast1_7(version), "\(version)") }
        for version in ["r0.6.1", "v1.6", "v1.1", "", "v"] { #expect(!MatrixMedia.isAtLeast1_7(version), "\(version)") }
    }

    @Test func voiceWaveformsUnpackToTheirLevels() {
        let levels: [UInt8] = (0..<100).map { UInt8($0 * 7 % 32) }
        #expect(VoiceWaveform.unpack(VoiceWaveform.pack(levels)) == levels)
    }
}
