public import FoundationEssentials

extension ServerResponse {
    /// The body decoded as JSON into `type`.
    ///
    /// ```swift
    /// struct Profile: Decodable { var name: String }
    /// let profile = try await client.get("https://api.example/me").decode(Profile.self)
    /// ```
    /// - Throws: ``AttacheCore/AttacheError`` `.badResponse` (stage `request`) naming the status and the decoding
    ///   failure; `.limitExceeded` when the body was cut at the size cap.
    public func decode<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try checkComplete()
        do {
            return try decoder.decode(type, from: Data(body))
        } catch {
            throw AttacheError(
                .badResponse, stage: .request,
                "the HTTP \(status) answer is not a \(T.self) in JSON: \(Self.describe(error))")
        }
    }

    /// The body as a JSON value.
    /// - Throws: ``AttacheCore/AttacheError`` `.badResponse` when the body is not JSON; `.limitExceeded` when it
    ///   was cut at the size cap.
    public var json: JSONValue {
        get throws {
            try parsedJSON()
        }
    }

    private func parsedJSON() throws -> JSONValue {
        try checkComplete()
        do {
            return try JSONValue.parse(body)
        } catch {
            throw AttacheError(.badResponse, stage: .request, "the HTTP \(status) answer is not JSON (\(mediaType ?? "no content type"))")
        }
    }

    /// The body as text: decoded as UTF-8 (invalid sequences become U+FFFD), whatever the declared charset.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// Returns the response when its status and content type are acceptable, and throws otherwise.
    ///
    /// ```swift
    /// let response = try await client.get(url).validate(statusCodes: 200..<300, contentTypes: ["application/json"])
    /// ```
    /// - Parameters:
    ///   - statusCodes: the acceptable statuses.
    ///   - contentTypes: acceptable media types (`application/json`, `text/*`, `*/*`), compared without
    ///     parameters and case; nil accepts any. An empty body (204, HEAD) passes without a type.
    /// - Throws: ``AttacheCore/AttacheError`` (stage `request`): `.rejected` for an unacceptable 4xx status (not
    ///   retryable), `.retriesExhausted` for an unacceptable status that the receiving client's
    ///   ``RetryClassifier`` retries (retryable), `.badResponse` for any
    ///   other unacceptable status or content type; the message names the status and the type.
    @discardableResult
    public func validate(
        statusCodes: some RangeExpression<Int> & Sendable = 200..<300, contentTypes: [String]? = nil
    ) throws -> ServerResponse {
        guard statusCodes.contains(status) else {
            let detail = "HTTP \(status) is not an acceptable status"
            switch status {
            case _ where retryableByClient:
                throw AttacheError(.retriesExhausted, stage: .request, detail, isRetryable: true)
            case 400...499:
                throw AttacheError(.rejected, stage: .request, detail)
            default:
                throw AttacheError(.badResponse, stage: .request, detail)
            }
        }
        if let contentTypes, !(body.isEmpty && header("Content-Type") == nil) {
            let type = mediaType ?? ""
            let accepted = contentTypes.contains { pattern in
                let pattern = pattern.lowercased()
                if pattern == "*/*" || pattern == type { return true }
                if pattern.hasSuffix("/*") { return type.hasPrefix(pattern.dropLast()) }
                return false
            }
            guard accepted else {
                throw AttacheError(
                    .badResponse, stage: .request,
                    "the HTTP \(status) answer is \(type.isEmpty ? "of no content type" : type), not \(contentTypes.joined(separator: " or "))")
            }
        }
        return self
    }

    private func checkComplete() throws {
        if bodyExceededCap {
            throw AttacheError(
                .limitExceeded, stage: .request,
                "the HTTP \(status) answer is longer than the body size cap (\(body.count) bytes kept)")
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): return "no member \"\(key.stringValue)\""
        case DecodingError.typeMismatch(let type, let context):
            return "\(type) expected at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.valueNotFound(let type, let context):
            return "\(type) missing at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.dataCorrupted: return "not valid JSON"
        default: return "\(error)"
        }
    }
}
