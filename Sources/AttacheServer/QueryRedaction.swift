/// The query as the server records it, in spans and in its request log: every name kept, no value.
/// A presigned URL carries its signature there, and other clients their tokens.
enum QueryRedaction {
    /// `a=1&sig=xyz&flag` → `a=REDACTED&sig=REDACTED&REDACTED`.
    static func redacted(_ query: String) -> String {
        query.split(separator: "&", omittingEmptySubsequences: false).map { item in
            guard let equals = item.firstIndex(of: "=") else { return "REDACTED" }
            return item[..<equals] + "=REDACTED"
        }.joined(separator: "&")
    }
}
