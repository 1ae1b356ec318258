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
}
