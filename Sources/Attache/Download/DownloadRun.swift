internal import AttacheCore
import FoundationEssentials
import Glibc
import Logging

/// One `download` call: its attempts, the `.part` file, verification and the final rename.
struct DownloadRun: Sendable {
    let request: DownloadRequest
    let configuration: ConnectionConfiguration
    let client: AttacheClient
    let progress: @Sendable (DownloadProgress) -> Void

    /// What the attempts share: the running hash and where the first one started.
    private final class Shared: @unchecked Sendable {
        let hash: RunningHash
        var transferred: Int64 = 0
        var restartedAfterMismatch = false
        /// The `If-Range` validator for the next attempt: the request's, then the last one the
        /// server sent with the bytes now in the `.part` file.
        var validator: String?
        init(validator: String?) throws {
            hash = try RunningHash()
            self.validator = validator
        }
    }

    /// Runs the download inside its span when telemetry is on, counting it, its bytes and a failed
    /// verification.
    func run() async throws -> DownloadReceipt {
        let telemetry = client.telemetry
        guard telemetry.isOn else { return try await attempts() }
        return try await telemetry.withSpan("attache.download") { span in
            span?.set("url.full", URLRedaction.redacting(request.url))
            do {
                let receipt = try await attempts()
                telemetry.count(.downloads, [("attache.outcome", "downloaded"), ("error.type", "none")])
                telemetry.count(.downloadBytes, by: receipt.transferredByteCount)
                span?.set("attache.size.out", receipt.byteCount)
                span?.set("attache.attempts", receipt.attempts)
                return receipt
            } catch {
                let code = TelemetrySpan.errorType(error)
                telemetry.count(.downloads, [("attache.outcome", "failed"), ("error.type", code)])
                if let error = error as? AttacheError, error.code == .corruptInput, error.stage == .download {
                    telemetry.count(.downloadVerificationFailures)
                }
                throw error
            }
        }
    }

    /// The attempts, the verification and the rename.
    private func attempts() async throws -> DownloadReceipt {
        let part = request.partialPath
        if !request.resume { unlink(part) }
        let resumedFrom = Self.size(of: part) ?? 0
        let shared = try Shared(validator: request.resume ? request.validator : nil)
        let prepared: PreparedRequest
        let object: SignedObject?
        do {
            object = try SignedObject(request)
            prepared = try TransportRequest(
                method: "GET", url: object?.address.url ?? request.url, headers: request.headers, connection: configuration,
                receiveBufferSize: TransportRequest.streamingReceiveBufferSize
            ).prepared(for: .download)
        } catch var error as AttacheError {
            error.file = request.url
            throw error
        }
        let outcome: Executed<DownloadReceipt>
        do {
            outcome = try await attempts(prepared, object: object, shared: shared, resumedFrom: resumedFrom)
        } catch var error as AttacheError where error.code == .connectionFailed || error.code == .retriesExhausted {
            if request.streamsToDestination { unlink(part) }
            error.file = request.url
            throw error
        } catch {
            // A stream's partial file has a name no later call can find: nothing to resume.
            if request.streamsToDestination { unlink(part) }
            throw error
        }
        var receipt = outcome.value
        receipt.attempts = outcome.attempts
        return receipt
    }

