import FoundationEssentials

/// One request for ``RequestClient``: method, URL, query parameters, headers and body.
///
/// Query parameters are encoded with the client's form encoder (``RequestClient/Configuration``) and
/// appended to the URL's own query (which is kept as it is). ``parameters`` are where the old clients put
/// them: into the query for `GET`, `HEAD` and `DELETE`, into a body otherwise (form by default, or JSON with
/// ``bodyParameterEncoding``), with the client's system parameters merged in; an explicit ``body``
/// replaces that body.
///
/// ```swift
/// var request = ClientRequest(method: .post, url: "https://api.example/v1/messages")
/// request.parameters = ["text": "hi", "to": ["ann", "bob"]]
/// request.headers = [HeaderField(name: "X-Request-Id", value: "42")]
/// let response = try await client.send(request)
/// ```
public struct ClientRequest: Sendable {
    /// How ``parameters`` become a body when the method puts them in one.
    public enum BodyParameterEncoding: Sendable, Hashable {
        /// `application/x-www-form-urlencoded` with the client's encoder (nested names `a[b]=`, `a[]=`).
        case form
        /// A JSON object.
        case json
    }

    /// The method.
    public var method: RequestMethod
    /// The `http://` or `https://` URL, possibly with a query of its own.
    public var url: String
    /// Parameters always sent in the query, whatever the method.
    public var query: Parameters
    /// Parameters placed by method: query for `GET`/`HEAD`/`DELETE`, a body otherwise (unless ``body``
    /// is set, in which case they go into the query too).
    public var parameters: Parameters
    /// The body encoding of ``parameters`` for methods that send a body.
    public var bodyParameterEncoding: BodyParameterEncoding
    /// Headers after the client's defaults; a header named here replaces a default of the same name.
    public var headers: [HeaderField]
    /// An explicit body (JSON, plist, bytes, a file, multipart, a sealed form); nil sends ``parameters``
    /// as the body, or none.
    public var body: RequestBody?
    /// Never show the body in logs, not even at trace (sealed bodies, credentials in a body).
    public var bodyIsSecret: Bool
    /// A deadline for each attempt, if any (the client's default otherwise).
    public var timeout: Duration?
    /// The longest answer body kept in memory; nil uses the client's
    /// ``RequestClient/Configuration/maximumResponseBodySize``.
    public var maximumResponseBodySize: Int?

    /// Creates a request.
    public init(
        method: RequestMethod = .get, url: String, query: Parameters = [:], parameters: Parameters = [:],
        bodyParameterEncoding: BodyParameterEncoding = .form, headers: [HeaderField] = [],
        body: RequestBody? = nil, bodyIsSecret: Bool = false
    ) {
        self.method = method
        self.url = url
        self.query = query
        self.parameters = parameters
        self.bodyParameterEncoding = bodyParameterEncoding
        self.headers = headers
        self.body = body
        self.bodyIsSecret = bodyIsSecret
    }

    /// The value of the header `name` (last one wins), compared without regard to case.
    public func header(_ name: String) -> String? {
        headers.last { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// Sets the header `name` to `value`, replacing every header of that name.
    public mutating func setHeader(_ name: String, _ value: String) {
        headers.removeAll { $0.name.equalsIgnoringASCIICase(name) }
        headers.append(HeaderField(name: name, value: value))
    }
}
