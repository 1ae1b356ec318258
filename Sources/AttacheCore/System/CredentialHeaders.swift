/// The header names whose values are credentials: the one list the package keeps.
///
/// It is the union of what the request log used to hide, what a redirect to another host used to drop
/// and what the command line used to refuse, so that the three can no longer disagree:
/// - the request log and error messages show `***` instead of these values (`LogRedaction`'s default);
/// - a redirect to another host sends none of them (as curl drops `Authorization` and `Cookie`; an
///   API key or token header is a credential just the same);
/// - `--header` on the command line refuses them, since argv shows in process lists and shell
///   history (`--header @FILE`, `--bearer-env`, `--user-env` or a config file's `header-env` carry them).
package enum CredentialHeaders {
    /// The names, in lower case.
    package static let names: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "x-auth-token",
        // An S3 session token is the third part of temporary AWS credentials.
        "x-amz-security-token",
    ]

    /// Whether the header called `name` (in any case) carries a credential.
    package static func contains(_ name: some StringProtocol) -> Bool {
        names.contains(name.lowercased())
    }
}
