internal import AttacheCore
import FoundationEssentials

/// One multipart upload of a sealed payload to an object store key: found again (the journalled upload id,
/// else `ListMultipartUploads`; then `ListParts`) or created, the missing parts sent several at once (each
/// retried on its own), then completed and checked.
///
/// What makes a rerun continue rather than start over is durable: the key comes from the idempotency key
/// (journalled by the batch, the queue row, `upload --idempotency-key`) and the sealed bytes from the seal
/// material (journalled alongside), so the same part re-seals to identical bytes. The upload id and each
/// part the store confirms (ETag, checksum) are journalled there too (``MultipartRecord``, through
/// ``journal``); a rerun continues that upload, and the store's `ListParts` says which parts it holds (the
/// store is trusted over the journal). With no record (an older journal) the store's newest upload under
/// the key is continued.
struct MultipartObjectUpload: Sendable {
    /// A part the store holds.
    struct Part: Sendable, Equatable {
        var number: Int
        var etag: String
        var size: Int64
        var checksum: String?
        /// The checksum the store answered for the part when it took it (the same as ``checksum``, or the
        /// upload fails there), or an earlier run recorded so; nil when it named none.
        var confirmed: String? = nil
    }

    /// What the upload ended with.
    struct Outcome: Sendable {
        var stored: ServerReceipt
        var parts: Int
        /// Bytes found on the store from an earlier run and not sent again.
        var resumedBytes: Int64
        /// Body bytes sent by this run (parts, retries included).
        var bytesSent: Int64
        /// Requests that failed and were sent again.
        var retries: Int
        /// The object's composite checksum as `ALGORITHM:BASE64-N` (`crc32c:...`), when parts carried one.
        var checksum: String?
        /// Why the store's checksum of the object was not taken as proof, when it could not be explained and
        /// the object was kept (``ObjectChecksumCheck``).
        var checksumWarning: String? = nil
    }

    let requester: ObjectRequester
    let store: ObjectStoreEndpoint
    let key: String
    let payload: any ByteSource
    let contentType: String
    /// Headers of the object (`x-amz-meta-*`), given with its creation.
    var metadata: [HeaderField] = []
    /// Whether parts still send their checksums as trailers (``MultipartSettings/ChecksumDelivery``).
    let trailers = TrailerChoice(true)
    /// Where the upload id and the confirmed parts are made durable, and what an earlier run left there.
    var journal: MultipartJournal? = nil
    var settings: MultipartSettings { store.multipart }
    /// The per-part checksum: the settings', or that of the earlier upload this run continues.
    var algorithm: MultipartSettings.ChecksumAlgorithm { continuedAlgorithm ?? settings.checksumAlgorithm }
    /// The algorithm of an earlier upload made with another than the settings' (``run(progress:)``).
    var continuedAlgorithm: MultipartSettings.ChecksumAlgorithm? = nil

