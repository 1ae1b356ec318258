internal import CCurl
import Testing
@testable import Attache
@testable import AttacheCore

/// The decisions of one transfer, driven without curl: what the callbacks are told to do.
@Suite("Exchange state machine")
struct ExchangeStateMachineTests {
    func head(_ machine: inout CurlExchange.StateMachine, _ lines: [HeaderLine]) -> [CurlExchange.StateMachine.HeadAction] {
        lines.map { machine.headerLine($0) }
    }

    @Test("a 1xx answer goes to the sink as interim, and the final head starts afresh")
    func informational() {
        var machine = CurlExchange.StateMachine(swallowsRedirects: true)
        let actions = head(
            &machine,
            [.status(103), .field(name: "Link", value: "</a>"), .other, .status(200), .field(name: "A", value: "1"), .other])
        guard case .informational(let status, let headers) = actions[2] else {
            Issue.record("no interim answer: \(actions)")
            return
        }
        #expect(status == 103)
        #expect(headers == [HeaderField(name: "Link", value: "</a>")])
        #expect(machine.status == 200)
        #expect(machine.headers == [HeaderField(name: "A", value: "1")])
    }

    @Test("the body begins the sink once, then is delivered; a followed redirect's body is discarded")
    func body() {
        var machine = CurlExchange.StateMachine(swallowsRedirects: true)
        _ = head(&machine, [.status(200), .other])
        #expect(machine.bodyArrived() == .beginThenDeliver)
        #expect(machine.bodyArrived() == .deliver)

        var redirect = CurlExchange.StateMachine(swallowsRedirects: true)
        _ = head(&redirect, [.status(302), .field(name: "location", value: "/b"), .other])
        #expect(redirect.bodyArrived() == .discard)
        let redirectHeadDue = redirect.headDueAtEnd(code: CURLE_OK)
        #expect(!redirectHeadDue)

        var last = CurlExchange.StateMachine(swallowsRedirects: false)
        _ = head(&last, [.status(302), .field(name: "Location", value: "/b"), .other])
        #expect(last.bodyArrived() == .beginThenDeliver)
    }

    @Test("an answer without body bytes begins the sink at the end, once")
    func emptyAnswer() {
        var machine = CurlExchange.StateMachine(swallowsRedirects: true)
        _ = head(&machine, [.status(204), .other])
        let first = machine.headDueAtEnd(code: CURLE_OK)
        let second = machine.headDueAtEnd(code: CURLE_OK)
        #expect(first)
        #expect(!second)
        #expect(machine.outcome(code: CURLE_OK, bodyExceededCap: false, sendsBody: false) == .answer(bodyIncomplete: false))
    }

    @Test("request body reads are counted, a rewind starts over, a source failure aborts and is kept")
    func requestBody() {
        var machine = CurlExchange.StateMachine(swallowsRedirects: true)
        #expect(machine.bodyRead(.bytes(10)) == .deliver(10))
        #expect(machine.bodyRead(.bytes(5)) == .deliver(5))
        #expect(machine.bodySent == 15)
        machine.bodyRewound()
        #expect(machine.bodySent == 0)
        #expect(machine.bodyRead(.pause) == .pause)
        #expect(machine.bodyRead(.end) == .end)
        let failure = AttacheError(.fileChanged, stage: .seal, "the file changed")
        #expect(machine.bodyRead(.failed(failure)) == .abort)
        #expect(machine.bodyFailure?.code == .fileChanged)
    }

    @Test("progress is passed on only when a count moved")
    func progress() {
        var machine = CurlExchange.StateMachine(swallowsRedirects: true)
        let reports = [(0, 0), (0, 0), (1, 0), (1, 7)].map { machine.progressed(sent: $0.0, received: $0.1) }
        #expect(reports == [true, false, true, true])
    }

    @Test("an early error answer counts over the broken send; a cut without an answer is a failure")
    func outcomes() {
        var early = CurlExchange.StateMachine(swallowsRedirects: true)
        _ = head(&early, [.status(413), .other])
        #expect(early.outcome(code: CURLE_SEND_ERROR, bodyExceededCap: false, sendsBody: true) == .answer(bodyIncomplete: false))

        var cut = CurlExchange.StateMachine(swallowsRedirects: true)
        _ = head(&cut, [.status(200), .other])
        #expect(cut.outcome(code: CURLE_RECV_ERROR, bodyExceededCap: false, sendsBody: false) == .failure)
        #expect(cut.outcome(code: CURLE_PARTIAL_FILE, bodyExceededCap: false, sendsBody: true) == .answer(bodyIncomplete: true))
        #expect(cut.outcome(code: CURLE_WRITE_ERROR, bodyExceededCap: true, sendsBody: false) == .answer(bodyIncomplete: false))
        #expect(cut.outcome(code: CURLE_WRITE_ERROR, bodyExceededCap: false, sendsBody: false) == .failure)
        #expect(CurlExchange.StateMachine(swallowsRedirects: true).outcome(code: CURLE_COULDNT_CONNECT, bodyExceededCap: false, sendsBody: false) == .failure)
    }
}
