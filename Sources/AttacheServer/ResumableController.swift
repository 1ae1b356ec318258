import Attache
import Foundation
import HTTPTypes
import Hummingbird
import Logging
internal import NIOCore
internal import NIOHTTPTypes
import ServiceLifecycle
import Glibc

/// The resumable protocols of the reference server: tus 1.0 (core, creation, creation-with-upload,
/// creation-defer-length, termination, checksum, expiration) and the IETF draft
/// (draft-ietf-httpbis-resumable-upload-11), both created by `POST /upload` and continued at
/// `/resumable/{id}`.
///
/// - tus: `OPTIONS /upload` announces it; `POST /upload` with `Tus-Resumable` creates an upload (201 +
///   `Location`); `HEAD`, `PATCH` (`application/offset+octet-stream`) and `DELETE` on its resource. The
///   `PATCH` that completes the upload is answered 204 with `Attache-File-Id` and `Attache-Receipt` (the
///   path of the receipt JSON, `GET /receipts/{fileId}`), since a tus `PATCH` answer has no body.
/// - IETF: `POST /upload` with `Upload-Complete` gets a `104 Upload Resumption Supported` interim answer
///   with `Location` and `Upload-Limit` before its body is read; `HEAD` gives `Upload-Offset`; `PATCH`
///   (`application/partial-upload`) appends; the request with `Upload-Complete: ?1` that ends the upload
///   gets the receipt as its answer (200), as a multipart upload does.
///
/// Both take the form fields as `Upload-Metadata` (tus syntax: `key base64value,…`; `filename` and
/// `filetype` name the file part) and the `Idempotency-Key` header at creation.
struct ResumableController: Sendable {
    let configuration: ReferenceServerConfiguration
    let uploads: ResumableStore
    let verifier: SealVerifier?
    let log: FileRequestLog?
    let appendCounter = AppendCounter()

    static let tusVersion = "1.0.0"
    static let tusExtensions = "creation,creation-with-upload,creation-defer-length,termination,checksum,expiration"
    static let checksumAlgorithms = "sha1,sha256,sha512"
    static let partialUploadType = "application/partial-upload"
    static let tusPatchType = "application/offset+octet-stream"
    static let offsetMismatchType = "https://iana.org/assignments/http-problem-types#mismatching-upload-offset"

    init(configuration: ReferenceServerConfiguration, uploads: ResumableStore, verifier: SealVerifier?) {
        self.configuration = configuration
        self.uploads = uploads
        self.verifier = verifier
        self.log = configuration.resumableLogPath.map(FileRequestLog.init(path:))
    }

    /// Counts appending requests for the fault plan.
    final class AppendCounter: Sendable {
        private let count = LockedValue(0)
        func next() -> Int { count.withLock { $0 += 1; return $0 } }
    }

    // MARK: Routing

    /// Whether `POST /upload` is a resumable creation this controller handles.
    func handles(_ request: Request) -> Bool {
        request.headers[.tusResumable] != nil || request.headers[.uploadComplete] != nil
    }

    /// `OPTIONS /upload`: the tus capabilities.
    func options() -> Response {
        var headers = tusHeaders()
        headers[.tusVersion] = Self.tusVersion
        headers[.tusExtension] = Self.tusExtensions
        headers[.tusChecksumAlgorithm] = Self.checksumAlgorithms
        if let max = configuration.maxBodySize { headers[.tusMaxSize] = String(max) }
        return Response(status: .noContent, headers: headers)
    }

    /// `POST /upload` with `Tus-Resumable` or `Upload-Complete`.
    func create(_ request: Request, context: ServerRequestContext) async throws -> Response {
        if request.headers[.tusResumable] != nil {
            return try await createTus(request, context: context)
        }
        return try await createIETF(request, context: context)
    }

