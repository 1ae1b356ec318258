/// The package's one decoder of `%XX` escapes: URL paths, form bodies and queries, connection strings.
///
/// Strict by default, as `removingPercentEncoding` is: a `%` that does not begin two hex digits makes
/// the whole text undecodable (nil), and the caller keeps the text as it came. The log redactor reads
/// whatever it is given instead (``decodingLeniently(_:plusAsSpace:)``): a malformed escape stays as
/// written and the rest is still decoded, so that `user[%70assword]%` is still seen to name a password.
///
/// ```swift
/// "a%20b".percentDecoded()                      // "a b"
/// "a+b%3D".percentDecoded(plusAsSpace: true)    // "a b="
/// "100%".percentDecoded()                       // nil
/// ```
package enum PercentDecoding {
    /// The bytes of `encoded` with each `%XX` replaced by its byte, and each `+` by a space when
    /// `plusAsSpace` (`application/x-www-form-urlencoded`); nil at the first malformed escape.
    package static func decoding(_ encoded: some Collection<UInt8>, plusAsSpace: Bool = false) -> [UInt8]? {
        withBuffer(of: encoded) { decode($0, plusAsSpace: plusAsSpace, keepingMalformed: false) }
    }

    /// The bytes of `encoded` decoded as ``decoding(_:plusAsSpace:)`` does, but a malformed escape is
    /// kept as it is written instead of failing the whole text.
    package static func decodingLeniently(_ encoded: some Collection<UInt8>, plusAsSpace: Bool = false) -> [UInt8] {
        withBuffer(of: encoded) { decode($0, plusAsSpace: plusAsSpace, keepingMalformed: true) } ?? []
    }

    /// Runs `body` on the bytes in one buffer: their own storage when they have it (an array, a slice
    /// of one, a native string's UTF-8), so that a large form body is not copied first.
    private static func withBuffer(
        of bytes: some Collection<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> [UInt8]?
    ) -> [UInt8]? {
        if let decoded = bytes.withContiguousStorageIfAvailable(body) { return decoded }
        return Array(bytes).withUnsafeBufferPointer(body)
    }

    private static func decode(_ bytes: UnsafeBufferPointer<UInt8>, plusAsSpace: Bool, keepingMalformed: Bool) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                if index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                    output.append(high << 4 | low)
                    index += 3
                    continue
                }
                guard keepingMalformed else { return nil }
                output.append(byte)
            } else if byte == UInt8(ascii: "+"), plusAsSpace {
                output.append(UInt8(ascii: " "))
            } else {
                output.append(byte)
            }
            index += 1
        }
        return output
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}

extension StringProtocol {
    /// The text with its `%XX` escapes decoded (and `+` as a space when `plusAsSpace`); nil when an
    /// escape is malformed or the decoded bytes are not UTF-8.
    package func percentDecoded(plusAsSpace: Bool = false) -> String? {
        guard utf8.contains(UInt8(ascii: "%")) || (plusAsSpace && utf8.contains(UInt8(ascii: "+"))) else {
            return String(self)
        }
        return PercentDecoding.decoding(utf8, plusAsSpace: plusAsSpace).flatMap { String(validating: $0, as: UTF8.self) }
    }
}
