internal import AttacheCore
package import FoundationEssentials

/// AWS Signature Version 4 over OpenSSL's HMAC-SHA256 and SHA-256: the canonical request, the string to
/// sign, the signing key and the `Authorization` header, as AWS's "Signature Version 4 signing process"
/// describes them.
///
/// The signer signs exactly the headers it is given (names lower-cased, values trimmed, inner runs of
/// spaces collapsed, sorted by name), so the published test-suite requests sign as published. S3
/// requests go through ``signS3(method:path:query:host:headers:payloadHash:date:)``, which adds `host`,
/// `x-amz-date`, `x-amz-content-sha256` and, with temporary credentials, `x-amz-security-token`.
/// The path is signed as it is sent: S3 takes each key segment URI-encoded once and no normalisation.
package struct SigV4Signer: Sendable {
    /// Whose requests these are.
    package let credentials: AWSCredentials
    /// `us-east-1`, ...
    package let region: String
    /// `s3`, or `service` in the generic test suite.
    package let service: String

    /// The payload hash of a body that is streamed unread (S3 accepts it over TLS and plain HTTP).
    package static let unsignedPayload = "UNSIGNED-PAYLOAD"
    /// SHA-256 of nothing: the payload hash of a request without a body.
    package static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// The pieces of one signature; tests compare them line by line.
    package struct Signature: Sendable {
        /// The canonical request.
        package var canonicalRequest: String
        /// The string to sign.
        package var stringToSign: String
        /// The signature, lower-case hex.
        package var signature: String
        /// The `Authorization` header's value.
        package var authorization: String
        /// The headers to send: the ones given (the signed ones) plus `Authorization`; `host` is left to the
        /// transport, which sends the same value.
        package var headers: [HeaderField]
    }

    /// Creates a signer.
    package init(credentials: AWSCredentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// Signs a request to S3: adds `x-amz-date` (from `date`), `x-amz-content-sha256` (`payloadHash`) and
    /// `x-amz-security-token` to `headers`, and signs them with `host`.
    ///
    /// - Parameters:
    ///   - path: the URL's path as sent, URI-encoded once (``S3Addressing/encodePath(_:)``).
    ///   - query: the query's parameters, not encoded; the URL must carry them as ``canonicalQuery(_:)``
    ///     writes them.
    ///   - host: `host` or `host:port`, as the transport sends it.
    /// - Throws: ``AttacheCore/AttacheError`` from OpenSSL.
    package func signS3(
        method: String, path: String, query: [(String, String)], host: String, headers: [HeaderField],
        payloadHash: String, date: Date
    ) throws -> Signature {
        let amzDate = Self.amzDate(date)
        var all = headers
        all.append(HeaderField(name: "x-amz-date", value: amzDate))
        all.append(HeaderField(name: "x-amz-content-sha256", value: payloadHash))
        if let token = credentials.sessionToken { all.append(HeaderField(name: "x-amz-security-token", value: token)) }
        var signed = try sign(
            method: method, path: path, query: query, headers: [HeaderField(name: "host", value: host)] + all,
            payloadHash: payloadHash, amzDate: amzDate)
        signed.headers = all + [HeaderField(name: "Authorization", value: signed.authorization)]
        return signed
    }

    /// Signs a request to the object (or bucket) at `address` as ``signS3(method:path:query:host:headers:payloadHash:date:)``
    /// does; the headers to send, `Authorization` last. Uploads and downloads alike sign through here, each
    /// attempt anew (the date is part of the signature).
    ///
    /// - Throws: ``AttacheCore/AttacheError`` from OpenSSL.
    package func signS3(
        method: String, address: S3ObjectAddress, headers: [HeaderField], payloadHash: String, date: Date = Date()
    ) throws -> [HeaderField] {
        try signS3(
            method: method, path: address.path, query: address.query, host: address.host, headers: headers,
            payloadHash: payloadHash, date: date
        ).headers
    }

    /// Signs exactly `headers` (which must hold `host` and `x-amz-date` with `amzDate`).
    ///
    /// - Throws: ``AttacheCore/AttacheError`` from OpenSSL.
    package func sign(
        method: String, path: String, query: [(String, String)], headers: [HeaderField], payloadHash: String,
        amzDate: String
    ) throws -> Signature {
        let canonicalHeaders = Self.canonicalHeaders(headers)
        let signedHeaders = canonicalHeaders.map(\.name).joined(separator: ";")
        let canonicalRequest = [
            method, path.isEmpty ? "/" : path, Self.canonicalQuery(query),
            canonicalHeaders.map { $0.name + ":" + $0.value + "\n" }.joined(), signedHeaders, payloadHash,
        ].joined(separator: "\n")
        let day = String(amzDate.prefix(8))
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = [
            "AWS4-HMAC-SHA256", amzDate, scope, try hex(SHA256Digest.hash(Array(canonicalRequest.utf8))),
        ].joined(separator: "\n")
        let key = try signingKey(day: day)
        let signature = hex(try Self.hmac(key, Array(stringToSign.utf8)))
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyId)/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)"
        return Signature(
            canonicalRequest: canonicalRequest, stringToSign: stringToSign, signature: signature,
            authorization: authorization, headers: headers + [HeaderField(name: "Authorization", value: authorization)])
    }

    /// HMAC("AWS4" + secret, day) → region → service → "aws4_request".
    private func signingKey(day: String) throws -> [UInt8] {
        var key = try credentials.withSecret { secret in try Self.hmac(Array("AWS4".utf8) + secret, Array(day.utf8)) }
        for part in [region, service, "aws4_request"] { key = try Self.hmac(key, Array(part.utf8)) }
        return key
    }

    private static func hmac(_ key: [UInt8], _ message: [UInt8]) throws -> [UInt8] {
        let mac = try key.withUnsafeBytes { try HMACSHA256(key: $0) }
        try message.withUnsafeBytes { try mac.update($0) }
        return try mac.finish()
    }

    /// Header names lower-cased, values trimmed with inner runs of spaces collapsed, sorted by name;
    /// repeated names joined with commas in the order given.
    static func canonicalHeaders(_ headers: [HeaderField]) -> [(name: String, value: String)] {
        var merged: [String: String] = [:]
        for header in headers {
            let name = header.name.lowercased()
            let value = collapse(header.value)
            merged[name] = merged[name].map { $0 + "," + value } ?? value
        }
        return merged.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
            .map { (name: $0.key, value: $0.value) }
    }

    private static func collapse(_ value: String) -> String {
        var out = ""
        var pendingSpace = false
        for scalar in value.unicodeScalars {
            if scalar == " " || scalar == "\t" {
                pendingSpace = !out.isEmpty
            } else {
                if pendingSpace { out.unicodeScalars.append(" ") }
                pendingSpace = false
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// The canonical query string: each name and value URI-encoded (`/` too), sorted by name then value
    /// (byte order), joined with `&`. A URL's query written this way signs as it is sent.
    package static func canonicalQuery(_ query: [(String, String)]) -> String {
        query.map { (S3Addressing.uriEncode($0.0, encodeSlash: true), S3Addressing.uriEncode($0.1, encodeSlash: true)) }
            .sorted { a, b in
                a.0 != b.0 ? Array(a.0.utf8).lexicographicallyPrecedes(Array(b.0.utf8))
                    : Array(a.1.utf8).lexicographicallyPrecedes(Array(b.1.utf8))
            }
            .map { $0.0 + "=" + $0.1 }.joined(separator: "&")
    }

    /// `date` as `yyyyMMdd'T'HHmmss'Z'` in UTC.
    package static func amzDate(_ date: Date) -> String {
        String(UTCTimestamp.iso8601(date).filter { $0 != "-" && $0 != ":" })
    }
}
