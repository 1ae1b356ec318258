import FoundationEssentials
import Glibc

/// How Attache talks to a server: timeouts, retries, TLS trust and pinning, proxy, headers and
/// credentials. Uploads, downloads and plain requests all take one.
///
/// ```swift
/// var connection = ConnectionConfiguration()
/// connection.authorization = .bearer(ProcessInfo.processInfo.environment["FILES_TOKEN"] ?? "")
/// connection.headers = [HeaderField(name: "X-Tenant", value: "acme")]
/// let pipeline = try AttachmentPipeline(configuration: {
///     var configuration = PipelineConfiguration(url: "https://files.example/upload")
///     configuration.connection = connection
///     return configuration
/// }())
/// ```
public struct ConnectionConfiguration: Sendable {
    /// The longest wait for a TCP (and TLS) connection.
    public var connectTimeout: Duration = .seconds(10)
    /// An attempt fails when no byte moves in either direction for this long.
    public var stallTimeout: Duration = .seconds(30)
    /// When and how often to retry.
    public var retry: RetryPolicy = .standard
    /// A PEM file of CA certificates to trust instead of the system's (a private CA). TLS verification
    /// is always on.
    public var caFile: String?
    /// A public key to pin (`sha256//BASE64`, or a PEM/DER file path), as curl's `PINNEDPUBLICKEY`.
    public var pinnedPublicKey: String?
    /// A client certificate (PEM file) for a server that asks for one (mutual TLS); its key is ``clientKey``.
    /// The OTLP span export's `OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE`.
    package var clientCertificate: String?
    /// The private key (PEM file) of ``clientCertificate``.
    package var clientKey: String?
    /// Ask for HTTP/2 over TLS (ALPN), falling back to HTTP/1.1.
    public var preferHTTP2 = true
    /// Headers sent with every request (after Attache's own, before a request's own).
    public var headers: [HeaderField] = []
    /// Credentials sent as `Authorization` with every request to the request's own host (never to a
    /// host a redirect leads to).
    public var authorization: HTTPAuthorization?
    /// The `User-Agent` header.
    public var userAgent = "attache/\(AttacheLibrary.version)"
    /// A proxy URL (`http://host:port`, `socks5h://host`); nil uses the usual environment variables
    /// (`https_proxy`, `HTTPS_PROXY`, `http_proxy`, `no_proxy`), as curl reads them.
    public var proxy: String?
    /// Connections kept open to one host at once; `nil` leaves it to the transport (HTTP/2 transfers to
    /// one host share a single connection either way).
    public var maximumConnectionsPerHost: Int?
    /// Which redirects are followed.
    package var redirects: RedirectPolicy = .safe
    /// The size of curl's upload buffer, which is the size of the chunks a body is read in.
    package var uploadBufferSize = 512 * 1024

    /// The defaults: 10 s connect, 30 s stall, standard retries, system CAs, proxy from the environment.
    public init() {}
}

/// Credentials for the `Authorization` header. Their description never shows the secret.
public enum HTTPAuthorization: Sendable, Hashable, CustomStringConvertible {
    /// `Authorization: Bearer TOKEN`.
    case bearer(String)
    /// `Authorization: Basic base64(user:password)` (RFC 7617).
    case basic(user: String, password: String)

    /// Reads `user:password` (Basic) as curl's `--user` takes it; the password may contain colons.
    package init?(userColonPassword text: String) {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        self = .basic(user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
    }

    /// The header value.
    package var headerValue: String {
        switch self {
        case .bearer(let token): return "Bearer \(token)"
        case .basic(let user, let password): return "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        }
    }

    /// The scheme, never the credential: `Bearer <redacted>`, safe to log.
    public var description: String {
        switch self {
        case .bearer: return "Bearer <redacted>"
        case .basic(let user, _): return "Basic \(user):<redacted>"
        }
    }
}

/// Which redirects the transport follows.
package struct RedirectPolicy: Sendable, Hashable {
    /// Hops followed at most; 0 follows none.
    package var maximumHops: Int
    /// Follow redirects of requests that carry a body only where the status keeps the method and body
    /// (307, 308); 301/302/303 after a POST are not followed (the answer is returned as it is).
    package var followsBodyRedirects: Bool

    /// Creates a policy.
    package init(maximumHops: Int, followsBodyRedirects: Bool) {
        self.maximumHops = max(0, maximumHops)
        self.followsBodyRedirects = followsBodyRedirects
    }

    /// Up to 5 hops; a body only on 307/308; never from `https` to `http`; credentials and cookies
    /// never sent to another host.
    package static let safe = RedirectPolicy(maximumHops: 5, followsBodyRedirects: true)
    /// No redirect followed: a 3xx is the answer.
    package static let none = RedirectPolicy(maximumHops: 0, followsBodyRedirects: false)
}
