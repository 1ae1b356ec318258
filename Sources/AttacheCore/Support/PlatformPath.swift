import Glibc

/// File names are bytes on Linux, not text: a name need not be valid UTF-8 (a file copied from an old
/// Latin-1 system, a damaged archive). Swift's `String` cannot hold such bytes, and converting them the
/// usual way replaces them with U+FFFD, after which the file cannot be opened any more.
///
/// Attache keeps paths as `String`s that stand for their exact bytes: every byte that is not part of
/// valid UTF-8 becomes one code point of the last private-use block, U+10FF80 + (byte − 0x80) (bytes
/// 0x80–0xFF only occur there). A real name that itself contains one of those 128 code points has its
/// UTF-8 bytes escaped the same way, so the mapping is lossless in both directions: `bytes(of:)` gives
/// back exactly the bytes `string(fromBytes:)` was given. Every system call on a path goes through
/// ``withCString(_:_:)``.
///
/// The name sent to a server is never one of these escapes: ``displayName(_:)`` replaces each raw byte
/// with U+FFFD, the standard replacement character.
package enum PlatformPath {
    private static let base: UInt32 = 0x10_FF00
    private static let first: UInt32 = 0x10_FF80

    /// The string that stands for the path bytes `bytes` (no NUL).
    package static func string(fromBytes bytes: some Collection<UInt8>) -> String {
        let bytes = Array(bytes)
        // Valid UTF-8 without a 0xF4 byte (which begins every reserved code point) is its own string.
        if let text = plainString(bytes) { return text }
        var scalars = String.UnicodeScalarView()
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x80 {
                scalars.append(Unicode.Scalar(byte))
                index += 1
                continue
            }
            if let (scalar, length) = decodeScalar(bytes, at: index), scalar.value < first {
                scalars.append(scalar)
                index += length
                continue
            }
            // An invalid byte, or the first byte of a reserved code point: escape byte by byte.
            let length = decodeScalar(bytes, at: index)?.1 ?? 1
            for raw in bytes[index..<index + length] {
                scalars.append(Unicode.Scalar(base + UInt32(raw))!)
            }
            index += length
        }
        return String(scalars)
    }

    /// `bytes` as a string when they are valid UTF-8 with no byte 0xF4, else nil.
    private static func plainString(_ bytes: [UInt8]) -> String? {
        if bytes.contains(0xF4) { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The string for a NUL-terminated C path.
    package static func string(cString: UnsafePointer<CChar>) -> String {
        string(fromBytes: UnsafeRawBufferPointer(start: cString, count: strlen(cString)))
    }

    /// The process's arguments with their exact bytes (`CommandLine.arguments` replaces bytes that are
    /// not UTF-8, so a file named that way could not be found again), the program name first.
    package static var commandLineArguments: [String] {
        (0..<Int(CommandLine.argc)).compactMap { index in
            CommandLine.unsafeArgv[index].map { string(cString: $0) }
        }
    }

    /// The exact bytes `path` stands for.
    package static func bytes(of path: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(path.utf8.count)
        for scalar in path.unicodeScalars {
            if scalar.value >= first {
                out.append(UInt8(scalar.value - base))
            } else {
                out.append(contentsOf: String(scalar).utf8)
            }
        }
        return out
    }

    /// Whether `path` holds bytes that are not valid UTF-8 (or escaped reserved code points).
    package static func hasRawBytes(_ path: String) -> Bool {
        // Every reserved code point begins with the byte 0xF4, which most paths never hold.
        let mayHold = path.utf8.withContiguousStorageIfAvailable { $0.contains(0xF4) } ?? path.utf8.contains(0xF4)
        guard mayHold else { return false }
        return path.unicodeScalars.contains { $0.value >= first }
    }

    /// Calls `body` with the NUL-terminated bytes of `path`, for system calls.
    package static func withCString<R>(_ path: String, _ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        if !hasRawBytes(path) { return try path.withCString(body) }
        var bytes = bytes(of: path).map { CChar(bitPattern: $0) }
        bytes.append(0)
        return try bytes.withUnsafeBufferPointer { try body($0.baseAddress!) }
    }

    /// `path` as text for people and servers: each raw byte becomes U+FFFD.
    package static func displayName(_ path: String) -> String {
        guard hasRawBytes(path) else { return path }
        var scalars = String.UnicodeScalarView()
        var previousRaw = false
        var pending: [UInt8] = []
        func flush() {
            if !pending.isEmpty {
                // Reserved code points that were valid UTF-8 come back as themselves.
                if let (scalar, length) = decodeScalar(pending, at: 0), length == pending.count {
                    scalars.append(scalar)
                } else {
                    scalars.append(contentsOf: pending.map { _ in Unicode.Scalar(0xFFFD)! })
                }
                pending.removeAll()
            }
        }
        for scalar in path.unicodeScalars {
            if scalar.value >= first {
                pending.append(UInt8(scalar.value - base))
                previousRaw = true
                if let (_, length) = decodeScalar(pending, at: 0), length == pending.count { flush() }
            } else {
                if previousRaw { flush() }
                previousRaw = false
                scalars.append(scalar)
            }
        }
        flush()
        return String(scalars)
    }

    /// `path` for a terminal or a log line: each raw byte as `\xNN`.
    package static func escapedName(_ path: String) -> String {
        guard hasRawBytes(path) else { return path }
        var text = ""
        for scalar in path.unicodeScalars {
            if scalar.value >= first {
                let hex = String(scalar.value - base, radix: 16, uppercase: true)
                text += "\\x" + hex
            } else {
                text.unicodeScalars.append(scalar)
            }
        }
        return text
    }

    /// The valid UTF-8 scalar at `index` and its length, or nil (strict: no overlongs, no surrogates).
    private static func decodeScalar(_ bytes: [UInt8], at index: Int) -> (Unicode.Scalar, Int)? {
        let lead = bytes[index]
        let length: Int
        var value: UInt32
        switch lead {
        case 0x00...0x7F: return (Unicode.Scalar(lead), 1)
        case 0xC2...0xDF: length = 2; value = UInt32(lead & 0x1F)
        case 0xE0...0xEF: length = 3; value = UInt32(lead & 0x0F)
        case 0xF0...0xF4: length = 4; value = UInt32(lead & 0x07)
        default: return nil
        }
        guard index + length <= bytes.count else { return nil }
        for offset in 1..<length {
            let next = bytes[index + offset]
            guard next & 0xC0 == 0x80 else { return nil }
            value = value << 6 | UInt32(next & 0x3F)
        }
        let minimum: UInt32 = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000
        guard value >= minimum, let scalar = Unicode.Scalar(value) else { return nil }
        return (scalar, length)
    }
}
