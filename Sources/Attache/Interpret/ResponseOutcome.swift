import FoundationEssentials

/// What an answer from the server means for the upload.
package enum ResponseOutcome: Sendable {
    /// The server stored the attachment.
    case success(ServerReceipt)
    /// The server refused it; sending it again will not help.
    case rejection(Rejection)
    /// A temporary failure; the same upload may succeed later.
    case retry(RetryAdvice)
}

extension ResponseOutcome {
    /// The outcome of `response` for an operation that does not send it again: stored or rejected. An
    /// answer the profile would retry ends as the refusal it carries (the server's code and message), or
    /// as its status.
    package func final(for response: ServerResponse) -> UploadResult.Outcome {
        switch self {
        case .success(let receipt): .stored(receipt)
        case .rejection(let rejection): .rejected(rejection)
        case .retry(let advice):
            .rejected(advice.refusal ?? Rejection(reason: .status, status: response.status, message: advice.reason))
        }
    }

    /// How the client's attempt loop acts on it for `answer`: done when stored or rejected, tried again
    /// with the advice otherwise, unless a retrier ruled another attempt out (then ``final(for:)``).
    package func settlement(of answer: AttemptAnswer) -> Settlement<UploadResult.Outcome> {
        guard case .retry(let advice) = self, !answer.isFinal else { return .done(final(for: answer.response)) }
        return .retry(advice, failure: nil)
    }
}