    /// Runs the upload.
    ///
    /// - Parameter progress: bytes of the payload the store holds or is being sent, and the attempt.
    /// - Throws: ``AttacheCore/AttacheError``: a refusal (`.rejected`, with the store's code), a composite `ETag` that does
    ///   not match the parts (`.badResponse`), transport failures once retries are spent. The store's upload
    ///   is aborted first when ``MultipartSettings/onGiveUp`` says so (not when the task is cancelled).
    func run(progress: (@Sendable (_ bytes: Int64) -> Void)?) async throws -> Outcome {
        let plan = PartPlan(total: payload.byteCount, preferred: settings.partSize)
        let counter = SentCounter()
        let found = try await existingUpload(plan: plan)
        var (uploadId, held, checksums) = (found.uploadId, found.parts, found.checksums)
        if uploadId != nil, checksums, let earlier = found.algorithm, earlier != algorithm {
            // The parts the store holds carry the earlier algorithm's checksums, and the completion names one
            // algorithm for all: the upload goes on with it rather than send those parts again.
            requester.logger.warning(
                "continuing an upload begun with \(earlier.displayName) part checksums; this run asked for \(algorithm.displayName)",
                metadata: ["key": "\(key)"])
            var continued = self
            continued.continuedAlgorithm = earlier
            return try await continued.run(progress: progress)
        }
        let resumedBytes = held.values.reduce(0) { $0 + $1.size }
        if uploadId == nil {
            // A run killed after its completion left no upload but the object: same key, same size, so the
            // same sealed bytes (key and bytes both come from the journalled idempotency key and material).
            if let done = try await completedObject(plan: plan) {
                await journal?.forget()
                progress?(payload.byteCount)
                return done
            }
            (uploadId, checksums) = try await create()
            held = [:]
        }
        guard let uploadId else { throw internalFailure("no upload id") }
        await journal?.begin(key: key, uploadId: uploadId, checksums: checksums, algorithm: algorithm, parts: Array(held.values))
        do {
            counter.add(resumedBytes)
            progress?(resumedBytes)
            let sent = try await sendParts(
                plan: plan, uploadId: uploadId, held: held, checksums: checksums, counter: counter, progress: progress)
            let parts = (held.merging(sent) { $1 }).values.sorted { $0.number < $1.number }
            let (stored, warning) = try await complete(uploadId: uploadId, parts: parts, plan: plan)
            await journal?.forget()
            return Outcome(
                stored: stored, parts: parts.count, resumedBytes: resumedBytes, bytesSent: counter.sent - resumedBytes,
                retries: counter.retries,
                checksum: checksums ? PartChecksummer.composite(parts.map(\.checksum), algorithm).map { algorithm.rawValue + ":" + $0 } : nil,
                checksumWarning: warning)
        } catch {
            if settings.onGiveUp == .abort, !Task.isCancelled, !(error is CancellationError) {
                _ = try? await requester.send(
                    ObjectRequest(method: "DELETE", target: .signed(try store.address(forKey: key, query: [("uploadId", uploadId)]))))
                await journal?.forget()
            }
            throw error
        }
    }

    // MARK: Steps

    /// The upload to continue: the journalled one while the store still has it, else the newest the store
    /// has under the key; its parts that fit `plan`, and whether it takes checksums. Nil when there is none.
    private func existingUpload(plan: PartPlan) async throws -> Found {
        if let journalled = journal?.journalled, journalled.key == key,
            var found = try await parts(ofUpload: journalled.uploadId, plan: plan)
        {
            found.checksums = (found.checksums || journalled.checksums) && settings.checksum == .whenSupported
            if let named = journalled.checksumAlgorithm {
                found.algorithm = MultipartSettings.ChecksumAlgorithm.allCases.first { $0.s3Name == named } ?? found.algorithm
            }
            // Summed again below with the run's algorithm only when it is the upload's.
            guard found.algorithm == nil || found.algorithm == algorithm || !found.checksums else { return found }
            found.parts = try await withChecksums(found.parts, journalled: journalled, checksums: found.checksums, plan: plan)
            return found
        }
        let listed = try await stored(
            ObjectRequest(method: "GET", target: .signed(try store.address(forKey: "", query: [("uploads", ""), ("prefix", key)]))),
            "the store refused to list its multipart uploads")
        let uploads = Self.elements(listed.data["Upload"]).filter { $0["Key"]?.stringValue == key }
        guard let upload = uploads.max(by: { ($0["Initiated"]?.stringValue ?? "") < ($1["Initiated"]?.stringValue ?? "") }),
            let uploadId = upload["UploadId"]?.stringValue
        else { return .none }
        return try await parts(ofUpload: uploadId, plan: plan) ?? .none
    }

