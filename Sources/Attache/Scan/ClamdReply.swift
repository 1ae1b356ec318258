/// One answer of clamd to a scan, without the request number.
enum ClamdReply: Sendable, Equatable {
    /// `stream: OK`
    case clean
    /// `stream: Eicar-Signature FOUND`
    case infected(signature: String)
    /// `INSTREAM size limit exceeded. ERROR`, `… ERROR`, or anything else.
    case error(String)

    /// Whether this is a verdict (clean or infected) rather than clamd's error.
    var isVerdict: Bool {
        if case .error = self { return false }
        return true
    }

    /// Reads clamd's text (`stream: OK`, `fd[12]: NAME FOUND`, `MESSAGE ERROR`).
    init(parsing text: String) {
        if text.hasSuffix(" FOUND") {
            let body = text.dropLast(" FOUND".count)
            // The signature follows the scanned name (`stream`, `fd[12]`, a path) and ": ".
            let signature = body.firstRange(of: ": ").map { String(body[$0.upperBound...]) } ?? String(body)
            self = .infected(signature: signature)
        } else if text.hasSuffix(": OK") {
            self = .clean
        } else if text.hasSuffix(" ERROR") {
            self = .error(String(text.dropLast(" ERROR".count)))
        } else {
            self = .error(text)
        }
    }
}
