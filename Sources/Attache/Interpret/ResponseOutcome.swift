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
