import Attache
import HTTPTypes
import Hummingbird
import Logging

extension HTTPField.Name {
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!
    static let attacheFault = HTTPField.Name("X-Attache-Fault")!
}

/// `POST /upload`: faults first, then the idempotency check, then the multipart body streamed to
/// disk, then the commit into the store.
struct UploadController: Sendable {
    let configuration: ReferenceServerConfiguration
    let store: UploadStore
    /// Set when the server was given a key: sealed uploads are opened and checked before they are stored.
    var verifier: SealVerifier? = nil
    /// Set with `--upload-log`: every keyed upload's outcome, for tests that count stores per key.
    var log: UploadRequestLog? = nil
    /// Set with `--clamd`: file parts are scanned before they are stored.
    var scanner: ClamAVScanner? = nil

    /// Bodies are handed to the spool in batches of about this size, so a pool hop is paid per
    /// quarter megabyte rather than per socket read.
    private static let batchSize = 256 * 1024

    func upload(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let key = request.headers[.idempotencyKey].flatMap { $0.isEmpty ? nil : $0 }
        var requestPlan = FaultPlan.none
        if let spec = request.headers[.attacheFault] {
            do {
                requestPlan = try FaultPlan(parsing: spec)
            } catch let error as AttacheError {
                _ = store.countRequest(key: key)
                return errorResponse(.badRequest, error.message)
            }
        }
        if requestPlan.rules.contains(where: { if case .crash = $0.kind { true } else { false } }) {
            _ = store.countRequest(key: key)
            return errorResponse(.badRequest, "a crash fault is accepted from attache-server --fault only")
        }
        let ticket = store.countRequest(key: key)
        var crash: CrashPoint?
        if let fault = requestPlan.fault(forRequest: ticket.attempt) ?? configuration.faults.fault(forRequest: ticket.number) {
            context.logger.info("injecting fault", metadata: ["fault": "\(fault.name)", "request": "\(ticket.number)"])
            if let key { log?.record(key: key, outcome: "fault-\(fault.name)") }
            if case .crash(let point) = fault {
                crash = point
            } else {
                return try await FaultInjector(context: context).inject(fault, into: request)
            }
        }

        if let limit = configuration.maxBodySize, let length = request.headers[.contentLength].flatMap(Int64.init),
            length > limit
        {
            return FaultInjector(context: context).earlyRejection(
                status: .contentTooLarge, message: "request body of \(length) bytes exceeds the limit of \(limit)")
        }
        guard let boundary = Self.boundary(of: request.headers[.contentType]) else {
            return errorResponse(.unsupportedMediaType, "expected multipart/form-data with a boundary")
        }

        if let key {
            switch try store.claim(key: key) {
            case .replay(let fileId):
                log?.record(key: key, outcome: "replayed", fileId: fileId)
                guard let receipt = await readReceipt(fileId) else {
                    return errorResponse(.internalServerError, "the receipt of a completed upload is missing")
                }
                return jsonResponse(.ok, receipt, headers: [.idempotentReplayed: "true"])
            case .inProgress:
                log?.record(key: key, outcome: "in-progress")
                return errorResponse(.conflict, "upload with this key in progress", headers: [.retryAfter: "1"])
            case .claimed:
                break
            }
        }

        var committedId: String?
        defer { if let key { store.finish(key: key, fileId: committedId) } }

        let spool = MultipartSpool(
            boundary: boundary, temporaryDirectory: store.temporaryDirectory, fieldLimit: configuration.maxFieldSize)
        do {
            let parts = try await receive(request.body, into: spool)
            guard parts.contains(where: \.isFile) else {
                await discard(spool)
                return errorResponse(.badRequest, "no file part")
            }
            var checks: [String: UploadReceipt.SealCheck] = [:]
            if let verifier {
                do {
                    checks = try await BlockingPool.shared.run { try verifier.check(parts) }
                } catch let failure as SealVerifier.Failure {
                    await discard(spool)
                    context.logger.notice("sealed upload did not verify", metadata: ["reason": "\(failure.code)"])
                    return errorResponse(
                        .unprocessableContent, "the sealed upload did not verify (\(failure.code)): \(failure.message)")
                }
            }
            if let scanner, let refusal = await scan(parts, with: scanner, context: context) {
                await discard(spool)
                if let key { log?.record(key: key, outcome: refusal.status == .unprocessableContent ? "infected" : "unscanned") }
                return errorResponse(
                    refusal.status, refusal.message,
                    headers: refusal.status == .serviceUnavailable ? [.retryAfter: "5"] : [:])
            }
            let store = self.store
            let verified = checks
            let crashPoint = crash
            let committed = try await BlockingPool.shared.run {
                try store.commit(parts: parts, key: key, checks: verified, crash: crashPoint)
            }
            committedId = committed.fileId
            if let key { log?.record(key: key, outcome: "stored", fileId: committed.fileId) }
            return jsonResponse(.ok, committed.receipt)
        } catch let rejection as MultipartRejection {
            await discard(spool)
            switch rejection {
            case .malformed(let message):
                return errorResponse(.badRequest, message)
            case .fieldTooLarge(let name, let limit):
                return errorResponse(.contentTooLarge, "field '\(name)' exceeds \(limit) bytes")
            }
        } catch let tooLarge as BodyTooLarge {
            await discard(spool)
            return errorResponse(.contentTooLarge, "request body exceeds the limit of \(tooLarge.limit) bytes")
        } catch let error as AttacheError {
            await discard(spool)
            context.logger.error("upload failed", metadata: ["error": "\(error)"])
            return errorResponse(.internalServerError, "the upload could not be stored")
        } catch {
            // The connection broke mid-body: nobody to answer, nothing to keep.
            await discard(spool)
            throw error
        }
    }

