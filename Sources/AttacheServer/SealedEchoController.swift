import Attache
import HTTPTypes
import Hummingbird
internal import NIOCore

/// `POST /echo-sealed`: the receiving side of the encrypted JSON form POST (docs/FORMAT.md), for
/// tests and for server teams to compare against.
///
/// Query parameters: `scheme` (`legacy-cbc`, the default, `legacy-ecb` or `stream-gcm`), `field` (the
/// form field holding the base64 text; without it a form's only field, or a bare body), `answer=plain`
/// (answer the decrypted JSON as `application/json` instead of sealing it again).
///
/// The key is the server's `--key-file`: read as a passphrase for the legacy schemes and as a 32-byte
/// key for `stream-gcm`. The body is opened, checked to be JSON, and that JSON is answered sealed the
/// same way, in the same layout (bare, or the same field name), with the old client's form content
/// type. Bad input gets a 400 with `{"errorCode":400,"message":…}` naming what failed; the key and the
/// plaintext are never logged.
struct SealedEchoController: Sendable {
    let verifier: SealVerifier?
    /// Encrypted JSON forms are small messages; anything larger is refused unread.
    static let maximumBodySize = 1 << 20

    func echo(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let verifier else {
            return errorResponse(.notImplemented, "the server has no key: start it with --key-file")
        }
        let query = request.uri.queryParameters
        let schemeName = query.get("scheme") ?? SealScheme.legacyCBC.rawValue
        guard let scheme = SealScheme(rawValue: schemeName), [.legacyCBC, .legacyECB, .streamGCM].contains(scheme)
        else {
            return errorResponse(.badRequest, "scheme must be legacy-cbc, legacy-ecb or stream-gcm, not '\(schemeName)'")
        }
        guard let key = scheme.usesPassphrase ? verifier.passphrase : verifier.key else {
            return errorResponse(.badRequest, "the server's key file holds no key for \(scheme)")
        }
        let plainAnswer = query.get("answer") == "plain"
        let body: [UInt8]
        do {
            var buffer = try await request.body.collect(upTo: Self.maximumBodySize)
            body = buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch {
            return errorResponse(.contentTooLarge, "an encrypted JSON form is at most \(Self.maximumBodySize) bytes")
        }
        guard !body.isEmpty else { return errorResponse(.badRequest, "the body is empty") }

        let field = query.get("field") ?? SealedJSONForm.formFieldName(in: body)
        let form = SealedJSONForm(scheme: scheme, key: key, field: field)
        let plaintext: [UInt8]
        do {
            plaintext = try form.open(body)
        } catch let error as AttacheError {
            return errorResponse(.badRequest, "cannot open the sealed form (\(error.code)): \(error.message)")
        }
        guard (try? JSONValue.parse(plaintext)) != nil else {
            return errorResponse(.badRequest, "the decrypted body is not JSON")
        }
        context.logger.debug(
            "opened a sealed JSON form",
            metadata: ["scheme": "\(scheme)", "field": "\(field ?? "(bare)")", "bytes": "\(plaintext.count)"])
        if plainAnswer { return jsonResponse(.ok, plaintext) }
        do {
            let answer = try form.body(jsonBytes: plaintext)
            return Response(
                status: .ok, headers: [.contentType: SealedJSONForm.contentType],
                body: .init(byteBuffer: ByteBuffer(bytes: answer.inMemoryBytes ?? [])))
        } catch let error as AttacheError {
            return errorResponse(.internalServerError, "cannot seal the answer: \(error.message)")
        }
    }
}
