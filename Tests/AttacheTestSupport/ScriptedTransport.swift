import Foundation
import Logging
import Testing
import Attache
import AttacheCore

/// A transport that answers from a script, in memory: what the retry, interpretation and download
/// logic does with each kind of answer, without a socket or real waiting.
package final class ScriptedTransport: HTTPTransport {
    /// One scripted step: an answer (its body fed through the sink), or a thrown error after `body`
    /// bytes of the answer went through the sink.
    package enum Step: Sendable {
        case answer(status: Int, headers: [HeaderField] = [], body: [UInt8] = [])
        case fail(AttacheError, afterStatus: Int? = nil, headers: [HeaderField] = [], body: [UInt8] = [])
    }

    private let steps: LockedValue<[Step]>
    /// Every request sent, in order.
    package let requests = LockedValue<[TransportRequest]>([])

    package init(_ steps: [Step]) { self.steps = LockedValue(steps) }

    package var sent: [TransportRequest] { requests.withLock { $0 } }

    package func send(_ request: PreparedRequest, sink: (any ResponseSink)?) async throws -> ServerResponse {
        requests.withLock { $0.append(request.request) }
        let step = steps.withLock { steps -> Step? in steps.isEmpty ? nil : steps.removeFirst() }
        let sink = sink ?? CollectingSink(limit: request.maximumResponseBodySize)
        switch step {
        case nil:
            Issue.record("the script ran out after \(sent.count - 1) requests")
            throw AttacheError(.internalError, stage: .upload, "script exhausted")
        case .answer(let status, let headers, let body)?:
            let fields = headers
            if sink.begin(status: status, headers: fields) {
                _ = body.withUnsafeBytes { sink.receive($0) }
            }
            if let failure = sink.failure { throw failure }
            return ServerResponse(
                status: status, headers: fields, body: sink.collectedBody, bodyExceededCap: sink.bodyExceededCap)
        case .fail(let error, let status, let headers, let body)?:
            if let status, sink.begin(status: status, headers: headers) {
                _ = body.withUnsafeBytes { sink.receive($0) }
            }
            // As the real transport: a failure of the exchange carries no stage.
            throw TransportError(error.code, error.message, isRetryable: error.isRetryable)
        }
    }
}

/// Records the waits instead of waiting.
package final class RecordedSleeps: Sendable {
    private let waits = LockedValue<[Duration]>([])

    package init() {}

    package var all: [Duration] { waits.withLock { $0 } }
    package var sleep: @Sendable (Duration) async throws -> Void {
        { [self] delay in
            try Task.checkCancellation()
            waits.withLock { $0.append(delay) }
        }
    }
}
