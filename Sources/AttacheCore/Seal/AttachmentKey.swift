internal import COpenSSL
import Glibc

/// The secret for one attachment: 32 bytes (`stream-gcm`, `matrix`), 64 bytes (`signal`: AES key ‖ HMAC key), or
/// a passphrase (`legacy-*`).
///
/// Keys come from a file, an environment variable or the CSPRNG — never from command-line arguments,
/// which other users of the machine can read. The bytes live in `SecureBytes` and are wiped when the
/// last copy of the key is released. `description` never shows them.
///
/// ```swift
/// let key = AttachmentKey.random(for: .streamGCM)
/// try key.write(toNewFile: "photo.key")
/// let again = try AttachmentKey(contentsOfFile: "photo.key")
/// let fromReceipt = try AttachmentKey(base64: textKeptWithTheMessage)
/// ```
///
/// `description` and `debugDescription` (what `print`, string interpolation, `dump` and loggers show)
/// name the size only; ``base64`` is the one way to read the key as text. In a `Codable` value (a
/// receipt) the key is its text: base64 for raw keys, the passphrase itself for `legacy-*` ones.
public struct AttachmentKey: Sendable, Hashable, Codable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The key bytes (for a passphrase: its UTF-8 bytes).
    package let bytes: SecureBytes
    /// Whether the bytes are a passphrase of the `legacy-*` schemes rather than raw key bytes.
    package let isPassphrase: Bool

    /// Wraps raw key bytes (32 or 64) or passphrase bytes.
    package init(bytes: SecureBytes, isPassphrase: Bool = false) {
        self.bytes = bytes
        self.isPassphrase = isPassphrase
    }

    /// A legacy passphrase, used as UTF-8 bytes zero-padded or cut to the cipher's key size.
    public init(passphrase: String) {
        self.init(bytes: SecureBytes(passphrase.utf8), isPassphrase: true)
    }

    /// A fresh key from OpenSSL's CSPRNG, of the size `scheme` needs.
    ///
    /// For the `legacy-*` schemes this is a 32-character passphrase of base64url characters (192
    /// random bits), because their receivers expect a printable string key.
    package static func random(for scheme: SealScheme) -> AttachmentKey {
        switch scheme {
        case .signal:
            return AttachmentKey(bytes: SecureBytes(randomCount: 64))
        case .legacyCBC, .legacyECB:
            let random = SecureBytes(randomCount: 24)
            let text = SecureBytes(zeroedCount: 32)
            random.withUnsafeBytes { source in
                _ = Base64.encode(source, into: text.mutableBytes, alphabet: .url, padded: false)
            }
            return AttachmentKey(bytes: text, isPassphrase: true)
        case .streamGCM, .matrix, .none:
            return AttachmentKey(bytes: SecureBytes(randomCount: 32))
        }
    }

    /// Reads a key file: exactly 32 or 64 raw bytes, or the base64 (or base64url) text of 32 or 64
    /// bytes, surrounding whitespace ignored.
    /// - Throws: ``AttacheError`` `.fileNotFound`, `.fileUnreadable` or `.invalidKey` (stage `.seal`).
    package init(contentsOfFile path: String) throws {
        let contents = try Self.readSmallFile(path)
        if contents.count == 32 || contents.count == 64 {
            self.init(bytes: SecureBytes(contents.contents))
            return
        }
        guard let decoded = Self.decodeText(contents) else {
            throw AttacheError(
                .invalidKey, stage: .seal,
                "the key file must hold 32 or 64 raw bytes or their base64 text", file: path)
        }
        self.init(bytes: decoded)
    }

    /// Reads a legacy passphrase file: its UTF-8 text without one trailing line break.
    /// - Throws: ``AttacheError`` `.fileNotFound`, `.fileUnreadable` or `.invalidKey`.
    package init(passphraseFile path: String) throws {
        let contents = try Self.readSmallFile(path)
        var end = contents.count
        if end > 0, contents.bytes[end - 1] == 0x0A { end -= 1 }
        if end > 0, contents.bytes[end - 1] == 0x0D { end -= 1 }
        guard end > 0 else {
            throw AttacheError(.invalidKey, stage: .seal, "the passphrase file is empty", file: path)
        }
        self.init(bytes: SecureBytes(contents.bytes[..<end]), isPassphrase: true)
    }

    /// Reads the base64 (or base64url) text of a 32- or 64-byte key from an environment variable; for
    /// a legacy passphrase use ``init(passphraseEnvironmentVariable:)``.
    /// - Throws: ``AttacheError`` `.invalidKey` when the variable is unset or not such text.
    package init(environmentVariable name: String) throws {
        guard let value = getenv(name) else {
            throw AttacheError(.invalidKey, stage: .seal, "the environment variable \(name) is not set")
        }
        let text = ScratchBytes(UnsafeRawBufferPointer(start: value, count: strlen(value)))
        guard let decoded = Self.decodeText(text) else {
            throw AttacheError(
                .invalidKey, stage: .seal,
                "the environment variable \(name) must hold the base64 text of a 32- or 64-byte key")
        }
        self.init(bytes: decoded)
    }

    /// Reads a legacy passphrase from an environment variable.
    /// - Throws: ``AttacheError`` `.invalidKey` when the variable is unset or empty.
    package init(passphraseEnvironmentVariable name: String) throws {
        guard let value = getenv(name), strlen(value) > 0 else {
            throw AttacheError(.invalidKey, stage: .seal, "the environment variable \(name) is not set or empty")
        }
        self.init(bytes: SecureBytes(UnsafeRawBufferPointer(start: value, count: strlen(value))), isPassphrase: true)
    }

    /// Writes the key to a new file with mode 0600: base64 text and a line break (a passphrase as its
    /// text). Never overwrites: an existing file may hold the only copy of another key.
    /// - Throws: ``AttacheError`` `.fileUnwritable` when the file exists or cannot be written.
    package func write(toNewFile path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            guard code != EEXIST else {
                throw AttacheError(
                    .fileUnwritable, stage: .seal, "refusing to overwrite an existing key file", file: path,
                    cause: NativeError.posix(code))
            }
            throw AttacheError.system("cannot create the key file", errno: code, .fileUnwritable, stage: .seal, file: path)
        }
        defer { close(fd) }
        let text = textForm()
        if let code = text.bytes.withUnsafeBytes({ FileDescriptor.writeAll(fd, UnsafeRawBufferPointer(rebasing: $0[..<text.count])) }) {
            unlink(path)
            throw AttacheError.system("cannot write the key file", errno: code, .fileUnwritable, stage: .seal, file: path)
        }
        guard fsync(fd) == 0 else {
            throw AttacheError(.fileUnwritable, stage: .seal, "cannot sync the key file", file: path)
        }
    }

    /// Decodes the base64 (or base64url) text of a 32- or 64-byte key, as ``base64`` writes it and as
    /// receipts carry it; surrounding whitespace is ignored.
    /// - Throws: ``AttacheError`` `.invalidKey` (stage `.seal`) for anything else. The message never
    ///   repeats the text.
    public init(base64 text: String) throws {
        let scratch = ScratchBytes(Array(text.utf8).withUnsafeBytes { $0 })
        guard let decoded = Self.decodeText(scratch) else {
            throw AttacheError(.invalidKey, stage: .seal, "the key text is not the base64 of 32 or 64 bytes")
        }
        self.init(bytes: decoded)
    }

    /// The key as base64 text (a `legacy-*` passphrase as itself): the explicit way to read the secret,
    /// for the message that carries the attachment. ``init(base64:)`` reads it back.
    public var base64: String { base64EncodedString }

    /// The key as base64 text (a passphrase as itself); the same as ``base64``.
    package var base64EncodedString: String {
        if isPassphrase { return bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
        return bytes.withUnsafeBytes { Base64.encode($0, alphabet: .standard) }
    }

    /// Never the key itself.
    public var description: String {
        isPassphrase ? "AttachmentKey(passphrase, \(bytes.count) bytes)" : "AttachmentKey(\(bytes.count) bytes)"
    }

    /// Never the key itself: the same as ``description``.
    public var debugDescription: String { description }

    /// Compares the bytes in constant time.
    public static func == (lhs: AttachmentKey, rhs: AttachmentKey) -> Bool {
        lhs.isPassphrase == rhs.isPassphrase
            && lhs.bytes.withUnsafeBytes { a in rhs.bytes.withUnsafeBytes { b in constantTimeEqual(a, b) } }
    }

    /// Hashes the size and kind only, so that a hash never depends on (and never leaks) the secret;
    /// equal keys still hash alike.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(isPassphrase)
        hasher.combine(bytes.count)
    }

    /// Reads the key's text: the base64 of 32 or 64 bytes, or otherwise a passphrase (the `legacy-*`
    /// schemes' receipts carry their passphrase as it is).
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        if let key = try? AttachmentKey(base64: text) {
            self = key
        } else {
            self.init(passphrase: text)
        }
    }

    /// Writes ``base64``: a receipt that carries the key carries it as text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(base64)
    }

    private func textForm() -> ScratchBytes {
        bytes.withUnsafeBytes { raw in
            if isPassphrase {
                let copy = ScratchBytes(count: raw.count + 1)
                copy.bytes.withUnsafeMutableBytes { out in
                    out.copyMemory(from: raw)
                    out[raw.count] = 0x0A
                }
                return copy
            }
            let text = ScratchBytes(count: Base64.encodedCount(raw.count, padded: true) + 1)
            text.bytes.withUnsafeMutableBytes { out in
                _ = Base64.encode(raw, into: out, alphabet: .standard, padded: true)
                out[out.count - 1] = 0x0A
            }
            return text
        }
    }

    private static func readSmallFile(_ path: String) throws -> ScratchBytes {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw AttacheError.system("cannot open the key file", stage: .seal, file: path, missing: "no such key file")
        }
        defer { close(fd) }
        // A key file is tiny; anything bigger is the wrong file, and is not read into memory.
        let limit = 4096
        let contents = ScratchBytes(count: limit + 1)
        var filled = 0
        while filled <= limit {
            let n = contents.bytes.withUnsafeMutableBytes {
                FileDescriptor.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...limit]))
            }
            if n < 0 {
                throw AttacheError.system("cannot read the key file", stage: .seal, file: path)
            }
            if n == 0 { break }
            filled += n
        }
        guard filled <= limit else {
            throw AttacheError(.invalidKey, stage: .seal, "the key file is too large to be a key", file: path)
        }
        contents.count = filled
        return contents
    }

    private static func decodeText(_ text: ScratchBytes) -> SecureBytes? {
        let whitespace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        var start = 0
        var end = text.count
        while start < end, whitespace.contains(text.bytes[start]) { start += 1 }
        while end > start, whitespace.contains(text.bytes[end - 1]) { end -= 1 }
        return text.bytes.withUnsafeBytes { raw -> SecureBytes? in
            let trimmed = UnsafeRawBufferPointer(rebasing: raw[start..<end])
            for alphabet in [Base64.Alphabet.standard, .url] {
                let out = SecureBytes(zeroedCount: Base64.maximumDecodedCount(trimmed.count))
                if let n = try? Base64.decodeFinal(trimmed, into: out.mutableBytes, alphabet: alphabet),
                   n == 32 || n == 64
                {
                    return SecureBytes(UnsafeRawBufferPointer(rebasing: out.mutableBytes[..<n]))
                }
            }
            return nil
        }
    }
}

/// A short-lived buffer of secret bytes, wiped when released.
final class ScratchBytes {
    var bytes: [UInt8]
    var count: Int

    init(count: Int) {
        bytes = [UInt8](repeating: 0, count: count)
        self.count = count
    }

    init(_ raw: UnsafeRawBufferPointer) {
        bytes = Array(raw)
        count = raw.count
    }

    /// The valid prefix.
    var contents: ArraySlice<UInt8> { bytes[..<count] }

    deinit {
        bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
    }
}