    /// GETs from the end of the `.part` file on the client's attempt loop, until the file is whole.
    private func attempts(
        _ prepared: PreparedRequest, object: SignedObject?, shared: Shared, resumedFrom: Int64
    ) async throws -> Executed<DownloadReceipt> {
        let request = request
        let part = request.partialPath
        let progress = progress
        var sink: DownloadSink?
        var offset: Int64 = 0
        return try await client.execute(
            .download, policy: configuration.retry, answerStage: .download, logger: Logger(label: "attache.download")
        ) { _ in
            if let earlier = sink {
                // A retrier sent the last answer back before it was settled: its bytes still count.
                try? earlier.closeFile()
                shared.transferred += earlier.written
                sink = nil
            }
            offset = Self.size(of: part) ?? 0
            // The hash must cover exactly what the attempt appends to; only a resumed prefix is read back.
            let hash = shared.hash
            // Read back only when the digest is certainly wanted; otherwise the end reads what it needs.
            let hashAlways = request.digest == .always || request.expectedSHA256 != nil
            if hashAlways { try await BlockingPool.shared.run { [offset] in try hash.catchUp(toLength: offset, ofFile: part) } }
            var headers: [HeaderField] = [HeaderField(name: "Accept-Encoding", value: "identity")] + request.headers
            if offset > 0 {
                headers.append(HeaderField(name: "Range", value: "bytes=\(offset)-"))
                if let validator = shared.validator { headers.append(HeaderField(name: "If-Range", value: validator)) }
            }
            let attemptSink = DownloadSink(
                url: request.url, partialPath: part, offset: offset, hash: hash, hashAlways: hashAlways, progress: progress)
            sink = attemptSink
            let exchange: PreparedRequest
            do {
                // An object's GET is signed with this attempt's headers (its Range) and date.
                exchange = try prepared.replacingHeaders(try object?.signed(headers) ?? headers)
            } catch {
                try? attemptSink.closeFile()
                throw error.attributed(to: .download, file: request.url)
            }
            progress(DownloadProgress(receivedBytes: offset, totalBytes: nil))
            return (exchange, attemptSink)
        } failed: { error, _ in
            var error = error
            if let attemptSink = sink {
                sink = nil
                try? attemptSink.closeFile()
                shared.transferred += attemptSink.written
                if error.code == .connectionLost {
                    error.message =
                        "connection lost after \(attemptSink.base + attemptSink.written) bytes: \((error.cause as? NativeError)?.text ?? error.message)"
                }
            }
            if error.file == nil, error.code != .fileUnwritable { error.file = request.url }
            return error
        } settle: { answer -> Settlement<DownloadReceipt> in
            guard let attemptSink = sink else {
                throw AttacheError(.internalError, stage: .download, "an answer without its sink")
            }
            sink = nil
            shared.transferred += attemptSink.written
            do {
                try attemptSink.closeFile()
            } catch let error as AttacheError {
                guard answer.classifier.isRetryable(error), !answer.isFinal else { throw error }
                return .retry(RetryAdvice(reason: error.message), failure: error)
            }
            if let seen = attemptSink.validator { shared.validator = seen }
            switch attemptSink.verdict(for: answer.response, classifier: answer.classifier) {
            case .complete(let total, let etag):
                return try await finish(total: total, etag: etag, offset: offset, resumedFrom: resumedFrom, shared: shared)
            case .failed(let error, let retryAfter):
                guard error.isRetryable, !answer.isFinal else { throw error }
                return .retry(RetryAdvice(reason: error.message, retryAfter: retryAfter), failure: retryAfter == nil ? error : nil)
            }
        }
    }

