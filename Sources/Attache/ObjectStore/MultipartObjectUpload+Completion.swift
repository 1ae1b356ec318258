internal import AttacheCore
import FoundationEssentials

extension MultipartObjectUpload {
    /// The longest a `CompleteMultipartUpload` may go without a byte moving, when the connection's stall
    /// timeout is shorter. A store assembles the whole object before it answers, which S3 says may take
    /// minutes for a large one. S3 keeps the connection alive with whitespace while it works; moto and
    /// MiniStack stay silent. With the ordinary stall timeout, a completion cut while the store still
    /// assembles would be sent again beside the first. moto then fails the second one, and each one sent
    /// until the first has stored the object, with 500 (see ``complete(uploadId:parts:plan:)``).
    static let completionStall: Duration = .seconds(300)

    /// `CompleteMultipartUpload` (with `If-None-Match: *` unless the store does not take it), then the
    /// composite ETag and the object's checksum checked against the parts (neither with checksums
    /// ``MultipartSettings/ChecksumMode/off``); the store's receipt, and the note of a checksum that could not be
    /// explained (``checkObjectChecksum(_:parts:)``).
    ///
    /// A completion can be done by the store while its answer is lost: the connection cut or stalled, or
    /// a retry answered for an upload that is no longer there. So when the completion fails (retries spent,
    /// `404 NoSuchUpload`, or `412` because the key now exists), the object under the key is read with
    /// `HEAD`. When it has the payload's size and the composite ETag of exactly these parts, it is this
    /// upload's object and the completion succeeded. moto needs this: when a second completion of an
    /// upload arrives while the first still runs, moto answers 500 until the first has stored the object.
    /// The first removes the upload, which closes the parts the second is reading ("seek of closed file");
    /// after that, the upload id is missing, and moto fails on it instead of answering `NoSuchUpload`.
    func complete(uploadId: String, parts: [Part], plan: PartPlan) async throws -> (ServerReceipt, String?) {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in parts {
            xml += "<Part><PartNumber>\(part.number)</PartNumber><ETag>\"\(part.etag)\"</ETag>"
            if let checksum = part.checksum { xml += "<\(algorithm.element)>\(checksum)</\(algorithm.element)>" }
            xml += "</Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let body = Array(xml.utf8)
        let hash = hex(try SHA256Digest.hash(body))
        let target = ObjectRequest.Target.signed(try store.address(forKey: key, query: [("uploadId", uploadId)]))
        var completer = requester
        completer.connection.stallTimeout = max(completer.connection.stallTimeout, Self.completionStall)
        var conditional = settings.conditionalComplete
        while true {
            var headers = [HeaderField(name: "Content-Type", value: "application/xml")]
            if conditional { headers.append(HeaderField(name: "If-None-Match", value: "*")) }
            let answer: ObjectRequester.Answer
            do {
                answer = try await completer.send(
                    ObjectRequest(method: "POST", target: target, headers: headers, body: DataSource(body), payloadHash: hash))
            } catch let error as AttacheError where error.code != .cancelled {
                if let stored = try await completedObject(parts: parts) { return stored }
                throw error
            }
            if case .rejected(let rejection) = answer.outcome {
                if conditional, rejection.status == 501 {
                    conditional = false
                    continue
                }
                if [404, 412].contains(rejection.status), let stored = try await completedObject(parts: parts) { return stored }
            }
            let stored = try Self.storedOrThrow(answer, "the store refused to complete the multipart upload")
            if settings.checksum != .off { try checkComposite(stored, parts: parts) }
            return (stored, try await checkObjectChecksum(stored, parts: parts))
        }
    }

    /// The object under the key (`HEAD`) when it is this upload's: the payload's size and the composite
    /// ETag of `parts`. Nil otherwise, also when the `HEAD` fails: then the completion's own failure stands.
    /// With it, the note of its checksum check.
    private func completedObject(parts: [Part]) async throws -> (ServerReceipt, String?)? {
        guard let expected = try Self.compositeETag(parts),
            let answer = try? await requester.send(ObjectRequest(method: "HEAD", target: .signed(try store.address(forKey: key)))),
            case .stored(let head) = answer.outcome,
            ObjectReceipt.unquoted(head.data["ETag"]?.stringValue)?.lowercased() == expected,
            answer.headers.first(where: { $0.name.equalsIgnoringASCIICase("content-length") }).flatMap({ Int64($0.value) })
                == payload.byteCount
        else { return nil }
        return (head, try await checkObjectChecksum(head, parts: parts))
    }

    /// The ETag S3 gives an object completed from `parts`: the MD5 of the parts' MD5s, then `-N`; nil when
    /// a part's ETag is not an MD5.
    static func compositeETag(_ parts: [Part]) throws -> String? {
        var digests: [UInt8] = []
        for part in parts {
            guard let bytes = unhex(part.etag), bytes.count == 16 else { return nil }
            digests += bytes
        }
        return hex(try MD5Digest.hash(digests)) + "-\(parts.count)"
    }

    /// The complete's `ETag`, when it has the `HEX-N` form, must be the MD5 of the parts' MD5s.
    private func checkComposite(_ stored: ServerReceipt, parts: [Part]) throws {
        guard let etag = ObjectReceipt.unquoted(stored.data["ETag"]?.stringValue), etag.contains("-"),
            let expected = try Self.compositeETag(parts)
        else { return }
        guard etag.lowercased() == expected else {
            throw AttacheError(
                .badResponse, stage: .interpret,
                "the completed object's ETag \(etag) is not the one of the \(parts.count) parts sent (\(expected))")
        }
    }
}
