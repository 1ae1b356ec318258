internal import AttacheCore
import FoundationEssentials

extension MultipartObjectUpload {
    /// The parts the store holds, each with its checksum when the upload takes checksums: a store whose
    /// `ListParts` leaves them out (moto's does) gets the one journalled with the same ETag and size, and a
    /// part the store took before its record was written gets the checksum of its bytes re-sealed (identical
    /// to those sent), so that the completion names every part's checksum and the object gets its composite.
    /// A part keeps the store's confirmation of its checksum when its record has one for the same ETag, size
    /// and checksum.
    func withChecksums(
        _ held: [Int: Part], journalled: MultipartRecord, checksums: Bool, plan: PartPlan
    ) async throws -> [Int: Part] {
        guard checksums else { return held }
        let recorded = Dictionary(journalled.parts.map { ($0.number, $0) }) { first, _ in first }
        var parts = held
        for (number, part) in held {
            guard let record = recorded[number], record.etag == part.etag, record.size == part.size else { continue }
            if part.checksum == nil { parts[number]?.checksum = record.checksum }
            if let checksum = parts[number]?.checksum, checksum == record.checksum { parts[number]?.confirmed = record.confirmed }
        }
        for (number, part) in parts where part.checksum == nil {
            let (offset, length) = plan.range(ofPart: number)
            let body = ByteSourceSlice(payload, offset: offset, count: length)
            let algorithm = algorithm
            parts[number]?.checksum = try await BlockingPool.shared.run { try PartChecksummer.base64(of: body, algorithm) }
        }
        return parts
    }
}
