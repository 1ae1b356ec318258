internal import AttacheCore
import FoundationEssentials

extension MultipartObjectUpload {
    /// The store's checksum of the completed object (from the completion's answer, else a `HEAD` with
    /// `x-amz-checksum-mode: ENABLED`) must be the composite of the parts' checksums summed here: a store that
    /// keeps a part's checksum without checking it (moto) still sums the bytes it stored, so a part changed
    /// on its way fails here. Nothing to compare when a part has no checksum or the store names none.
    ///
    /// - Throws: ``AttacheCore/AttacheError`` `.badResponse` when the two differ (the object removed first).
    func checkObjectChecksum(_ stored: ServerReceipt, parts: [Part]) async throws {
        guard let expected = PartChecksummer.composite(parts.map(\.checksum), algorithm) else { return }
        var reported = stored.data[algorithm.element]?.stringValue
        if reported == nil {
            let answer = try await requester.send(
                ObjectRequest(
                    method: "HEAD", target: .signed(try store.address(forKey: key)),
                    headers: [HeaderField(name: "x-amz-checksum-mode", value: "ENABLED")]))
            guard case .stored(let head) = answer.outcome else { return }
            reported = head.data[algorithm.element]?.stringValue
        }
        guard let reported, !reported.isEmpty else { return }
        // The composite is written `BASE64-N`; a store may leave out the `-N`.
        func digest(_ value: String) -> Substring { value.split(separator: "-", maxSplits: 1).first ?? Substring(value) }
        guard digest(reported) == digest(expected) else {
            // The object holds other bytes than the ones sent: removed, so that a rerun under the same key sends
            // it again rather than taking it for done.
            let removed = try? await requester.send(ObjectRequest(method: "DELETE", target: .signed(try store.address(forKey: key))))
            var gone = false
            if case .stored? = removed?.outcome { gone = true }
            throw AttacheError(
                .badResponse, stage: .interpret,
                "the store's \(algorithm.displayName) of the object (\(reported)) is not the one of the \(parts.count) parts "
                    + "summed here (\(expected)): a part changed on its way; the object was "
                    + (gone ? "removed" : "left in place (removing it failed)"))
        }
    }
}
