import FoundationEssentials
import Glibc

// The few string and path helpers the module needs that FoundationEssentials leaves to Foundation
// (NSString's path methods, `caseInsensitiveCompare`); the trim and the percent-decoding are
// AttacheCore's. The module links FoundationEssentials only: an embedding backend that does not use
// Foundation loads neither CoreFoundation nor ICU's data for it.

extension StringProtocol {
    /// True when both are equal after ASCII letters are folded to lower case (header names, tokens).
    ///
    /// Over the strings' contiguous UTF-8 where both have it (native strings and their substrings, small
    /// ones included): a loop over two buffers. Zipping the two `UTF8View`s cost about 800 instructions
    /// for a 13-byte header name, and it runs for every header of every request.
    package func equalsIgnoringASCIICase(_ other: some StringProtocol) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        let contiguous = a.withContiguousStorageIfAvailable { x in
            b.withContiguousStorageIfAvailable { y in ASCIICase.equal(x, y) }
        }
        if let contiguous, let equal = contiguous { return equal }
        return zip(a, b).allSatisfy(ASCIICase.equal)
    }

    /// True when the string starts with `prefix`, ASCII letters compared without regard to case (a URL's
    /// scheme, a header line's name).
    package func hasPrefixIgnoringASCIICase(_ prefix: some StringProtocol) -> Bool {
        let a = utf8, b = prefix.utf8
        let count = b.count
        guard a.count >= count else { return false }
        let contiguous = a.withContiguousStorageIfAvailable { x in
            b.withContiguousStorageIfAvailable { y in ASCIICase.equal(UnsafeBufferPointer(rebasing: x.prefix(count)), y) }
        }
        if let contiguous, let equal = contiguous { return equal }
        return zip(a.prefix(count), b).allSatisfy(ASCIICase.equal)
    }

    /// The first range of `needle` at or after `start`, ASCII letters compared without regard to case.
    package func rangeIgnoringASCIICase(of needle: String, from start: Index? = nil) -> Range<Index>? {
        guard !needle.isEmpty else { return nil }
        var index = start ?? startIndex
        let count = needle.count
        while index < endIndex {
            guard let end = self.index(index, offsetBy: count, limitedBy: endIndex) else { return nil }
            if self[index..<end].equalsIgnoringASCIICase(needle) { return index..<end }
            index = self.index(after: index)
        }
        return nil
    }
}

/// ASCII case folding on bytes.
enum ASCIICase {
    /// True when `x` and `y` are the same byte, or the same ASCII letter in either case.
    @inline(__always)
    static func equal(_ x: UInt8, _ y: UInt8) -> Bool {
        x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= 0x61 && (x | 0x20) <= 0x7A)
    }

    /// True when the buffers have the same length and `equal` bytes.
    static func equal(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        guard x.count == y.count else { return false }
        for index in 0..<x.count where !equal(x[index], y[index]) { return false }
        return true
    }
}

extension PathText {
    /// `$HOME`, else the password database's home of this user, else `/`.
    package static var homeDirectory: String {
        if let value = getenv("HOME"), value.pointee != 0 { return String(cString: value) }
        if let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir { return String(cString: directory) }
        return "/"
    }
}

extension Double {
    /// The value rounded to `digits` decimals (0...6), as `String(format: "%.Nf")` writes it.
    package func formatted(decimals digits: Int) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBufferPointer { pointer in
            withVaList([Int32(Swift.min(Swift.max(digits, 0), 6)), self]) {
                vsnprintf(pointer.baseAddress, pointer.count, "%.*f", $0)
            }
        }
        guard count > 0, count < buffer.count else { return String(self) }
        return String(decoding: buffer[..<Int(count)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
