/// A server's refusal, carried as the `cause` of an ``AttacheCore/AttacheError``.
package struct RejectionError: Error, Sendable, CustomStringConvertible {
    /// The refusal.
    package let rejection: Rejection
    package var description: String { rejection.description }
}

extension AttacheError {
    /// The one mapping of a server's refusal to an error: `.badResponse` for an answer that could not be
    /// read, `.rejected` otherwise, both in stage `interpret`, with the refusal as the cause (read it back
    /// with ``rejection``). `message` says what was refused; the refusal's own description follows it.
    init(refusal rejection: Rejection, _ message: String, file: String?) {
        self.init(
            rejection.reason == .badResponse ? .badResponse : rejection.status == 401 ? .unauthorized : .rejected,
            stage: .interpret, "\(message): \(rejection)",
            file: file, cause: RejectionError(rejection: rejection))
    }

    /// The server's refusal (status, business code, server message) when this error, or one in its
    /// chain of causes, is a `rejected` answer; nil otherwise.
    ///
    /// ```swift
    /// catch let error as AttacheError {
    ///     if let rejection = error.rejection, rejection.status == 413 { … }
    /// }
    /// ```
    public var rejection: Rejection? {
        var current: AttacheError? = self
        while let error = current {
            if let refusal = error.cause as? RejectionError { return refusal.rejection }
            current = error.cause as? AttacheError
        }
        return nil
    }
}