    /// `ListParts` of `uploadId`: the parts that fit `plan`, whether the upload takes checksums and the
    /// algorithm the store names; nil when the store no longer has the upload (completed or aborted: 404
    /// `NoSuchUpload`).
    private func parts(ofUpload uploadId: String, plan: PartPlan) async throws -> Found? {
        var parts: [Int: Part] = [:]
        var marker: String?
        var checksums = false
        var listed: MultipartSettings.ChecksumAlgorithm?
        repeat {
            var query = [("uploadId", uploadId)]
            if let marker { query.append(("part-number-marker", marker)) }
            let answer = try await requester.send(
                ObjectRequest(method: "GET", target: .signed(try store.address(forKey: key, query: query))))
            if case .rejected(let rejection) = answer.outcome, rejection.status == 404 { return nil }
            let page = try Self.storedOrThrow(answer, "the store refused to list the parts of an earlier upload")
            if page.data["ChecksumAlgorithm"]?.stringValue?.uppercased() == algorithm.s3Name { checksums = true }
            if let named = page.data["ChecksumAlgorithm"]?.stringValue?.uppercased() {
                listed = MultipartSettings.ChecksumAlgorithm.allCases.first { $0.s3Name == named }
            }
            for element in Self.elements(page.data["Part"]) {
                guard let number = element["PartNumber"]?.stringValue.flatMap({ Int($0) }),
                    let etag = element["ETag"]?.stringValue, let size = element["Size"]?.stringValue.flatMap({ Int64($0) })
                else { continue }
                let checksum = element[algorithm.element]?.stringValue
                if checksum != nil { checksums = true }
                // A part of another plan (another part size) is sent again.
                guard number >= 1, number <= plan.count, plan.range(ofPart: number).length == size else { continue }
                // A listed checksum is the store's own word, not an answer to one sent: not a confirmation.
                parts[number] = Part(number: number, etag: ObjectReceipt.unquoted(etag) ?? etag, size: size, checksum: checksum)
            }
            marker = page.data["IsTruncated"]?.stringValue == "true" ? page.data["NextPartNumberMarker"]?.stringValue : nil
        } while marker != nil
        // An upload made with another algorithm takes checksums too: of its own (``run(progress:)``).
        if listed != nil { checksums = true }
        if settings.checksum != .whenSupported { checksums = false }
        return Found(uploadId: uploadId, parts: parts, checksums: checksums, algorithm: listed)
    }

    /// An earlier upload to continue.
    private struct Found {
        var uploadId: String?
        var parts: [Int: Part]
        /// Whether it takes checksums (and this run sends them).
        var checksums: Bool
        /// The algorithm of its checksums, as its record or the store names it; nil when neither does.
        var algorithm: MultipartSettings.ChecksumAlgorithm?

        static let none = Found(uploadId: nil, parts: [:], checksums: false, algorithm: nil)
    }

    /// The object under the key when it exists with the payload's size (`HEAD`); nil when it does not.
    ///
    /// An object whose `ETag` is the composite of as many parts as `plan` has must be the composite of this
    /// payload's parts (their MD5s, each part read again): an earlier run whose check found other bytes
    /// left its object in place (``checkObjectChecksum(_:parts:)``), and that object is not taken for done.
    ///
    /// - Throws: ``AttacheCore/AttacheError`` `.badResponse` for an object of this size whose `ETag` shows
    ///   other bytes.
    private func completedObject(plan: PartPlan) async throws -> Outcome? {
        let answer = try await requester.send(ObjectRequest(method: "HEAD", target: .signed(try store.address(forKey: key))))
        guard case .stored(let receipt) = answer.outcome,
            let length = answer.headers.first(where: { $0.name.equalsIgnoringASCIICase("content-length") }).flatMap({ Int64($0.value) }),
            length == payload.byteCount
        else { return nil }
        if settings.checksum != .off, let etag = ObjectReceipt.unquoted(receipt.data["ETag"]?.stringValue)?.lowercased(),
            etag.hasSuffix("-\(plan.count)"), ObjectChecksumCheck.isMD5(String(etag.dropLast("-\(plan.count)".count))),
            !(Self.header("x-amz-server-side-encryption", in: answer)?.lowercased().hasPrefix("aws:kms") ?? false),
            Self.header("x-amz-server-side-encryption-customer-algorithm", in: answer) == nil
        {
            let digests = try await partDigests(Array(1...plan.count))
            let parts = (1...plan.count).map { Part(number: $0, etag: digests[$0] ?? "", size: plan.range(ofPart: $0).length) }
            let expected = try Self.compositeETag(parts)
            guard expected == nil || expected == etag else {
                throw AttacheError(
                    .badResponse, stage: .interpret,
                    "s3://\(store.location.bucket)/\(key) already holds an object of this size whose ETag (\(etag)) is not the one "
                        + "of these bytes (\(expected ?? "")): left by a run whose check found other bytes, by another writer, "
                        + "or sent with another part size; remove it to send again under this key")
            }
        }
        return Outcome(
            stored: receipt, parts: plan.count, resumedBytes: payload.byteCount, bytesSent: 0, retries: 0, checksum: nil)
    }