    /// Verifies the complete `.part` file and moves (or unseals) it into place.
    private func finish(
        total: Int64, etag: String?, offset: Int64, resumedFrom: Int64, shared: Shared
    ) async throws -> Settlement<DownloadReceipt> {
        let request = request
        let part = request.partialPath
        return try await BlockingPool.shared.run { () -> Settlement<DownloadReceipt> in
            guard let size = Self.size(of: part), size == total else {
                throw AttacheError(
                    .corruptInput, stage: .download,
                    "the server announced \(total) bytes but \(Self.size(of: part) ?? 0) arrived", file: request.url)
            }
            let checksETag = etag.flatMap(Self.sha256ETag) != nil
            var digest: String?
            if request.digest == .always || request.expectedSHA256 != nil || checksETag {
                try shared.hash.catchUp(toLength: total, ofFile: part)
                digest = try shared.hash.finishHex()
            }
            // A mismatch removes the bytes. A resumed prefix from another version of the file (or a
            // damaged one) gets one fresh start; a whole download that still differs fails this file.
            func mismatch(_ against: String, _ message: String) throws -> Settlement<DownloadReceipt> {
                unlink(part)
                if offset > 0 || resumedFrom > 0, !shared.restartedAfterMismatch {
                    shared.restartedAfterMismatch = true
                    return .retry(RetryAdvice(reason: "the resumed file did not match \(against); starting over"), failure: nil)
                }
                throw AttacheError(.corruptInput, stage: .download, message, file: request.url)
            }
            if let expected = request.expectedSHA256?.lowercased(), expected != digest {
                return try mismatch(
                    "the expected SHA-256",
                    "the downloaded bytes have SHA-256 \(digest ?? "-"), not the expected \(expected)")
            }
            var verified = false
            if let etag, let expected = Self.sha256ETag(etag) {
                guard expected == digest else {
                    return try mismatch("its ETag", "the downloaded bytes do not match the server's SHA-256 ETag")
                }
                verified = true
            }
            let stored: Int64
            let output = OutputDestination(path: request.destination, stage: .download)
            if let unsealing = request.unsealing {
                let unsealer = try unsealing.matrixFile.map { try Unsealer(matrixFile: $0, transferEncoding: unsealing.transferEncoding) }
                    ?? Unsealer(
                        scheme: unsealing.scheme, key: unsealing.key, transferEncoding: unsealing.transferEncoding,
                        plaintextByteCount: unsealing.plaintextByteCount)
                if output.kind == .replaced {
                    try unsealer.unseal(fileAt: part, to: request.destination)
                    stored = Self.size(of: request.destination) ?? 0
                } else {
                    // A stream: each segment is verified before it is written.
                    let reader = CountingReader(try unsealer.unseal(try FileSource(path: part)))
                    try output.write(reader)
                    stored = reader.count
                }
                unlink(part)
            } else if output.kind != .replaced {
                // A stream is written in place, after the bytes were verified, and never renamed over.
                try output.write(try FileSource(path: part).makeReader())
                unlink(part)
                stored = total
            } else {
                guard rename(part, request.destination) == 0 else {
                    throw AttacheError(
                        .fileUnwritable, stage: .download,
                        "cannot move the download into place: \(String(cString: strerror(errno)))",
                        file: request.destination, cause: NativeError.posix())
                }
                stored = total
            }
            return .done(
                DownloadReceipt(
                    url: request.url, path: request.destination, byteCount: total, storedByteCount: stored,
                    transferredByteCount: shared.transferred, resumedFrom: resumedFrom, attempts: 0,
                    sha256: digest, verifiedByETag: verified, unsealed: request.unsealing != nil))
        }
    }

    static func size(of path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    /// The hex digest an `ETag` carries when it is a quoted (or bare) SHA-256, lowercased.
    static func sha256ETag(_ etag: String) -> String? {
        var text = Substring(etag)
        if text.hasPrefix("W/") { return nil }  // a weak validator says nothing about the bytes
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = text.dropFirst().dropLast() }
        guard text.utf8.count == 64, text.utf8.allSatisfy({ $0 < 128 && isxdigit(Int32($0)) != 0 }) else { return nil }
        return text.lowercased()
    }
}

/// The object an `s3://` download fetches, and how each of its GETs is signed.
private struct SignedObject: Sendable {
    let address: S3ObjectAddress
    /// Nil when the client's adapters sign the GETs (``ObjectStoreSigning/adapters``).
    let signer: SigV4Signer?

    /// The object of `request`, or nil for an `http(s)` download.
    /// - Throws: ``AttacheCore/AttacheError`` `.invalidArgument` (stage `configuration`) for an `s3://` URL without an
    ///   object store, or one that names no object.
    init?(_ request: DownloadRequest) throws {
        guard S3Location(request.url) != nil else { return nil }
        guard let store = request.objectStore else {
            throw AttacheError(
                .invalidArgument, stage: .configuration, "an s3:// URL needs an object store to sign its requests",
                file: request.url)
        }
        address = try store.address(ofObject: request.url)
        signer = store.signer
    }

    /// `headers` with this moment's SigV4 signature of a GET without a body; as they are for the adapters to sign.
    func signed(_ headers: [HeaderField]) throws -> [HeaderField] {
        guard let signer else { return headers }
        return try signer.signS3(method: "GET", address: address, headers: headers, payloadHash: SigV4Signer.emptyPayloadHash)
    }
}

/// Counts what passes through a reader.
private final class CountingReader: ByteReader {
    private let inner: any ByteReader
    private(set) var count: Int64 = 0

    init(_ inner: any ByteReader) { self.inner = inner }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = try inner.read(into: buffer)
        count += Int64(n)
        return n
    }
}