    /// `HEAD /resumable/{id}`.
    func head(_ request: Request, context: ServerRequestContext) async throws -> Response {
        switch lookup(context) {
        case .missing: return errorResponse(.notFound, "no such upload")
        case .expired(let isTus): return expiredResponse(isTus: isTus)
        case .found(let upload):
            var headers: HTTPFields = [.cacheControl: "no-store"]
            headers[.uploadOffset] = String(upload.offset)
            if let fileId = upload.info.fileId {
                headers[.attacheFileId] = fileId
                headers[.attacheReceipt] = "/receipts/\(fileId)"
                if upload.info.protocolName == .tus {
                    headers.append(contentsOf: tusHeaders())
                    headers[.uploadLength] = String(upload.offset)
                    return Response(status: .ok, headers: headers)
                }
                headers[.uploadComplete] = "?1"
                return Response(status: .noContent, headers: headers)
            }
            if upload.info.protocolName == .tus {
                headers.append(contentsOf: tusHeaders())
                if let length = upload.info.length {
                    headers[.uploadLength] = String(length)
                } else {
                    headers[.uploadDeferLength] = "1"
                }
                headers[.uploadExpires] = Self.httpDate(upload.info.expires)
                if !upload.info.metadata.isEmpty { headers[.uploadMetadata] = Self.encodeMetadata(upload.info.metadata) }
                return Response(status: .ok, headers: headers)
            }
            headers[.uploadComplete] = "?0"
            headers[.uploadLimit] = uploadLimit(expires: upload.info.expires)
            if let length = upload.info.length { headers[.uploadLength] = String(length) }
            return Response(status: .noContent, headers: headers)
        }
    }

