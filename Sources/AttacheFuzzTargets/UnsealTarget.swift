public import AttacheCore
import Glibc

/// `Unsealer` over sealed data from an attacker, with keys the attacker knows (so that the seeds can
/// carry valid headers, key checks and tags, and mutations reach the segment and padding code).
///
/// Input layout: one selector byte, then (when the selector's bit 0x20 is set) a big-endian 16-bit
/// `signal` plaintext length, then the sealed bytes. The selector's low 3 bits pick the scheme
/// (0 `stream-gcm`, 1 `signal`, 2 `legacy-cbc`, 3 `legacy-ecb`, 4–7 `none`), bits 3–4 the transfer
/// encoding (0 binary, 1 base64, 2–3 base64url).
///
/// Invariants checked besides "no crash":
/// - binary `stream-gcm` opened from a file (the parallel path) gives the same plaintext, or fails
///   the same way, as the in-memory reader;
/// - with no scheme, the streaming base64 decoder accepts exactly what `Base64.decode` accepts, with
///   the same bytes, and every accepted text is the one encoding of its bytes (`encode(decode(t)) == t`).
public enum UnsealTarget {
    /// The `stream-gcm` key of every seed: bytes 0, 1, …, 31.
    public static let streamGCMKey = AttachmentKey(bytes: SecureBytes((0..<32).map { UInt8($0) }))
    /// The `signal` key of every seed: 64 bytes, AES key ‖ HMAC key.
    public static let signalKey = AttachmentKey(bytes: SecureBytes((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }))
    /// The passphrase of the legacy seeds.
    public static let passphrase = AttachmentKey(passphrase: "attache fuzzing passphrase")

    /// The schemes the selector's low bits choose from.
    static let schemes: [SealScheme] = [.streamGCM, .signal, .legacyCBC, .legacyECB, .none]
    /// The encodings bits 3–4 choose from.
    static let encodings: [TransferEncoding] = [.binary, .base64, .base64URL]

    /// The selector byte for `scheme` and `encoding`, for writing seeds.
    public static func selector(scheme: SealScheme, encoding: TransferEncoding, withPlaintextCount: Bool) -> UInt8 {
        UInt8(schemes.firstIndex(of: scheme)!) | UInt8(encodings.firstIndex(of: encoding)!) << 3
            | (withPlaintextCount ? 0x20 : 0)
    }

    /// The key the target uses for `scheme`.
    public static func key(for scheme: SealScheme) -> AttachmentKey {
        switch scheme {
        case .streamGCM, .matrix, .none: streamGCMKey
        case .signal: signalKey
        case .legacyCBC, .legacyECB: passphrase
        }
    }

    /// Splits an input into the unsealer its selector describes and the sealed bytes; nil when it is too
    /// short to have a selector (and length).
    static func parse(_ bytes: [UInt8]) -> (unsealer: Unsealer, sealed: [UInt8])? {
        guard let selector = bytes.first else { return nil }
        var sealed = bytes.dropFirst()
        var plaintextCount: Int64?
        if selector & 0x20 != 0 {
            guard sealed.count >= 2 else { return nil }
            plaintextCount = Int64(sealed[sealed.startIndex]) << 8 | Int64(sealed[sealed.startIndex + 1])
            sealed = sealed.dropFirst(2)
        }
        let scheme = schemes[min(Int(selector & 0x07), schemes.count - 1)]
        let encoding = encodings[min(Int(selector >> 3 & 0x03), encodings.count - 1)]
        let unsealer = Unsealer(
            scheme: scheme, key: key(for: scheme), transferEncoding: encoding, plaintextByteCount: plaintextCount)
        return (unsealer, Array(sealed))
    }

    /// The plaintext of one input, read from memory; nil when the input is rejected.
    public static func open(_ bytes: [UInt8]) -> [UInt8]? {
        guard let (unsealer, sealed) = parse(bytes) else { return nil }
        return try? readAll(unsealer.unseal(DataSource(sealed)))
    }

    static func run(_ bytes: [UInt8]) {
        guard let (unsealer, input) = parse(bytes) else { return }
        let scheme = unsealer.scheme
        let encoding = unsealer.transferEncoding
        let opened = try? readAll(unsealer.unseal(DataSource(input)))

        if scheme == .streamGCM, encoding == .binary {
            let fromFile = openThroughFile(input, unsealer)
            invariant(fromFile == opened, "stream-gcm from a file and from memory disagree")
        }
        if scheme == .none, encoding != .binary, let text = String(validating: input, as: UTF8.self) {
            let alphabet: Base64.Alphabet = encoding == .base64 ? .standard : .url
            let decoded = try? Base64.decode(text, alphabet: alphabet)
            invariant(decoded == opened, "the streaming base64 decoder and Base64.decode disagree")
            if let decoded {
                invariant(Base64.encode(decoded, alphabet: alphabet) == text, "an accepted base64 text is not canonical")
            }
        }
    }

    /// Every byte a reader produces; nil when it throws.
    static func readAll(_ reader: any ByteReader) throws -> [UInt8] {
        try reader.readToEnd()
    }

    /// `Unsealer.unseal(fileAt:to:)` on the input written to a temporary file; nil when it throws.
    static func openThroughFile(_ input: [UInt8], _ unsealer: Unsealer) -> [UInt8]? {
        var template = Array("\(temporaryDirectory)/attache-fuzz-unseal.XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        invariant(fd >= 0, "cannot create a temporary file")
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let output = path + ".out"
        defer {
            unlink(path)
            unlink(output)
        }
        let written = input.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        invariant(written == input.count, "cannot write a temporary file")
        do {
            try unsealer.unseal(fileAt: path, to: output)
        } catch {
            return nil
        }
        guard let file = fopen(output, "rb") else { return nil }
        defer { fclose(file) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if n == 0 { return result }
            result += chunk[..<n]
        }
    }

    static let temporaryDirectory: String = {
        guard let value = getenv("TMPDIR"), value.pointee != 0 else { return "/tmp" }
        return String(cString: value)
    }()
}
