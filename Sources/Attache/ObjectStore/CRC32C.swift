internal import CFingerprint

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum S3 calls `CRC32C`: with the CPU's
/// own instruction where it has one (SSE 4.2), else slicing by eight tables.
struct CRC32C: Sendable {
    /// Whether this CPU sums in hardware.
    static let hardware = attache_crc32c_hardware_available() == 1

    private static let tables: [[UInt32]] = {
        var tables = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for index in 0..<256 {
            var crc = UInt32(index)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[0][index] = crc
        }
        for index in 0..<256 {
            for table in 1..<8 {
                let previous = tables[table - 1][index]
                tables[table][index] = (previous >> 8) ^ tables[0][Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    private var state: UInt32 = 0xFFFF_FFFF

    /// A fresh checksum.
    init() {}

    /// Adds `bytes`.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        if Self.hardware {
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
            state = attache_crc32c_hardware_update(state, base.assumingMemoryBound(to: UInt8.self), bytes.count)
            return
        }
        updateWithTables(bytes)
    }

    /// The portable method.
    mutating func updateWithTables(_ bytes: UnsafeRawBufferPointer) {
        var crc = state
        let tables = Self.tables
        tables.withUnsafeBufferPointer { all in
            let t0 = all[0], t1 = all[1], t2 = all[2], t3 = all[3], t4 = all[4], t5 = all[5], t6 = all[6], t7 = all[7]
            var index = 0
            let count = bytes.count
            while count - index >= 8 {
                let low = bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self).littleEndian ^ crc
                let high = bytes.loadUnaligned(fromByteOffset: index + 4, as: UInt32.self).littleEndian
                crc = t7[Int(low & 0xFF)] ^ t6[Int((low >> 8) & 0xFF)] ^ t5[Int((low >> 16) & 0xFF)] ^ t4[Int(low >> 24)]
                    ^ t3[Int(high & 0xFF)] ^ t2[Int((high >> 8) & 0xFF)] ^ t1[Int((high >> 16) & 0xFF)] ^ t0[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = (crc >> 8) ^ t0[Int((crc ^ UInt32(bytes[index])) & 0xFF)]
                index += 1
            }
        }
        state = crc
    }

    /// The checksum of everything added.
    var value: UInt32 { state ^ 0xFFFF_FFFF }

    /// The checksum as S3 writes it: the four bytes big-endian, in base64.
    var base64: String { Self.base64(value) }

    /// `value` as S3 writes it.
    static func base64(_ value: UInt32) -> String {
        Base64.encode([UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)])
    }

    /// CRC-32C of `bytes`.
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc = CRC32C()
        bytes.withUnsafeBytes { crc.update($0) }
        return crc.value
    }

    // MARK: Combining

    /// The CRC-32C of two byte runs one after the other, from the CRC-32C of each and the second's length,
    /// without the bytes: how the checksum of a whole object follows from its parts' (S3's `FULL_OBJECT`
    /// checksum of a multipart upload).
    ///
    /// Appending n zero bits to a message multiplies its remainder by xⁿ modulo the polynomial, and the
    /// initial and final inversions cancel out between the two runs, so
    /// crc(A‖B) = crc(A)·x^(8·|B|) mod P ⊕ crc(B). The power is built from x^(2^k) by squaring, so the cost
    /// grows with the number of bits of the length, not with the length.
    static func combine(_ first: UInt32, _ second: UInt32, secondLength: Int64) -> UInt32 {
        guard secondLength > 0 else { return first }
        return multiply(power(ofTwoTo: 3, times: UInt64(secondLength)), first) ^ second
    }

    /// x^(2^k) modulo the polynomial, for k = 0...63, in the reflected bit order CRC-32C keeps its state in
    /// (the top bit is x⁰).
    private static let powersOfTwo: [UInt32] = {
        var powers = [UInt32(1) << 30]
        for _ in 1..<64 { powers.append(multiply(powers[powers.count - 1], powers[powers.count - 1])) }
        return powers
    }()

    /// x^(count · 2^k) modulo the polynomial: a run of count·2^k zero bits.
    private static func power(ofTwoTo k: Int, times count: UInt64) -> UInt32 {
        var result: UInt32 = 1 << 31
        var count = count
        var k = k
        while count != 0 {
            if count & 1 != 0 { result = multiply(powersOfTwo[k & 63], result) }
            count >>= 1
            k += 1
        }
        return result
    }

    /// a·b modulo the polynomial, both in the reflected bit order.
    private static func multiply(_ a: UInt32, _ b: UInt32) -> UInt32 {
        var product: UInt32 = 0
        var b = b
        var mask: UInt32 = 1 << 31
        while mask != 0 {
            if a & mask != 0 { product ^= b }
            b = b & 1 != 0 ? (b >> 1) ^ 0x82F6_3B78 : b >> 1
            mask >>= 1
        }
        return product
    }
}
