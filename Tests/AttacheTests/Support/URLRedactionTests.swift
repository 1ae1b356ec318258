import Testing
@testable import Attache
@testable import AttacheCore

/// The one rule for a URL shown outside its request (log lines, error messages, spans, the reference
/// server's log): user info removed, every query value replaced, fragment dropped.
@Suite("URLRedaction")
struct URLRedactionTests {
    @Test("a URL keeps its scheme, host, port, path and query names, and nothing else", arguments: [
        ("http://h/p", "http://h/p"),
        ("https://h.example:8443/a/b.jpg", "https://h.example:8443/a/b.jpg"),
        // User info goes whole, the password and the user name alike.
        ("https://user:pa55@h.example/p", "https://h.example/p"),
        ("https://token@h.example/p", "https://h.example/p"),
        // An `@` in the path is not user info.
        ("https://h.example/users/@ann", "https://h.example/users/@ann"),
        // A presigned URL's credential and signature, and every other value.
        (
            "https://b.s3.example/k.jpg?X-Amz-Credential=AKID%2F1&X-Amz-Signature=f00d&x-id=PutObject",
            "https://b.s3.example/k.jpg?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&x-id=REDACTED"
        ),
        // A value holding `=` is replaced whole; an item without `=` may be a bare token, so it goes too;
        // an empty one hides nothing and stays.
        ("http://h/p?token=a=b", "http://h/p?token=REDACTED"),
        ("http://h/p?a=1&s3cr3t&b=", "http://h/p?a=REDACTED&REDACTED&b=REDACTED"),
        ("http://h/p?a=&&b=2", "http://h/p?a=REDACTED&&b=REDACTED"),
        ("http://h/p?", "http://h/p?"),
        // The fragment goes, and a `?` inside it is no query.
        ("https://h/p#section", "https://h/p"),
        ("https://h/p#x?token=t", "https://h/p"),
        ("https://a:b@h.example:8443/p?token=t&sig=s#frag", "https://h.example:8443/p?token=REDACTED&sig=REDACTED"),
        ("http://[::1]:80/p?flag", "http://[::1]:80/p?REDACTED"),
        // Text that is no URL keeps what the rule does not touch.
        ("not a url?secret=1", "not a url?secret=REDACTED"),
        ("héllo://ü:p@hôst/päth?ä=ö", "héllo://hôst/päth?ä=REDACTED"),
    ])
    func url(url: String, shown: String) {
        #expect(URLRedaction.redacting(url) == shown)
    }

    @Test("a query alone, as the reference server records it", arguments: [
        ("sig=abc123", "sig=REDACTED"),
        ("a=1&X-Amz-Signature=f00d&flag", "a=REDACTED&X-Amz-Signature=REDACTED&REDACTED"),
        ("token=a=b", "token=REDACTED"),
        ("a=&&b=2", "a=REDACTED&&b=REDACTED"),
    ])
    func query(query: String, recorded: String) {
        #expect(URLRedaction.redacting(query: query) == recorded)
    }

    @Test("every way a URL leaves the client shows it the same")
    func everyCallerUsesTheRule() throws {
        let url = "https://u:p@h.example/p?sig=s&page=2#frag"
        let shown = "https://h.example/p?sig=REDACTED&page=REDACTED"
        // The request log (with no literal secret to mask, the rule alone).
        #expect(LogRedaction().url(url) == shown)
        // An error about the URL.
        let error = #expect(throws: TransportError.self) {
            try TransportRequest(method: "GET", url: "ftp://u:p@h.example/p?sig=s").prepared()
        }
        #expect(error?.message.hasSuffix("ftp://h.example/p?sig=REDACTED") == true)
        #expect(error?.message.contains("u:p") == false)
    }
}
