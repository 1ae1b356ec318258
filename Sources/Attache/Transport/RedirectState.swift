internal import AttacheCore
import FoundationEssentials

/// The redirects of one exchange: how many were followed, and where the next one leads.
///
/// Redirects are followed by Attache, not by curl, so that the policy is Attache's (``RedirectPolicy``):
/// a body is sent again only on 307 and 308; a 303 after a body becomes a `GET`; 301 and 302 after a
/// body are answers, not hops; `https` never leads to `http`; and credentials (`Authorization`,
/// `Cookie`) go only to the host they were given for.
struct RedirectState {
    /// Answers that may lead elsewhere.
    static let followableStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// The host the request was first sent to.
    let originHost: String
    let maximumHops: Int
    private(set) var hops = 0

    init(origin: PreparedRequest) {
        self.originHost = origin.target.host
        self.maximumHops = origin.connection.redirects.maximumHops
    }

    /// Whether another redirect may still be followed.
    var mayFollow: Bool { hops < maximumHops }

    /// Whether `hop` may carry the origin's credentials: only to the host they were given for.
    func sendsCredentials(to hop: PreparedRequest) -> Bool {
        hops == 0 || hop.target.host == originHost
    }

    /// The next hop after `response` to `request`, counted; nil when `response` is the answer.
    ///
    /// - Throws: ``TransportError`` `.rejected` for a redirect from `https` to `http`.
    mutating func next(after response: ServerResponse, of request: PreparedRequest) throws -> PreparedRequest? {
        guard mayFollow, let next = try Self.target(after: response, of: request) else { return nil }
        hops += 1
        return next
    }

    /// The request a redirect answer leads to, or nil when it is the answer.
    ///
    /// - Throws: ``TransportError`` `.rejected` for a redirect from `https` to `http`.
    static func target(after response: ServerResponse, of request: PreparedRequest) throws -> PreparedRequest? {
        guard followableStatuses.contains(response.status), let location = response.header("Location"),
            let base = URL(string: request.url), let resolved = URL(string: location, relativeTo: base)?.absoluteURL,
            let target = HTTPURL(resolved.absoluteString)
        else { return nil }
        if request.target.isHTTPS, !target.isHTTPS {
            throw TransportError(
                .rejected,
                "the server redirected from https to http (\(URLRedaction.redacting(target.string))); not followed")
        }
        var next = request.request
        next.url = target.string
        if next.body != nil || !["GET", "HEAD"].contains(next.method) {
            switch response.status {
            case 307, 308:
                guard next.connection.redirects.followsBodyRedirects else { return nil }
            case 303:
                next.method = next.method == "HEAD" ? "HEAD" : "GET"
                next.body = nil
                next.headers.removeAll {
                    ["content-type", "content-length", "idempotency-key"].contains($0.name.lowercased())
                }
            default:
                return nil
            }
        }
        return PreparedRequest(checked: next, target: target)
    }
}
