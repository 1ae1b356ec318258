import AttacheCore
import AttacheFuzzTargets
import Foundation

/// Writes the seeds that have to be made by the code itself: sealed data under the unseal target's
/// fixed keys, for every scheme and transfer encoding. Salts and IVs are fresh on every run, so the
/// files differ from run to run; what matters is that each one opens. The other corpora are files
/// made by other tools (Tests/FuzzCorpus/README.md).
enum SeedWriter {
    static func write(to directory: String) throws {
        let folder = (directory as NSString).appendingPathComponent(FuzzTarget.unseal.rawValue)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let text = Array("The quick brown fox jumps over the lazy dog.\n".utf8)
        let pattern = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 3) }
        // One byte over a segment, so the seed has a full segment and a final one.
        let twoSegments = (0..<65_537).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 8) }

        func seed(_ name: String, _ scheme: SealScheme, _ encoding: TransferEncoding, _ plaintext: [UInt8],
                  withPlaintextCount: Bool = false) throws {
            let sealer = Sealer(scheme: scheme, key: UnsealTarget.key(for: scheme), transferEncoding: encoding)
            let sealed = try readAll(try sealer.seal(DataSource(plaintext)).makeReader())
            var bytes = [UnsealTarget.selector(scheme: scheme, encoding: encoding, withPlaintextCount: withPlaintextCount)]
            if withPlaintextCount { bytes += [UInt8(plaintext.count >> 8), UInt8(truncatingIfNeeded: plaintext.count)] }
            bytes += sealed
            try Data(bytes).write(to: URL(fileURLWithPath: (folder as NSString).appendingPathComponent(name)))
        }

        try seed("gcm-empty", .streamGCM, .binary, [])
        try seed("gcm-text", .streamGCM, .binary, text)
        try seed("gcm-1000", .streamGCM, .binary, pattern)
        try seed("gcm-two-segments", .streamGCM, .binary, twoSegments)
        try seed("gcm-base64", .streamGCM, .base64, text)
        try seed("gcm-base64url", .streamGCM, .base64URL, text)
        try seed("signal-text", .signal, .binary, text)
        try seed("signal-text-count", .signal, .binary, text, withPlaintextCount: true)
        try seed("signal-1000-count", .signal, .binary, pattern, withPlaintextCount: true)
        try seed("signal-base64", .signal, .base64, text)
        try seed("legacy-cbc", .legacyCBC, .binary, text)
        try seed("legacy-cbc-base64", .legacyCBC, .base64, text)
        try seed("legacy-ecb", .legacyECB, .binary, text)
        try seed("none-base64", .none, .base64, text)
        try seed("none-base64url", .none, .base64URL, text)
        try seed("none-base64-1", .none, .base64, [0x68])
        try seed("none-base64url-2", .none, .base64URL, [0x68, 0x69])
    }

    static func readAll(_ reader: any ByteReader) throws -> [UInt8] {
        try reader.readToEnd()
    }
}
