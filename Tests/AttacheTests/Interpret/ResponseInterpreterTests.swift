import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

@Suite("ResponseInterpreter")
struct ResponseInterpreterTests {
    let interpreter = ResponseInterpreter()

    func response(_ status: Int, _ body: String, type: String = "application/json", headers: [HeaderField] = []) -> ServerResponse {
        ServerResponse(status: status, headers: [HeaderField(name: "Content-Type", value: type)] + headers, body: Array(body.utf8))
    }

    @Test("errorCode 0 as number or string is success, every field kept", arguments: [
        #"{"errorCode":0,"data":{"fileId":"f1","url":"/files/f1","size":3,"extra":{"a":[1,2]}}}"#,
        #"{"errorCode":"0","data":{"fileId":"f1","url":"/files/f1","size":3,"extra":{"a":[1,2]}}}"#,
    ])
    func success(body: String) throws {
        guard case .success(let receipt) = interpreter.interpret(response(200, body)) else {
            Issue.record("expected success")
            return
        }
        #expect(receipt.fileId == "f1")
        #expect(receipt.url == "/files/f1")
        #expect(receipt.data["size"]?.intValue == 3)
        #expect(receipt.data["extra"]?["a"] == .array([.number(1), .number(2)]))
    }

    @Test func numericFileIdIsKeptAsText() throws {
        guard case .success(let receipt) = interpreter.interpret(response(200, #"{"errorCode":0,"data":{"id":12345}}"#)) else {
            Issue.record("expected success")
            return
        }
        #expect(receipt.fileId == "12345")
    }

    @Test("business errors are rejections with code and message", arguments: [
        (#"{"errorCode":1001,"message":"quota exceeded"}"#, "1001", "quota exceeded"),
        (#"{"errorCode":"E42","msg":"bad chat"}"#, "E42", "bad chat"),
        (#"{"errorCode":-1}"#, "-1", "no message"),
    ])
    func businessError(body: String, code: String, message: String) {
        guard case .rejection(let rejection) = interpreter.interpret(response(200, body)) else {
            Issue.record("expected rejection")
            return
        }
        #expect(rejection.reason == .business)
        #expect(rejection.businessCode == code)
        #expect(rejection.message == message)
    }

    @Test func configuredBusinessCodeIsRetried() {
        var configuration = ResponseInterpreter.Configuration()
        configuration.retryableBusinessCodes = ["1503"]
        let outcome = ResponseInterpreter(configuration: configuration)
            .interpret(response(200, #"{"errorCode":1503,"message":"busy"}"#))
        guard case .retry(let advice) = outcome else {
            Issue.record("expected retry")
            return
        }
        #expect(advice.reason.contains("busy"))
    }

    @Test("retryable statuses", arguments: [408, 425, 429, 500, 502, 503, 504])
    func retryableStatus(status: Int) {
        guard case .retry(let advice) = interpreter.interpret(response(status, "{}")) else {
            Issue.record("expected retry")
            return
        }
        #expect(advice.status == status)
    }

    @Test("Retry-After as seconds and as an HTTP date")
    func retryAfter() throws {
        guard case .retry(let advice) = interpreter.interpret(response(429, "", headers: [HeaderField(name: "Retry-After", value: "7")])) else {
            Issue.record("expected retry")
            return
        }
        #expect(advice.retryAfter == .seconds(7))

        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let issued = Date()
        let date = formatter.string(from: issued.addingTimeInterval(120))
        guard case .retry(let dated) = interpreter.interpret(response(503, "", headers: [HeaderField(name: "Retry-After", value: date)])),
            let delay = dated.retryAfter
        else {
            Issue.record("expected retry with a delay")
            return
        }
        // 120 s less the time taken since the date was made (measured: a loaded machine can take
        // seconds) and the date's one-second resolution.
        let lowest = max(0, 119 - Date().timeIntervalSince(issued))
        #expect(delay >= .milliseconds(Int64(lowest * 1000)) && delay <= .seconds(121))

        guard case .retry(let capped) = interpreter.interpret(response(503, "", headers: [HeaderField(name: "Retry-After", value: "99999")])) else {
            Issue.record("expected retry")
            return
        }
        #expect(capped.retryAfter == .seconds(300))
    }

    @Test("4xx and 3xx are rejections, 413 says too large", arguments: [301, 400, 401, 403, 404, 409, 413, 415, 422])
    func rejectedStatus(status: Int) {
        guard case .rejection(let rejection) = interpreter.interpret(response(status, "")) else {
            Issue.record("expected rejection")
            return
        }
        #expect(rejection.reason == .status)
        #expect(rejection.status == status)
        if status == 413 { #expect(rejection.message.contains("too large")) }
    }

    @Test func conflictWithRetryAfterIsRetried() {
        guard case .retry = interpreter.interpret(response(409, "{}", headers: [HeaderField(name: "Retry-After", value: "1")])) else {
            Issue.record("expected retry")
            return
        }
    }

    @Test func htmlErrorPageNamesItsTitle() {
        let html = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
        guard case .rejection(let rejection) = interpreter.interpret(response(200, html, type: "text/html")) else {
            Issue.record("expected rejection")
            return
        }
        #expect(rejection.reason == .badResponse)
        #expect(rejection.message.contains("HTML"))
        #expect(rejection.message.contains("502 Bad Gateway"))

        guard case .rejection(let status) = interpreter.interpret(response(404, html, type: "text/html")) else {
            Issue.record("expected rejection")
            return
        }
        #expect(status.message == "502 Bad Gateway")
    }

    @Test("unusable 2xx answers are clear rejections", arguments: [
        ("", "empty"), ("  \n", "empty"), ("not json", "JSON"), ("[1,2]", "JSON object"),
        (#"{"data":{"fileId":"x"}}"#, "errorCode"), ("{\"errorCode\":0,", "JSON"),
    ])
    func unusable(body: String, mentions: String) {
        guard case .rejection(let rejection) = interpreter.interpret(response(200, body)) else {
            Issue.record("expected rejection for \(body)")
            return
        }
        #expect(rejection.reason == .badResponse)
        #expect(rejection.message.contains(mentions))
    }

    @Test func truncatedBodyIsRetried() {
        var cut = response(200, "{\"errorCode\":0,\"da")
        cut.bodyIncomplete = true
        guard case .retry = interpreter.interpret(cut) else {
            Issue.record("expected retry")
            return
        }
    }

    @Test func oversizedBodyIsABadResponse() {
        var big = response(200, "{}")
        big.bodyExceededCap = true
        guard case .rejection(let rejection) = interpreter.interpret(big) else {
            Issue.record("expected rejection")
            return
        }
        #expect(rejection.message.contains("larger than"))
    }

    @Test func replayedHeaderIsReported() {
        let replayed = response(200, #"{"errorCode":0,"data":{"fileId":"a"}}"#, headers: [HeaderField(name: "Idempotent-Replayed", value: "true")])
        guard case .success(let receipt) = interpreter.interpret(replayed) else {
            Issue.record("expected success")
            return
        }
        #expect(receipt.replayed)
    }
}

@Suite("RetryPolicy")
struct RetryPolicyTests {
    @Test func delaysGrowWithJitterAndStayBelowTheCap() {
        let policy = RetryPolicy(initialDelay: .milliseconds(100), multiplier: 2, maximumDelay: .seconds(1), jitter: 0.5)
        var seen: Set<Duration> = []
        for attempt in 1...8 {
            let ceiling = min(0.1 * Double(1 << (attempt - 1)), 1.0)
            for _ in 0..<50 {
                let delay = policy.delay(afterAttempt: attempt, retryAfter: nil)
                #expect(delay <= .milliseconds(Int64(ceiling * 1000)))
                #expect(delay >= .milliseconds(Int64(ceiling * 500) - 1))
                seen.insert(delay)
            }
        }
        #expect(seen.count > 20, "jitter makes delays differ")
    }

    @Test func retryAfterReplacesTheComputedDelay() {
        let policy = RetryPolicy(initialDelay: .milliseconds(10))
        for _ in 0..<20 {
            let delay = policy.delay(afterAttempt: 1, retryAfter: .seconds(2))
            #expect(delay >= .seconds(2) && delay <= .milliseconds(2200))
        }
    }
}
