internal import AttacheCore

/// Where an ``AttacheClient`` reports what its operations do: the hook point for metrics and traces.
///
/// Every operation of the client (multipart and resumable uploads, downloads, the download manager,
/// the request layer) reports through the same three calls, so one implementation sees all of them.
/// The calls come from the task running the operation; they must return quickly (count, record a
/// span event), and must not throw. Each has an empty default, so an implementation takes only what
/// it needs.
///
/// ```swift
/// struct CountingHooks: ClientInstrumentation {
///     let attempts: Counter
///     func attemptFinished(_ attempt: ClientAttempt) { attempts.increment() }
/// }
/// let client = AttacheClient(instrumentation: CountingHooks(attempts: counter))
/// ```
package protocol ClientInstrumentation: Sendable {
    /// An operation started (before its first attempt).
    func requestStarted(_ request: ClientRequestStart)
    /// One exchange of an operation ended, with an answer or a failure.
    func attemptFinished(_ attempt: ClientAttempt)
    /// An operation will try again after a wait.
    func retrying(_ retry: ClientRetry)
}

extension ClientInstrumentation {
    /// Does nothing.
    package func requestStarted(_ request: ClientRequestStart) {}
    /// Does nothing.
    package func attemptFinished(_ attempt: ClientAttempt) {}
    /// Does nothing.
    package func retrying(_ retry: ClientRetry) {}
}

/// The kinds of work a client does.
package enum ClientOperation: String, Sendable, Hashable, CustomStringConvertible {
    /// A multipart upload.
    case upload
    /// A tus or IETF resumable upload (each of its requests).
    case resumableUpload = "resumable-upload"
    /// A download (also of the download manager).
    case download
    /// A request of the request layer.
    case request
    /// A request to an object store: a presigned or signed `PUT`, a step of a multipart upload.
    case objectUpload = "object-upload"

    /// The stage an error of this operation is reported in.
    var stage: AttacheError.Stage {
        switch self {
        case .upload, .resumableUpload, .objectUpload: .upload
        case .download: .download
        case .request: .request
        }
    }

    /// The raw value.
    package var description: String { rawValue }
}

/// An operation that started.
package struct ClientRequestStart: Sendable {
    /// What kind of work it is.
    package var operation: ClientOperation
    /// The method of its (first) request.
    package var method: String
    /// Its URL without user info or query.
    package var url: String
}

/// One exchange that ended.
package struct ClientAttempt: Sendable {
    /// What kind of work it belongs to.
    package var operation: ClientOperation
    /// The method sent.
    package var method: String
    /// The URL without user info or query.
    package var url: String
    /// The attempt's number within its operation, from 1.
    package var attempt: Int
    /// The answer's status; nil when there was no answer.
    package var status: Int?
    /// Why there was no answer; nil when there was one.
    package var failure: AttacheError.Code?
    /// From handing the request to the transport to its end.
    package var duration: Duration
    /// curl's timings of the exchange, when the transport measured them.
    package var timings: TransferTimings?
}

/// A retry about to wait.
package struct ClientRetry: Sendable {
    /// What kind of work is retried.
    package var operation: ClientOperation
    /// The attempt that failed, from 1.
    package var attempt: Int
    /// Why it is retried.
    package var reason: String
    /// How long the operation waits before the next attempt.
    package var delay: Duration
}
