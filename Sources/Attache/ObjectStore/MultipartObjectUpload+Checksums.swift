internal import AttacheCore
import FoundationEssentials

extension MultipartObjectUpload {
    /// Checks the store's checksum of the completed object (from the completion's answer, else a `HEAD`
    /// with `x-amz-checksum-mode: ENABLED`) against the parts sent, and never removes the object
    /// (``ObjectChecksumCheck``): the composite of the parts' checksums or the whole object's CRC-32C
    /// proves it; when neither explains the store's value, the parts' own evidence decides: the store's
    /// answer to each part's checksum, and (summed only then) the MD5 of each part's bytes against the part's
    /// `ETag`. Nothing to check when the parts carried no checksum, the store names none, or checksums are
    /// ``MultipartSettings/ChecksumMode/off``.
    ///
    /// - Returns: the receipt's note when the store's checksum could not be explained and nothing shows
    ///   that the bytes differ (the object is kept); nil when it was explained or not checked.
    /// - Throws: ``AttacheCore/AttacheError`` `.badResponse` when the store holds other bytes than the ones
    ///   sent (a part answered with another checksum, a part's `ETag` that is not the MD5 of the bytes sent,
    ///   an object of another size); the object is left in place, and the error names it.
    func checkObjectChecksum(_ stored: ServerReceipt, parts: [Part]) async throws -> String? {
        guard settings.checksum != .off, PartChecksummer.composite(parts.map(\.checksum), algorithm) != nil else { return nil }
        var reported = stored.data[algorithm.element]?.stringValue
        var type = stored.data["ChecksumType"]?.stringValue
        var head: ObjectRequester.Answer?
        if reported == nil {
            let answer = try await headWithChecksum()
            head = answer
            guard case .stored(let receipt) = answer.outcome else { return nil }
            reported = receipt.data[algorithm.element]?.stringValue
            type = Self.header("x-amz-checksum-type", in: answer) ?? type
        }
        guard let reported, !reported.isEmpty else { return nil }
        var check = ObjectChecksumCheck(
            algorithm: algorithm, reported: reported, type: type,
            parts: parts.map {
                ObjectChecksumCheck.Part(
                    number: $0.number, size: $0.size, sent: $0.checksum, confirmed: $0.confirmed, etag: $0.etag, digest: nil)
            },
            expectedSize: payload.byteCount)
        if check.explanation != nil { return nil }

        // A doubt: the store's arithmetic or the bytes. The object's headers give its size and say whether
        // its ETags can be MD5s (not under SSE-KMS or SSE-C); where they can, each part's bytes are read
        // again and summed, once.
        if head == nil { head = try? await headWithChecksum() }
        if let head, case .stored = head.outcome {
            check.storedSize = Self.header("content-length", in: head).flatMap { Int64($0) }
            let encryption = Self.header("x-amz-server-side-encryption", in: head)?.lowercased() ?? ""
            let customerKey = Self.header("x-amz-server-side-encryption-customer-algorithm", in: head) != nil
            if !encryption.hasPrefix("aws:kms"), !customerKey, parts.allSatisfy({ ObjectChecksumCheck.isMD5($0.etag) }) {
                let digests = try await partDigests(parts.map(\.number))
                for index in check.parts.indices { check.parts[index].digest = digests[check.parts[index].number] }
            }
        }
        let verdict = check.verdict
        if case .differs(let reason) = verdict {
            throw AttacheError(
                .badResponse, stage: .interpret,
                "the store holds other bytes than the ones sent: \(reason); a part changed on its way. The object "
                    + "s3://\(store.location.bucket)/\(key) was left in place, not removed: inspect it, and remove it "
                    + "before sending again under this key")
        }
        return check.note(verdict)
    }

    /// The MD5 of each of the parts `numbers` of the payload, in hex, by number: each part read (and sealed)
    /// again, as for a retry.
    /// - Throws: what reading the payload throws; ``AttacheCore/AttacheError`` from OpenSSL.
    func partDigests(_ numbers: [Int]) async throws -> [Int: String] {
        let plan = PartPlan(total: payload.byteCount, preferred: settings.partSize)
        let payload = payload
        return try await BlockingPool.shared.run {
            var digests: [Int: String] = [:]
            for number in numbers where number >= 1 && number <= plan.count {
                let (offset, length) = plan.range(ofPart: number)
                digests[number] = try MD5Digest.hexDigest(of: ByteSourceSlice(payload, offset: offset, count: length))
            }
            return digests
        }
    }

    /// `HEAD` of the object with `x-amz-checksum-mode: ENABLED`.
    private func headWithChecksum() async throws -> ObjectRequester.Answer {
        try await requester.send(
            ObjectRequest(
                method: "HEAD", target: .signed(try store.address(forKey: key)),
                headers: [HeaderField(name: "x-amz-checksum-mode", value: "ENABLED")]))
    }

    /// The value of the answer's header `name`.
    static func header(_ name: String, in answer: ObjectRequester.Answer) -> String? {
        answer.headers.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }
}
