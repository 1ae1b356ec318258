internal import AttacheCore
internal import CCurl

extension CurlExchange {
    /// What one transfer has seen so far, as a value: the C callbacks feed it what curl hands over and
    /// perform the action it returns, so every decision about the answer's head, its body, the request
    /// body and the end of the transfer is made here, where a test can drive it without curl.
    ///
    /// Lives inline in its ``CurlExchange`` and is changed in place on the loop's thread: no event
    /// allocates or locks.
    struct StateMachine {
        /// The final answer's status so far (0 before the first status line).
        private(set) var status = 0
        /// The current answer's header fields; room for a usual head without regrowing.
        private(set) var headers: [HeaderField] = {
            var headers: [HeaderField] = []
            headers.reserveCapacity(12)
            return headers
        }()
        private var headComplete = false
        /// The sink has been told the final answer's head.
        private var begun = false
        /// The answer is a redirect the transport follows: its body goes nowhere.
        private var swallowing = false
        /// Why the request body could not be read, if it could not.
        private(set) var bodyFailure: AttacheError?
        /// Bytes of the request body handed to curl in this attempt.
        private(set) var bodySent: Int64 = 0
        private var lastSent: Int64 = -1
        private var lastReceived: Int64 = -1
        /// Whether a redirect answer's body is swallowed (the transport will follow it).
        let swallowsRedirects: Bool

        init(swallowsRedirects: Bool) {
            self.swallowsRedirects = swallowsRedirects
        }

        // MARK: The answer's head

        /// What to do after a line of the head.
        enum HeadAction: Equatable {
            case none
            /// A 1xx answer ended: hand it to the sink.
            case informational(status: Int, headers: [HeaderField])
        }

        mutating func headerLine(_ line: HeaderLine) -> HeadAction {
            switch line {
            case .status(let code):
                // A new answer (after a 1xx): forget the previous head.
                status = code
                headers.removeAll()
                headComplete = false
                return .none
            case .field(let name, let value):
                headers.append(HeaderField(name: name, value: value))
                return .none
            case .other:
                guard status > 0, !headComplete else { return .none }
                if (100..<200).contains(status) {
                    let interim = headers
                    headers.removeAll()
                    return .informational(status: status, headers: interim)
                }
                headComplete = true
                swallowing =
                    swallowsRedirects && RedirectState.followableStatuses.contains(status)
                    && headers.contains { $0.name.equalsIgnoringASCIICase("Location") }
                return .none
            }
        }

        // MARK: The answer's body

        /// What to do with a piece of the answer's body.
        enum BodyAction: Equatable {
            /// A redirect being followed: take the bytes and drop them.
            case discard
            /// The first piece: tell the sink the head, then hand it the bytes.
            case beginThenDeliver
            /// Hand the bytes to the sink.
            case deliver
        }

        mutating func bodyArrived() -> BodyAction {
            if swallowing { return .discard }
            if !begun {
                begun = true
                return .beginThenDeliver
            }
            return .deliver
        }

        // MARK: The request body

        /// What to tell curl after the body pump was asked for bytes.
        enum ReadAction: Equatable {
            case deliver(Int)
            case pause
            case end
            case abort
        }

        mutating func bodyRead(_ read: BodyPump.Read) -> ReadAction {
            switch read {
            case .bytes(let count):
                bodySent += Int64(count)
                return .deliver(count)
            case .pause: return .pause
            case .end: return .end
            case .failed(let error):
                bodyFailure = error
                return .abort
            }
        }

        /// curl rewound the body to send it again (on a new connection).
        mutating func bodyRewound() {
            bodySent = 0
        }

        // MARK: Progress

        /// Whether the counts are news for the sink.
        mutating func progressed(sent: Int64, received: Int64) -> Bool {
            guard sent != lastSent || received != lastReceived else { return false }
            lastSent = sent
            lastReceived = received
            return true
        }

        // MARK: The end

        /// Whether the sink must be told the final answer's head now, at the end of the transfer: an
        /// answer without body bytes (or one cut before them) has not begun yet.
        mutating func headDueAtEnd(code: CURLcode) -> Bool {
            guard Self.endsWithAnswer(code), !begun, headComplete, status > 0, !swallowing else { return false }
            begun = true
            return true
        }

        /// How the transfer ended, for the caller.
        enum Outcome: Equatable {
            /// The answer counts; `bodyIncomplete` when the connection broke during its body.
            case answer(bodyIncomplete: Bool)
            /// No usable answer: curl's code says what failed.
            case failure
        }

        /// What curl's result means, once ``bodyFailure`` and the sink's failure are ruled out.
        func outcome(code: CURLcode, bodyExceededCap: Bool, sendsBody: Bool) -> Outcome {
            let incomplete = code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR
            if code == CURLE_OK || (code == CURLE_WRITE_ERROR && bodyExceededCap) {
                return .answer(bodyIncomplete: incomplete)
            }
            let brokenTransport =
                code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR || code == CURLE_SEND_ERROR
                || code == CURLE_GOT_NOTHING
            if brokenTransport, status >= 400, headComplete {
                // The server answered an error before it had all of the body (an early 413, say) and
                // closed the connection: its answer counts, not the broken send.
                return .answer(bodyIncomplete: incomplete)
            }
            if code == CURLE_PARTIAL_FILE, status > 0, sendsBody {
                return .answer(bodyIncomplete: incomplete)
            }
            return .failure
        }

        /// Results after which what arrived of the answer is worth handing on.
        private static func endsWithAnswer(_ code: CURLcode) -> Bool {
            code == CURLE_OK || code == CURLE_WRITE_ERROR || code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR
                || code == CURLE_SEND_ERROR || code == CURLE_GOT_NOTHING
        }
    }
}