    /// `CreateMultipartUpload`; whether the store takes checksums of ``algorithm``, as its answer says.
    private func create() async throws -> (String, Bool) {
        var headers = [HeaderField(name: "Content-Type", value: contentType)] + metadata
        let ask = settings.checksum == .whenSupported
        if ask { headers.append(HeaderField(name: "x-amz-checksum-algorithm", value: algorithm.s3Name)) }
        let created = try await stored(
            ObjectRequest(method: "POST", target: .signed(try store.address(forKey: key, query: [("uploads", "")])), headers: headers),
            "the store refused to start a multipart upload")
        guard let uploadId = created.data["UploadId"]?.stringValue, !uploadId.isEmpty else {
            throw AttacheError(.badResponse, stage: .interpret, "the store started a multipart upload but named no UploadId")
        }
        return (uploadId, ask && created.data["ChecksumAlgorithm"]?.stringValue?.uppercased() == algorithm.s3Name)
    }

    /// Sends every part `held` lacks, `partsInFlight` at once.
    private func sendParts(
        plan: PartPlan, uploadId: String, held: [Int: Part], checksums: Bool, counter: SentCounter,
        progress: (@Sendable (Int64) -> Void)?
    ) async throws -> [Int: Part] {
        let missing = (1...plan.count).filter { held[$0] == nil }
        var sent: [Int: Part] = [:]
        try await withThrowingTaskGroup(of: Part.self) { group in
            var next = 0
            func start() {
                let number = missing[next]
                next += 1
                group.addTask { try await sendPart(number, plan: plan, uploadId: uploadId, checksums: checksums, counter: counter, progress: progress) }
            }
            while next < missing.count, next < max(1, settings.partsInFlight) { start() }
            while let part = try await group.next() {
                sent[part.number] = part
                if next < missing.count { start() }
                await journal?.finished(part)
            }
        }
        return sent
    }

    /// Sends part `number`: its checksum in a trailer summed while it streams (``AWSChunkedSource``), or
    /// in a header summed just before it goes (``MultipartSettings/ChecksumDelivery``; always when the
    /// client's adapters sign the requests), or none.
    private func sendPart(
        _ number: Int, plan: PartPlan, uploadId: String, checksums: Bool, counter: SentCounter,
        progress: (@Sendable (Int64) -> Void)?
    ) async throws -> Part {
        let (offset, length) = plan.range(ofPart: number)
        let part = ByteSourceSlice(payload, offset: offset, count: length)
        let target = ObjectRequest.Target.signed(
            try store.address(forKey: key, query: [("partNumber", String(number)), ("uploadId", uploadId)]))
        // A part signed by the client's adapters carries its checksum in a header they can sign: a presigned
        // URL signs no payload, and S3 refuses an x-amz-* header a signature leaves out.
        var viaTrailer = checksums && settings.checksumDelivery != .header && trailers.current && requester.signer != nil
        while true {
            var request = ObjectRequest(method: "PUT", target: target, body: part, payloadHash: SigV4Signer.unsignedPayload)
            var streamed: AWSChunkedSource?
            var checksum: String?
            if viaTrailer {
                let chunked = AWSChunkedSource(part, algorithm: algorithm)
                request.headers = chunked.headers
                request.body = chunked
                request.payloadHash = AWSChunkedSource.payloadHash
                streamed = chunked
            } else if checksums {
                // Summed just before the part goes: one more read (and seal) of the part, never of the whole file.
                let algorithm = algorithm
                checksum = try await BlockingPool.shared.run { try PartChecksummer.base64(of: part, algorithm) }
                request.headers = [
                    HeaderField(name: algorithm.headerName, value: checksum!),
                    HeaderField(name: "x-amz-sdk-checksum-algorithm", value: algorithm.s3Name),
                ]
            }
            let answer = try await requester.send(request) { bytes, attempt in
                // Part bytes, not the few of an aws-chunked body's framing: progress stays within the payload.
                counter.report(part: number, bytes: min(bytes, length), attempt: attempt)
                progress?(counter.sent)
            }
            counter.retries(answer.attempts - 1)
            switch answer.outcome {
            case .rejected(let rejection):
                if viaTrailer, settings.checksumDelivery == .auto, Self.refusesTrailers(rejection) {
                    // This store does not take aws-chunked bodies: this part and the ones after it go with the
                    // checksum in a header.
                    trailers.refuse()
                    viaTrailer = false
                    continue
                }
                throw AttacheError(refusal: rejection, "the store refused part \(number) of \(plan.count)", file: nil)
            case .stored(let receipt):
                guard let etag = ObjectReceipt.unquoted(receipt.data["ETag"]?.stringValue) else {
                    throw AttacheError(.badResponse, stage: .interpret, "the store took part \(number) but sent no ETag")
                }
                if let streamed { checksum = streamed.checksum.checksum }
                if let checksum, let confirmed = receipt.data[algorithm.element]?.stringValue, confirmed != checksum {
                    throw AttacheError(
                        .badResponse, stage: .interpret,
                        "the store confirmed part \(number) with another \(algorithm.displayName) (\(confirmed)) than the one "
                            + "summed over the bytes sent (\(checksum))")
                }
                return Part(
                    number: number, etag: etag, size: length, checksum: checksum,
                    confirmed: checksum == nil ? nil : receipt.data[algorithm.element]?.stringValue)
            }
        }
    }

