import AttacheCore

/// The `stream-gcm` range reader that S3 parts and resumed chunks open: a range of the sealed payload, read
/// from a reader opened where it starts, must be exactly those bytes of a reader from the start.
///
/// Input layout: three big-endian 24-bit numbers (the plaintext length, taken modulo four segments and a
/// bit; the range's start and its length, both taken modulo what is left), then one flag byte (bit 0:
/// base64). The plaintext is a fixed pattern and the material a fixed key and seed, so an input always
/// means the same range of the same payload.
public enum SealedRangeTarget {
    static let key = AttachmentKey(bytes: SecureBytes((0..<32).map { UInt8($0 &* 3 &+ 1) }))
    // 32 bytes by construction; the throwing initialiser cannot fail.
    static let material = try! SealMaterial(key: key, nonceSeed: SecureBytes((0..<32).map { UInt8(255 - $0) }))

    /// The input for a range: `plaintextCount`, `start`, `length`, `base64`.
    public static func input(plaintextCount: Int, start: Int, length: Int, base64: Bool) -> [UInt8] {
        func bytes(_ value: Int) -> [UInt8] { [UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
        return bytes(plaintextCount) + bytes(start) + bytes(length) + [base64 ? 1 : 0]
    }

    static func run(_ bytes: [UInt8]) {
        guard bytes.count >= 10 else { return }
        func number(_ at: Int) -> Int { Int(bytes[at]) << 16 | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) }
        let count = number(0) % (4 * 65_536 + 2)
        let encoding: TransferEncoding = bytes[9] & 1 == 0 ? .binary : .base64
        let plaintext = (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 11) }
        do {
            let payload = try Sealer(scheme: .streamGCM, key: key, transferEncoding: encoding)
                .seal(DataSource(plaintext), material: material, part: 0)
            let total = Int(payload.byteCount)
            let start = number(3) % (total + 1)
            let length = number(6) % (total - start + 1)
            let range = try ByteSourceSlice(payload, offset: Int64(start), count: Int64(length)).makeReader().readToEnd()
            let whole = try payload.makeReader().readToEnd()
            invariant(whole.count == total, "the payload gave \(whole.count) bytes, not its \(total)")
            invariant(
                range == Array(whole[start..<(start + length)]),
                "stream-gcm bytes \(start)..<\(start + length) of \(total) (\(count) plaintext bytes, \(encoding)) "
                    + "differ from a reader from the start")
        } catch {
            invariant(false, "sealing a pattern in memory failed: \(error)")
        }
    }
}