    /// `PATCH /resumable/{id}`.
    func patch(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let upload: ResumableStore.Upload
        switch lookup(context) {
        case .missing: return errorResponse(.notFound, "no such upload")
        case .expired(let isTus): return expiredResponse(isTus: isTus)
        case .found(let found): upload = found
        }
        let isTus = upload.info.protocolName == .tus
        if let fileId = upload.info.fileId {
            // Already complete: the client lost the answer. 409 with the final offset sends it to HEAD.
            var headers: HTTPFields = isTus ? tusHeaders() : [.uploadComplete: "?1"]
            headers[.uploadOffset] = String(upload.offset)
            headers[.attacheFileId] = fileId
            headers[.attacheReceipt] = "/receipts/\(fileId)"
            return errorResponse(.conflict, "the upload is already complete", headers: headers)
        }
        let contentType = request.headers[.contentType]?.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces)
            .lowercased()
        if isTus {
            guard request.headers[.tusResumable] == Self.tusVersion else {
                return errorResponse(.preconditionFailed, "Tus-Resumable 1.0.0 required", headers: tusHeaders())
            }
            guard contentType == Self.tusPatchType else {
                return errorResponse(.unsupportedMediaType, "expected \(Self.tusPatchType)", headers: tusHeaders())
            }
        } else if contentType != Self.partialUploadType {
            return errorResponse(.unsupportedMediaType, "expected \(Self.partialUploadType)")
        }
        guard let claimed = request.headers[.uploadOffset].flatMap(Int64.init), claimed >= 0 else {
            return errorResponse(.badRequest, "Upload-Offset required", headers: isTus ? tusHeaders() : [:])
        }
        if claimed != upload.offset {
            return offsetMismatch(upload: upload, claimed: claimed)
        }
        var info = upload.info
        if isTus, info.length == nil, let declared = request.headers[.uploadLength].flatMap(Int64.init) {
            guard declared >= upload.offset else { return errorResponse(.badRequest, "Upload-Length below the offset") }
            info.length = declared
            try uploads.writeInfo(info, id: upload.id)
        }
        var complete: Bool? = nil
        if !isTus {
            guard let flag = Self.parseBoolean(request.headers[.uploadComplete]) else {
                return errorResponse(.badRequest, "Upload-Complete required (?0 or ?1)")
            }
            complete = flag
        }
        var current = upload
        current.info = info
        return try await append(request, to: current, complete: complete, context: context, status: nil)
    }

    /// `DELETE /resumable/{id}`: termination.
    func delete(_ request: Request, context: ServerRequestContext) async throws -> Response {
        switch lookup(context) {
        case .missing: return errorResponse(.notFound, "no such upload")
        case .expired(let isTus): return expiredResponse(isTus: isTus)
        case .found(let upload):
            guard uploads.begin(upload.id) else { return locked() }
            let store = uploads
            try await run { store.remove(upload.id) }
            record(["event": "delete", "protocol": upload.info.protocolName.rawValue, "id": upload.id, "status": 204])
            return Response(status: .noContent, headers: upload.info.protocolName == .tus ? tusHeaders() : [:])
        }
    }

    /// `GET /receipts/{fileId}`: the receipt of a completed upload (what a tus client reads after its
    /// last `PATCH`).
    func receipt(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let id = context.parameters.get("id") else { return errorResponse(.notFound, "no such file") }
        let store = uploads.store
        guard let bytes = try await run({ store.receiptBytes(fileId: id) }) else {
            return errorResponse(.notFound, "no such file")
        }
        return jsonResponse(.ok, bytes)
    }

    // MARK: Appending

    /// Appends the request body to `upload`, injecting the planned fault, and answers: the offset, or
    /// the receipt when the upload is now complete. `complete` is the IETF `Upload-Complete` (nil for
    /// tus, where the declared length decides). `status` is that of a creation request (201).
    func append(
        _ request: Request, to upload: ResumableStore.Upload, complete: Bool?, context: ServerRequestContext,
        status creationStatus: HTTPResponse.Status?
    ) async throws -> Response {
        let isTus = upload.info.protocolName == .tus
        let baseHeaders: HTTPFields = {
            var headers = isTus ? tusHeaders() : HTTPFields()
            if creationStatus != nil { headers[.location] = "/resumable/\(upload.id)" }
            if isTus { headers[.uploadExpires] = Self.httpDate(upload.info.expires) }
            return headers
        }()
        if let max = configuration.maxAppendSize, let length = request.headers[.contentLength].flatMap(Int64.init),
            length > max
        {
            record([
                "event": "append", "protocol": upload.info.protocolName.rawValue, "id": upload.id,
                "offset": upload.offset, "received": 0, "status": 413,
            ])
            var headers = baseHeaders
            headers[.uploadLimit] = uploadLimit(expires: upload.info.expires)
            headers[.connection] = "close"
            return errorResponse(.contentTooLarge, "an append may be at most \(max) bytes", headers: headers)
        }
        guard uploads.begin(upload.id) else { return locked() }
        defer { uploads.end(upload.id) }

        let checksum: (algorithm: String, expected: [UInt8])?
        if isTus, let header = request.headers[.uploadChecksum] {
            let pieces = header.split(separator: " ", maxSplits: 1).map(String.init)
            guard pieces.count == 2, ChecksumHasher.isSupported(pieces[0].lowercased()),
                let expected = try? Base64.decode(pieces[1].trimmingCharacters(in: .whitespaces))
            else {
                return errorResponse(.badRequest, "unsupported or malformed Upload-Checksum", headers: baseHeaders)
            }
            checksum = (pieces[0].lowercased(), expected)
        } else {
            checksum = nil
        }

        let number = appendCounter.next()
        let declaredEnd = request.headers[.contentLength].flatMap(Int64.init).map { upload.offset + $0 }
        let fault = configuration.appendFaults.fault(forRequest: number, offset: upload.offset, end: declaredEnd)
        var keepLimit: Int64? = nil
        switch fault {
        case .drop(let after), .stall(let after, _): keepLimit = after
        case .cut(let at): keepLimit = at - upload.offset
        default: break
        }
        if let fault { context.logger.info("injecting append fault", metadata: ["fault": "\(fault)", "append": "\(number)"]) }

        let store = uploads
        let appender = try await run { try store.appender(for: upload) }
        let hasher = try checksum.map { try SHA256Hasher(algorithm: $0.algorithm) }
        let remainingLength = upload.info.length.map { $0 - upload.offset }
        var batch: [ByteBuffer] = []
        var batched = 0
        var received: Int64 = 0
        var interrupted: (any Error)?
        var overflow = false
        do {
            bodyLoop: for try await var buffer in request.body {
                if let keepLimit, received + Int64(buffer.readableBytes) >= keepLimit {
                    let keep = Int(keepLimit - received)
                    if let slice = buffer.readSlice(length: keep) {
                        batch.append(slice)
                        received += Int64(keep)
                    }
                    break bodyLoop
                }
                if let remainingLength, received + Int64(buffer.readableBytes) > remainingLength {
                    overflow = true
                    break bodyLoop
                }
                received += Int64(buffer.readableBytes)
                if let hasher { try buffer.withUnsafeReadableBytes { try hasher.update($0) } }
                batch.append(buffer)
                batched += buffer.readableBytes
                if batched >= 256 * 1024 {
                    let full = batch
                    try await run { try appender.append(full) }
                    batch = []
                    batched = 0
                }
            }
        } catch {
            interrupted = error
        }
        let rest = batch
        try await run {
            try appender.append(rest)
            try appender.sync()
        }
        var entry: [String: Any] = [
            "event": "append", "protocol": upload.info.protocolName.rawValue, "id": upload.id,
            "offset": upload.offset, "received": appender.written,
        ]
        if let checksum { entry["checksum"] = checksum.algorithm }
        let newOffset = upload.offset + appender.written

        if let fault, fault.resetsConnection {
            entry["status"] = "dropped"
            record(entry)
            return try await FaultInjector(context: context).abandon()
        }
        if let fault, case .stall(_, let seconds) = fault {
            entry["status"] = "stalled"
            record(entry)
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(seconds)) }
            return try await FaultInjector(context: context).abandon()
        }
        if let interrupted {
            // The client went away mid-body: what arrived is kept for its resume.
            entry["status"] = "interrupted"
            record(entry)
            throw interrupted
        }
        if overflow {
            entry["status"] = 400
            record(entry)
            return errorResponse(.badRequest, "the body goes past the declared Upload-Length", headers: baseHeaders)
        }
        if let checksum, let hasher {
            let actual = try hasher.finalizeBytes()
            let mismatch = actual != checksum.expected || fault == .checksumMismatch
            if mismatch {
                try await run { try appender.rollBack() }
                entry["status"] = 460
                entry["received"] = received
                record(entry)
                var headers = baseHeaders
                headers[.uploadOffset] = String(upload.offset)
                return errorResponse(.init(code: 460, reasonPhrase: "Checksum Mismatch"), "checksum mismatch", headers: headers)
            }
        } else if fault == .checksumMismatch {
            try await run { try appender.rollBack() }
            entry["status"] = 460
            entry["received"] = received
            record(entry)
            var headers = baseHeaders
            headers[.uploadOffset] = String(upload.offset)
            return errorResponse(.init(code: 460, reasonPhrase: "Checksum Mismatch"), "checksum mismatch", headers: headers)
        }

        var finished = upload
        finished.offset = newOffset
        let isComplete: Bool
        if let complete {
            isComplete = complete
            if complete, finished.info.length == nil {
                finished.info.length = newOffset
            }
        } else {
            isComplete = finished.info.length == newOffset
        }
        if let length = finished.info.length, newOffset > length {
            entry["status"] = 400
            record(entry)
            return errorResponse(.badRequest, "more bytes than the declared length", headers: baseHeaders)
        }
        var headers = baseHeaders
        headers[.uploadOffset] = String(newOffset)
        if isComplete {
            if let length = finished.info.length, newOffset != length {
                entry["status"] = 400
                record(entry)
                return errorResponse(.badRequest, "Upload-Complete with \(newOffset) of \(length) bytes", headers: headers)
            }
            entry["status"] = "complete"
            record(entry)
            return try await finish(finished, headers: headers, status: creationStatus, context: context)
        }
        let status: HTTPResponse.Status = isTus ? (creationStatus ?? .noContent) : (creationStatus ?? .noContent)
        entry["status"] = status.code
        record(entry)
        if !isTus { headers[.uploadComplete] = "?0" }
        return Response(status: status, headers: headers)
    }

    /// Commits a complete upload and answers: IETF with the receipt (200), tus with 204/201 and the
    /// receipt's location.
    func finish(
        _ upload: ResumableStore.Upload, headers: HTTPFields, status: HTTPResponse.Status?,
        context: ServerRequestContext
    ) async throws -> Response {
        let store = uploads
        let verifier = self.verifier
        let committed: (receipt: [UInt8], fileId: String, replayed: Bool)
        do {
            committed = try await run { try store.complete(upload, verifier: verifier) }
        } catch let failure as SealVerifier.Failure {
            context.logger.notice("sealed upload did not verify", metadata: ["reason": "\(failure.code)"])
            store.remove(upload.id)
            record(["event": "complete", "protocol": upload.info.protocolName.rawValue, "id": upload.id, "status": 422])
            return errorResponse(
                .unprocessableContent, "the sealed upload did not verify (\(failure.code)): \(failure.message)",
                headers: headers)
        }
        record([
            "event": "complete", "protocol": upload.info.protocolName.rawValue, "id": upload.id,
            "fileId": committed.fileId, "status": 200,
        ])
        var answer = headers
        if committed.replayed { answer[.idempotentReplayed] = "true" }
        answer[.attacheFileId] = committed.fileId
        if upload.info.protocolName == .tus {
            answer[.attacheReceipt] = "/receipts/\(committed.fileId)"
            return Response(status: status ?? .noContent, headers: answer)
        }
        answer[.uploadComplete] = "?1"
        return jsonResponse(.ok, committed.receipt, headers: answer)
    }

    // MARK: Helpers

    enum Found {
        case found(ResumableStore.Upload)
        case missing
        case expired(isTus: Bool)
    }

    func lookup(_ context: ServerRequestContext) -> Found {
        guard let id = context.parameters.get("id") else { return .missing }
        // Peek at the protocol before the lookup deletes an expired upload.
        let infoPath = uploads.directory + "/" + id + "/info.json"
        let isTus = FileManager.default.contents(atPath: infoPath).flatMap {
            try? JSONDecoder().decode(ResumableStore.Info.self, from: $0)
        }?.protocolName == .tus
        switch uploads.lookup(id) {
        case .found(let upload): return .found(upload)
        case .missing: return .missing
        case .expired:
            record(["event": "expired", "protocol": isTus ? "tus" : "ietf", "id": id])
            return .expired(isTus: isTus)
        }
    }

    func expiredResponse(isTus: Bool) -> Response {
        isTus
            ? errorResponse(.gone, "the upload expired", headers: tusHeaders())
            : errorResponse(.notFound, "the upload expired")
    }

    func locked() -> Response {
        errorResponse(.init(code: 423, reasonPhrase: "Locked"), "another request is appending to this upload", headers: [.retryAfter: "1"])
    }

    func offsetMismatch(upload: ResumableStore.Upload, claimed: Int64) -> Response {
        record([
            "event": "append", "protocol": upload.info.protocolName.rawValue, "id": upload.id, "offset": claimed,
            "received": 0, "status": 409,
        ])
        if upload.info.protocolName == .tus {
            var headers = tusHeaders()
            headers[.uploadOffset] = String(upload.offset)
            return errorResponse(.conflict, "Upload-Offset \(claimed) does not match \(upload.offset)", headers: headers)
        }
        struct Problem: Encodable {
            var type: String
            var title: String
            var expectedOffset: Int64
            var providedOffset: Int64
            enum CodingKeys: String, CodingKey {
                case type, title
                case expectedOffset = "expected-offset"
                case providedOffset = "provided-offset"
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(
            Problem(
                type: Self.offsetMismatchType, title: "offset from request does not match offset of resource",
                expectedOffset: upload.offset, providedOffset: claimed))).map { Array($0) } ?? []
        return Response(
            status: .conflict,
            headers: [.contentType: "application/problem+json", .uploadOffset: String(upload.offset), .uploadComplete: "?0"],
            body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    func tusHeaders() -> HTTPFields {
        [.tusResumable: Self.tusVersion]
    }

    func uploadLimit(expires: Double) -> String {
        var items: [String] = []
        if let max = configuration.maxBodySize { items.append("max-size=\(max)") }
        if let append = configuration.maxAppendSize { items.append("max-append-size=\(append)") }
        items.append("expires=\(max(0, Int(expires - Date().timeIntervalSince1970)))")
        return items.joined(separator: ", ")
    }

    func idempotencyKey(_ request: Request) -> String? {
        request.headers[.idempotencyKey].flatMap { $0.isEmpty ? nil : $0 }
    }

    func record(_ object: [String: Any]) { log?.append(object) }

    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await BlockingPool.shared.run(work)
    }
}