    /// Whether `rejection` of a part sent as `aws-chunked` says the store does not take that form (rather than
    /// that the checksum or the signature is wrong): then the part goes again with a header.
    static func refusesTrailers(_ rejection: Rejection) -> Bool {
        let mismatches: Set<String> = [
            "BadDigest", "InvalidDigest", "XAmzContentChecksumMismatch", "XAmzContentSHA256Mismatch", "SignatureDoesNotMatch",
            "InvalidAccessKeyId", "AccessDenied", "NoSuchUpload", "NoSuchBucket", "EntityTooLarge",
        ]
        if let code = rejection.businessCode, mismatches.contains(code) { return false }
        return [400, 411, 415, 501].contains(rejection.status)
    }

    // MARK: Helpers

    private func stored(_ request: ObjectRequest, _ refused: String) async throws -> ServerReceipt {
        try Self.storedOrThrow(try await requester.send(request), refused)
    }

    static func storedOrThrow(_ answer: ObjectRequester.Answer, _ refused: String) throws -> ServerReceipt {
        switch answer.outcome {
        case .stored(let receipt): return receipt
        case .rejected(let rejection): throw AttacheError(refusal: rejection, refused, file: nil)
        }
    }

    private func internalFailure(_ what: String) -> AttacheError {
        AttacheError(.internalError, stage: .upload, "multipart upload: \(what)")
    }

    /// An element that may appear once (an object) or several times (an array).
    static func elements(_ value: JSONValue?) -> [JSONValue] {
        switch value {
        case .array(let items)?: return items
        case .object?: return [value!]
        default: return []
        }
    }
}

/// Bytes sent across parts in flight: each part's current attempt counted once.
final class SentCounter: Sendable {
    private struct State {
        var base: Int64 = 0
        var perPart: [Int: Int64] = [:]
        var retries = 0
    }
    private let state = LockedValue(State())

    func add(_ bytes: Int64) { state.withLock { $0.base += bytes } }

    func report(part: Int, bytes: Int64, attempt: Int) {
        state.withLock { state in
            let previous = state.perPart[part] ?? 0
            // A new attempt starts from 0: what the failed one sent still went over the wire.
            if bytes < previous { state.base += previous }
            state.perPart[part] = bytes
        }
    }

    func retries(_ count: Int) { state.withLock { $0.retries += count } }

    var retries: Int { state.withLock { $0.retries } }

    /// Everything sent so far, failed attempts included.
    var sent: Int64 { state.withLock { state in state.base + state.perPart.values.reduce(0, +) } }
}
