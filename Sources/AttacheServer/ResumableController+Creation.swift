import Attache
import Foundation
import HTTPTypes
import Hummingbird
internal import NIOCore
internal import NIOHTTPTypes

/// Creating an upload: tus `POST` (with or without a first chunk) and the IETF `POST` that announces
/// the resource in a `104` interim answer before its body is read.
extension ResumableController {
    func createTus(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard request.headers[.tusResumable] == Self.tusVersion else {
            return errorResponse(.preconditionFailed, "unsupported tus version", headers: tusHeaders())
        }
        var length: Int64?
        if let text = request.headers[.uploadLength] {
            guard let value = Int64(text), value >= 0 else { return errorResponse(.badRequest, "bad Upload-Length") }
            length = value
        } else if request.headers[.uploadDeferLength] != "1" {
            return errorResponse(.badRequest, "Upload-Length or Upload-Defer-Length: 1 required", headers: tusHeaders())
        }
        if let length, let max = configuration.maxBodySize, length > max {
            return errorResponse(.contentTooLarge, "Upload-Length exceeds Tus-Max-Size", headers: tusHeaders())
        }
        guard let metadata = Self.decodeMetadata(request.headers[.uploadMetadata]) else {
            return errorResponse(.badRequest, "bad Upload-Metadata", headers: tusHeaders())
        }
        let info = ResumableStore.Info(
            protocolName: .tus, length: length, metadata: metadata, idempotencyKey: idempotencyKey(request),
            expires: uploads.expiryFromNow())
        let store = uploads
        let upload = try await run { try store.create(info) }
        record(["event": "create", "protocol": "tus", "id": upload.id, "length": length.map { $0 as Any } ?? NSNull()])
        let hasBody = (request.headers[.contentLength].flatMap(Int64.init) ?? 0) > 0
            || request.headers[.transferEncoding] != nil
        if hasBody {
            let contentType = request.headers[.contentType]?.prefix { $0 != ";" }.lowercased()
            guard contentType == Self.tusPatchType else {
                return errorResponse(.unsupportedMediaType, "expected \(Self.tusPatchType)", headers: tusHeaders())
            }
            return try await append(request, to: upload, complete: nil, context: context, status: .created)
        }
        var headers = tusHeaders()
        headers[.location] = "/resumable/\(upload.id)"
        headers[.uploadOffset] = "0"
        headers[.uploadExpires] = Self.httpDate(info.expires)
        if length == 0 {
            return try await finish(upload, headers: headers, status: .created, context: context)
        }
        return Response(status: .created, headers: headers)
    }

    func createIETF(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let complete = Self.parseBoolean(request.headers[.uploadComplete]) else {
            return errorResponse(.badRequest, "Upload-Complete must be ?0 or ?1")
        }
        let contentLength = request.headers[.contentLength].flatMap(Int64.init)
        if let max = configuration.maxBodySize, let contentLength, contentLength > max {
            return FaultInjector(context: context).earlyRejection(
                status: .contentTooLarge, message: "request body of \(contentLength) bytes exceeds the limit of \(max)")
        }
        guard let metadata = Self.decodeMetadata(request.headers[.uploadMetadata]) else {
            return errorResponse(.badRequest, "bad Upload-Metadata")
        }
        let info = ResumableStore.Info(
            protocolName: .ietf, length: complete ? contentLength : nil, metadata: metadata,
            idempotencyKey: idempotencyKey(request), expires: uploads.expiryFromNow())
        let store = uploads
        let upload = try await run { try store.create(info) }
        record(["event": "create", "protocol": "ietf", "id": upload.id, "length": info.length.map { $0 as Any } ?? NSNull()])
        // The interim answer goes out before the body is read: from then on the client knows where to
        // resume. Hummingbird's router answers once per request, so the head is written to the channel
        // directly; it passes the same HTTP/1 encoder as the final answer, which cannot have started yet.
        var interim = HTTPFields()
        interim[.location] = "/resumable/\(upload.id)"
        interim[.uploadLimit] = uploadLimit(expires: info.expires)
        let head = HTTPResponse(
            status: .init(code: 104, reasonPhrase: "Upload Resumption Supported"), headerFields: interim)
        try await context.channel.writeAndFlush(HTTPResponsePart.head(head)).get()
        return try await append(request, to: upload, complete: complete, context: context, status: .created)
    }
}
