import FoundationEssentials

/// An HTTP request method: the usual ones as constants, any other token by its name.
public struct RequestMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The method token as sent, upper case for the standard ones (`GET`, `POST`).
    public let rawValue: String

    /// Creates a method from its token; the standard methods are upper-cased.
    public init(rawValue: String) {
        let upper = rawValue.uppercased()
        self.rawValue = Self.standard.contains(upper) ? upper : rawValue
    }

    /// Creates a method from a string literal (`"PROPFIND"`).
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    /// The method token, as ``rawValue``.
    public var description: String { rawValue }

    /// `GET`.
    public static let get = RequestMethod(rawValue: "GET")
    /// `HEAD`.
    public static let head = RequestMethod(rawValue: "HEAD")
    /// `POST`.
    public static let post = RequestMethod(rawValue: "POST")
    /// `PUT`.
    public static let put = RequestMethod(rawValue: "PUT")
    /// `PATCH`.
    public static let patch = RequestMethod(rawValue: "PATCH")
    /// `DELETE`.
    public static let delete = RequestMethod(rawValue: "DELETE")
    /// `OPTIONS`.
    public static let options = RequestMethod(rawValue: "OPTIONS")

    private static let standard: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]

    /// Whether sending the request twice has the effect of sending it once (RFC 9110, 9.2.2): `GET`,
    /// `HEAD`, `PUT`, `DELETE`, `OPTIONS`, `TRACE`. Only these are retried on their own; a `POST` or
    /// `PATCH` is retried when it carries an `Idempotency-Key` header.
    public var isIdempotent: Bool { ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"].contains(rawValue) }

    /// Whether parameters of a request with this method go into the query (`GET`, `HEAD`, `DELETE`)
    /// rather than into a body, as AFNetworking and Alamofire place them.
    public var encodesParametersInQuery: Bool { ["GET", "HEAD", "DELETE"].contains(rawValue) }
}
