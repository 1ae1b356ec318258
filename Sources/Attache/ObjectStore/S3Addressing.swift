import FoundationEssentials

/// How an object's URL is written: the bucket in the path (`http://host/bucket/key`, what MinIO, Ceph and
/// emulators on an IP address take) or in the host name (`https://bucket.s3.region.amazonaws.com/key`).
public enum S3Addressing: String, Sendable, Hashable, Codable, CaseIterable {
    /// Virtual-hosted style for AWS's own endpoints, path style for any other endpoint.
    case auto
    /// `ENDPOINT/BUCKET/KEY`.
    case path
    /// `SCHEME://BUCKET.HOST/KEY`.
    case virtual

    /// The characters S3 leaves unencoded in a key: RFC 3986's unreserved set.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
            || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
    }

    /// SigV4's URI encoding: every byte of the UTF-8 text but the unreserved ones as `%XX` (upper-case hex);
    /// `/` kept unless `encodeSlash`.
    package static func uriEncode(_ text: String, encodeSlash: Bool) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) || (byte == 0x2F && !encodeSlash) {
                out.append(byte)
            } else {
                out += [0x25, digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Where one object lives and the URL that reaches it.
package struct S3ObjectAddress: Sendable {
    /// The bucket.
    package let bucket: String
    /// The key (not encoded).
    package let key: String
    /// The URL: scheme, host, path and any query.
    package let url: String
    /// The URL's path, URI-encoded once: what SigV4 signs.
    package let path: String
    /// `host` or `host:port` as the transport sends it in `Host`.
    package let host: String
    /// The query's parameters, not encoded.
    package let query: [(String, String)]
    /// The URL without any query: the object's address for a receipt.
    package var objectURL: String { url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url }

    /// The address of `key` in `bucket` at `endpoint` (`https://s3.eu-west-1.amazonaws.com`,
    /// `http://127.0.0.1:9000`), with `query` parameters written as SigV4 signs them.
    ///
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `configuration`) when the endpoint is not an
    ///   `http(s)://host[:port]` URL, or virtual-hosted style is asked for a bucket that cannot be a host name.
    package init(
        endpoint: String, bucket: String, key: String, addressing: S3Addressing, query: [(String, String)] = []
    ) throws {
        guard let parsed = URLComponents(string: endpoint), let scheme = parsed.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let endpointHost = parsed.host, !endpointHost.isEmpty
        else {
            throw AttacheError(
                .invalidArgument, stage: .configuration, "the S3 endpoint must be http(s)://host[:port]: \(endpoint)")
        }
        let port = parsed.port.map { ":\($0)" } ?? ""
        let basePath = parsed.percentEncodedPath.hasSuffix("/")
            ? String(parsed.percentEncodedPath.dropLast()) : parsed.percentEncodedPath
        let virtual: Bool
        switch addressing {
        case .path: virtual = false
        case .virtual: virtual = true
        case .auto: virtual = endpointHost.hasSuffix(".amazonaws.com") && Self.isDNSCompatible(bucket)
        }
        let hostName: String
        let path: String
        let encodedKey = S3Addressing.uriEncode(key, encodeSlash: false)
        if virtual {
            guard Self.isDNSCompatible(bucket) else {
                throw AttacheError(
                    .invalidArgument, stage: .configuration,
                    "the bucket \(bucket) cannot be a host name: use path-style addressing")
            }
            hostName = bucket + "." + endpointHost
            path = basePath + "/" + encodedKey
        } else {
            hostName = endpointHost
            path = basePath + "/" + S3Addressing.uriEncode(bucket, encodeSlash: true) + (key.isEmpty ? "" : "/" + encodedKey)
        }
        let hostText = hostName.contains(":") && !hostName.hasPrefix("[") ? "[" + hostName + "]" : hostName
        self.bucket = bucket
        self.key = key
        self.path = path
        self.host = hostText + port
        self.query = query
        let queryText = SigV4Signer.canonicalQuery(query)
        self.url = scheme + "://" + self.host + path + (query.isEmpty ? "" : "?" + queryText)
    }

    /// Lower-case letters, digits, `-` and `.`, 3 to 63 characters, no `..`: a name that works as a host.
    static func isDNSCompatible(_ bucket: String) -> Bool {
        (3...63).contains(bucket.utf8.count) && !bucket.contains("..")
            && bucket.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x2E }
    }
}

/// `s3://BUCKET/PREFIX`: a bucket and the key prefix objects go under.
public struct S3Location: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The bucket.
    public var bucket: String
    /// The key prefix (`uploads/`); empty for the bucket's top.
    public var prefix: String

    /// Reads `s3://BUCKET/PREFIX`; nil for anything else.
    public init?(_ url: String) {
        guard url.lowercased().hasPrefix("s3://") else { return nil }
        let rest = url.dropFirst(5)
        let bucket = rest.prefix { $0 != "/" }
        guard !bucket.isEmpty else { return nil }
        self.bucket = String(bucket)
        self.prefix = String(rest.dropFirst(bucket.count).drop { $0 == "/" })
    }

    /// Creates a location.
    public init(bucket: String, prefix: String = "") {
        self.bucket = bucket
        self.prefix = prefix
    }

    /// `s3://BUCKET/PREFIX`.
    public var description: String { "s3://\(bucket)/\(prefix)" }
}