    private struct BodyTooLarge: Error { let limit: Int64 }

    /// Scans every spooled file part; the answer that refuses the upload (422 infected, 503 no verdict),
    /// or nil when all are clean.
    private func scan(
        _ parts: [SpooledPart], with scanner: ClamAVScanner, context: ServerRequestContext
    ) async -> (status: HTTPResponse.Status, message: String)? {
        for part in parts {
            guard let path = part.temporaryPath else { continue }
            do {
                let verdict = try await scanner.scan(try FileSource(path: path), file: part.filename ?? part.name)
                if verdict.outcome == .infected {
                    let signature = verdict.signature ?? "unnamed signature"
                    context.logger.notice("refused an infected upload", metadata: ["signature": "\(signature)"])
                    return (.unprocessableContent, "infected: \(signature)")
                }
            } catch {
                context.logger.warning("no scan verdict", metadata: ["error": "\(error)"])
                return (.serviceUnavailable, "the upload could not be scanned; try again later")
            }
        }
        return nil
    }

    /// Streams the body through the spool, a batch at a time, off the cooperative pool.
    private func receive(_ body: RequestBody, into spool: MultipartSpool) async throws -> [SpooledPart] {
        var batch: [ByteBuffer] = []
        var batched = 0
        var received: Int64 = 0
        for try await buffer in body {
            received += Int64(buffer.readableBytes)
            if let limit = configuration.maxBodySize, received > limit { throw BodyTooLarge(limit: limit) }
            batch.append(buffer)
            batched += buffer.readableBytes
            if batched >= Self.batchSize {
                let full = batch
                try await BlockingPool.shared.run { try spool.consume(full) }
                batch = []
                batched = 0
            }
        }
        let rest = batch
        return try await BlockingPool.shared.run {
            try spool.consume(rest)
            return try spool.finish()
        }
    }

    private func discard(_ spool: MultipartSpool) async {
        _ = try? await BlockingPool.shared.run { spool.discard() }
    }

    private func readReceipt(_ fileId: String) async -> [UInt8]? {
        let store = self.store
        return try? await BlockingPool.shared.run { store.receiptBytes(fileId: fileId) }
    }

    /// The boundary of a `multipart/form-data` content type, or `nil` when it is not one.
    static func boundary(of contentType: String?) -> String? {
        guard let contentType else { return nil }
        let type = contentType.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "multipart/form-data" else { return nil }
        guard let boundary = ContentDisposition.parameters(of: contentType)["boundary"],
            (1...70).contains(boundary.utf8.count)
        else { return nil }
        return boundary
    }
}
