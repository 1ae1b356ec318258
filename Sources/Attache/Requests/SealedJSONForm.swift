package import FoundationEssentials

/// The old client's encrypted JSON form POST: JSON → seal → base64 → an
/// `application/x-www-form-urlencoded; charset=utf-8` body, and the same way back for the answer.
///
/// The body is either **bare** (``field`` nil: the whole body is the base64 text, as the old client
/// sent it) or **one named field** (`data=<percent-encoded base64>`, which any form parser reads).
/// `docs/FORMAT.md` ("The encrypted JSON form POST") specifies every byte, with test vectors.
///
/// Schemes: ``AttacheCore/SealScheme/legacyCBC`` and ``AttacheCore/SealScheme/legacyECB`` with a
/// passphrase key, only for the old servers that know nothing else (they are unauthenticated: anyone on
/// the path can alter the JSON undetected); ``AttacheCore/SealScheme/streamGCM`` with a 32-byte key for new
/// ones.
///
/// ```swift
/// let form = SealedJSONForm(scheme: .legacyCBC, key: try AttachmentKey(passphraseFile: "server.pass"))
/// let body = try form.body(json: .object(["userId": .number(7), "text": .string("hi")]))
/// let response = try await transport.send(TransportRequest(method: "POST", url: url, body: body.source).prepared())
/// let answer = try form.openJSON(response.body)
/// ```
package struct SealedJSONForm: Sendable {
    /// The encryption scheme: `legacy-cbc`, `legacy-ecb` or `stream-gcm`.
    package var scheme: SealScheme
    /// The key: a passphrase for the legacy schemes, 32 bytes for `stream-gcm`.
    package var key: AttachmentKey
    /// The form field that carries the base64 text, or nil for a bare body.
    package var field: String?
    /// For `stream-gcm`: where the salt and nonce prefix come from. Nil draws fresh ones for every
    /// body (the normal case); set it to make one message's body reproducible (the same request sent
    /// again under an idempotency key, test vectors). **One material per message**: two different
    /// messages sealed with the same material and key reuse AES-GCM nonces, which gives away both
    /// plaintexts' XOR and lets anyone forge tags. The legacy schemes have no random values: the key
    /// alone fixes their bytes (which is one reason they are insecure).
    package var material: SealMaterial?

    /// The `Content-Type` the old client sent with the body.
    package static let contentType = RequestBody.formContentType

    /// Creates the form; nothing is checked until a body is made or opened.
    package init(scheme: SealScheme, key: AttachmentKey, field: String? = nil, material: SealMaterial? = nil) {
        self.scheme = scheme
        self.key = key
        self.field = field
        self.material = material
    }

    /// The body for a JSON value (written compact with sorted keys, `JSONValue.jsonBytes()`).
    /// - Throws: ``AttacheCore/AttacheError`` (stage `.seal`) `.invalidArgument` for a scheme this form does not
    ///   use, `.invalidKey` for a key that does not suit the scheme; `.invalidArgument` (stage
    ///   `.upload`) for a number JSON cannot express.
    package func body(json: JSONValue) throws -> RequestBody {
        try body(jsonBytes: try json.jsonBytes())
    }

    /// The body for an `Encodable`, written by `encoder` (by default with sorted keys).
    /// - Throws: as ``body(json:)``.
    package func body(encoding value: some Encodable, encoder: JSONEncoder? = nil) throws -> RequestBody {
        let encoded = try RequestBody.json(encoding: value, encoder: encoder)
        return try body(jsonBytes: encoded.inMemoryBytes ?? [])
    }

    /// The body for JSON text the caller already has (sealed as it is, not re-encoded).
    /// - Throws: as ``body(json:)``.
    package func body(jsonBytes: [UInt8]) throws -> RequestBody {
        let text = try sealedText(jsonBytes)
        var bytes: [UInt8]
        if let field {
            bytes = []
            bytes.reserveCapacity(field.utf8.count + 1 + text.count + text.count / 8)
            var name = field
            name.withUTF8 {
                PercentEncoding.append($0, mask: PercentEncoding.unreserved, spaceAsPlus: false, to: &bytes)
            }
            bytes.append(UInt8(ascii: "="))
            text.withUnsafeBufferPointer {
                PercentEncoding.append($0, mask: PercentEncoding.unreserved, spaceAsPlus: false, to: &bytes)
            }
        } else {
            bytes = text
        }
        return RequestBody(bytes: bytes, contentType: Self.contentType, isSensitive: true)
    }

    /// The base64 text (RFC 4648 §4, padded, no line breaks) of the sealed `plaintext`.
    /// - Throws: as ``body(json:)``.
    package func sealedText(_ plaintext: [UInt8]) throws -> [UInt8] {
        try checkScheme()
        let sealer = Sealer(scheme: scheme, key: key, transferEncoding: .base64)
        let payload: SealedPayload
        if let material, scheme == .streamGCM {
            payload = try sealer.seal(DataSource(plaintext), material: material, part: 0)
        } else {
            payload = try sealer.seal(DataSource(plaintext))
        }
        return try payload.makeReader().readToEnd()
    }

    /// Decrypts a body made this way: bare base64 text or a form with the base64 in a field.
    ///
    /// A body is read as a form when it contains `&`, or an `=` followed by something other than
    /// `=` (base64 has `=` only as padding at the end). The field named ``field`` is taken, or the
    /// only field when ``field`` is nil. The value is percent-decoded with `+` kept as `+` (a form
    /// encoder writes a real `+` as `%2B`, so a bare `+` is a base64 character an old sender did not
    /// escape). White space (line breaks of wrapped base64) is ignored.
    /// - Throws: ``AttacheCore/AttacheError`` (stage `.seal`): `.corruptInput` when the form has no such field,
    ///   `.base64Invalid`, then the unsealer's codes (`.sealedPaddingInvalid` for a wrong legacy key,
    ///   `.authenticationFailed`, `.sealedDataTruncated`, ...).
    package func open(_ body: some Collection<UInt8>) throws -> [UInt8] {
        try checkScheme()
        let text = try Self.base64Text(of: Array(body), field: field)
        let sealed: [UInt8]
        do {
            sealed = try Base64.decode(String(decoding: text, as: UTF8.self), alphabet: .standard)
        } catch let error as AttacheError {
            throw AttacheError(
                error.code, stage: .seal, "the sealed form's base64 text is invalid: \(error.message)", cause: error)
        }
        let unsealer = Unsealer(scheme: scheme, key: key, transferEncoding: .binary)
        return try unsealer.unseal(DataSource(sealed)).readToEnd()
    }

    /// Decrypts a body made this way and parses the JSON in it.
    /// - Throws: as ``open(_:)``, and `.badResponse` (stage `.interpret`) when the plaintext is not JSON.
    package func openJSON(_ body: some Collection<UInt8>) throws -> JSONValue {
        let plaintext = try open(body)
        do {
            return try JSONValue.parse(plaintext)
        } catch {
            throw AttacheError(
                .badResponse, stage: .interpret, "the decrypted form is not JSON (\(plaintext.count) bytes)")
        }
    }

    /// The name of the field ``open(_:)`` reads when ``field`` is nil: the first field's name when
    /// `body` is a form (see ``open(_:)`` for how that is told), nil for a bare body. A receiver uses it
    /// to answer in the layout it was sent.
    package static func formFieldName(in body: some Collection<UInt8>) -> String? {
        let bytes = Array(body)
        guard isForm(bytes),
            let pair = bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true).first
        else { return nil }
        let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
        return PercentDecoding.decoding(pair[..<equals], plusAsSpace: true).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether `body` looks like a form (`name=value` pairs) rather than bare base64 text.
    static func isForm(_ body: [UInt8]) -> Bool {
        var index = 0
        while index < body.count {
            let byte = body[index]
            if byte == UInt8(ascii: "&") { return true }
            if byte == UInt8(ascii: "=") {
                var next = index + 1
                while next < body.count, body[next] == UInt8(ascii: "=") { next += 1 }
                // Only padding and white space after the `=`: bare base64.
                if body[next...].contains(where: { !Self.isWhitespace($0) }) { return true }
                return false
            }
            index += 1
        }
        return false
    }

    /// The base64 characters of a bare or field body, white space removed.
    static func base64Text(of body: [UInt8], field: String?) throws -> [UInt8] {
        var value = body
        if isForm(body) {
            var found: [UInt8]? = nil
            var fieldCount = 0
            for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
                fieldCount += 1
                let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
                guard let name = PercentDecoding.decoding(pair[..<equals], plusAsSpace: true) else { continue }
                let raw = equals < pair.endIndex ? pair[pair.index(after: equals)...] : []
                if let field {
                    if name.elementsEqual(field.utf8) { found = PercentDecoding.decoding(raw) }
                } else {
                    found = PercentDecoding.decoding(raw)
                }
            }
            guard let found, field != nil || fieldCount == 1 else {
                let what = field.map { "no field named \"\($0)\"" } ?? "\(fieldCount) fields and no field name configured"
                throw AttacheError(.corruptInput, stage: .seal, "the sealed form has \(what)")
            }
            value = found
        }
        return value.filter { !isWhitespace($0) }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private func checkScheme() throws {
        switch scheme {
        case .legacyCBC, .legacyECB, .streamGCM: return
        case .signal, .matrix, .none:
            throw AttacheError(
                .invalidArgument, stage: .seal,
                "the sealed JSON form uses legacy-cbc, legacy-ecb or stream-gcm, not \(scheme)")
        }
    }
}
