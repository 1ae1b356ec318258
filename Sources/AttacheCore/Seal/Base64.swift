internal import CBase64

/// RFC 4648 base64 and base64url: no line breaks, strict decoding.
///
/// The encoder runs the AVX2 path of the `CBase64` target (24 bytes to 32 characters per step) when
/// the CPU has AVX2, and finishes (or, without AVX2, does everything) with a scalar loop that turns
/// 6 input bytes into 8 characters with one unaligned 64-bit load and four lookups in a 4096-entry
/// table of character pairs; see `docs/FORMAT.md` for why. The decoder rejects any character outside the
/// alphabet (line breaks included), padding anywhere but at the end, and non-zero spare bits, so
/// every byte string has exactly one accepted encoding.
///
/// ```swift
/// let text = Base64.encode(Array("hi".utf8))          // "aGk="
/// let bytes = try Base64.decode(text)                  // [0x68, 0x69]
/// ```
package enum Base64 {
    /// A 64-character alphabet with its lookup tables.
    package struct Alphabet: Sendable {
        let characters: [UInt8]
        /// `pairs[i]` holds the characters for the 12-bit value `i`, first character in the low byte.
        let pairs: [UInt16]
        /// Character → 6-bit value, 0xFF for anything else.
        let values: [UInt8]
        /// Whether encoded text ends with `=` padding to a multiple of 4 characters.
        let padded: Bool
        /// Whether this is RFC 4648 §5's alphabet (`-` and `_`), which the vector encoder needs to know.
        var isURL: Bool { characters[62] == UInt8(ascii: "-") }

        package init(_ text: String, padded: Bool) {
            characters = Array(text.utf8)
            precondition(characters.count == 64)
            var pairs = [UInt16](repeating: 0, count: 4096)
            for index in 0..<4096 {
                pairs[index] = UInt16(characters[index >> 6]) | UInt16(characters[index & 63]) << 8
            }
            self.pairs = pairs
            var values = [UInt8](repeating: 0xFF, count: 256)
            for (index, character) in characters.enumerated() { values[Int(character)] = UInt8(index) }
            self.values = values
            self.padded = padded
        }

        /// RFC 4648 §4: `A–Z a–z 0–9 + /`, padded with `=`.
        package static let standard = Alphabet(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", padded: true)
        /// RFC 4648 §5: `A–Z a–z 0–9 - _`, unpadded (the length is known from the byte count).
        package static let url = Alphabet(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", padded: false)
    }

    /// The number of characters `count` bytes encode to.
    package static func encodedCount(_ count: Int64, padded: Bool) -> Int64 {
        padded ? (count + 2) / 3 * 4 : (count * 4 + 2) / 3
    }

    /// The number of characters `count` bytes encode to.
    package static func encodedCount(_ count: Int, padded: Bool) -> Int {
        Int(encodedCount(Int64(count), padded: padded))
    }

    /// An upper bound on the bytes `count` characters decode to.
    package static func maximumDecodedCount(_ count: Int) -> Int { (count + 3) / 4 * 3 }

    /// Encodes `bytes` as text in the alphabet's own padding convention.
    package static func encode(_ bytes: some Collection<UInt8>, alphabet: Alphabet = .standard) -> String {
        Array(bytes).withUnsafeBytes { encode($0, alphabet: alphabet) }
    }

    /// Encodes raw bytes as text in the alphabet's own padding convention.
    package static func encode(_ bytes: UnsafeRawBufferPointer, alphabet: Alphabet = .standard) -> String {
        let count = encodedCount(bytes.count, padded: alphabet.padded)
        return String(unsafeUninitializedCapacity: count) { out in
            encode(bytes, into: UnsafeMutableRawBufferPointer(out), alphabet: alphabet, padded: alphabet.padded)
        }
    }

    /// Decodes text strictly.
    /// - Throws: ``AttacheError`` `.base64Invalid` naming the offset of the first bad character.
    package static func decode(_ text: String, alphabet: Alphabet = .standard) throws -> [UInt8] {
        var utf8 = Array(text.utf8)
        return try utf8.withUnsafeMutableBytes { input in
            var out = [UInt8](repeating: 0, count: maximumDecodedCount(input.count))
            let n = try out.withUnsafeMutableBytes {
                try decodeFinal(UnsafeRawBufferPointer(input), into: $0, alphabet: alphabet)
            }
            out.removeLast(out.count - n)
            return out
        }
    }

    // MARK: - Block functions used by the streaming reader

    /// Encodes all of `input` (the final piece of a stream, or any multiple of 3 bytes) and returns the
    /// number of characters written; `output` holds at least `encodedCount(input.count)`.
    @discardableResult
    static func encode(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, alphabet: Alphabet,
        padded: Bool
    ) -> Int {
        guard let source = input.baseAddress, let target = output.baseAddress else { return 0 }
        let count = input.count
        var i = attache_base64_encode_prefix(
            source.assumingMemoryBound(to: UInt8.self), count, target.assumingMemoryBound(to: UInt8.self),
            alphabet.isURL ? 1 : 0)
        var o = i / 3 * 4
        alphabet.pairs.withUnsafeBufferPointer { pairs in
            // 12 input bytes → 16 characters per step; each 8-byte load uses its first 6 bytes, so the
            // loop stops 2 bytes early and leaves the rest to the 3-byte loop below.
            while i + 14 <= count {
                let v = UInt64(bigEndian: source.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                let w = UInt64(bigEndian: source.loadUnaligned(fromByteOffset: i + 6, as: UInt64.self))
                let first = UInt64(pairs[Int(truncatingIfNeeded: v >> 52)])
                    | UInt64(pairs[Int(truncatingIfNeeded: (v >> 40) & 0xFFF)]) << 16
                    | UInt64(pairs[Int(truncatingIfNeeded: (v >> 28) & 0xFFF)]) << 32
                    | UInt64(pairs[Int(truncatingIfNeeded: (v >> 16) & 0xFFF)]) << 48
                let second = UInt64(pairs[Int(truncatingIfNeeded: w >> 52)])
                    | UInt64(pairs[Int(truncatingIfNeeded: (w >> 40) & 0xFFF)]) << 16
                    | UInt64(pairs[Int(truncatingIfNeeded: (w >> 28) & 0xFFF)]) << 32
                    | UInt64(pairs[Int(truncatingIfNeeded: (w >> 16) & 0xFFF)]) << 48
                target.storeBytes(of: first.littleEndian, toByteOffset: o, as: UInt64.self)
                target.storeBytes(of: second.littleEndian, toByteOffset: o + 8, as: UInt64.self)
                i += 12
                o += 16
            }
            while i + 3 <= count {
                let v = UInt32(source.load(fromByteOffset: i, as: UInt8.self)) << 16
                    | UInt32(source.load(fromByteOffset: i + 1, as: UInt8.self)) << 8
                    | UInt32(source.load(fromByteOffset: i + 2, as: UInt8.self))
                target.storeBytes(of: pairs[Int(v >> 12)].littleEndian, toByteOffset: o, as: UInt16.self)
                target.storeBytes(of: pairs[Int(v & 0xFFF)].littleEndian, toByteOffset: o + 2, as: UInt16.self)
                i += 3
                o += 4
            }
        }
        let rest = count - i
        guard rest > 0 else { return o }
        let characters = alphabet.characters
        let b0 = UInt32(source.load(fromByteOffset: i, as: UInt8.self))
        let b1 = rest == 2 ? UInt32(source.load(fromByteOffset: i + 1, as: UInt8.self)) : 0
        let v = b0 << 16 | b1 << 8
        target.storeBytes(of: characters[Int(v >> 18)], toByteOffset: o, as: UInt8.self)
        target.storeBytes(of: characters[Int((v >> 12) & 63)], toByteOffset: o + 1, as: UInt8.self)
        o += 2
        if rest == 2 {
            target.storeBytes(of: characters[Int((v >> 6) & 63)], toByteOffset: o, as: UInt8.self)
            o += 1
        }
        if padded {
            while o % 4 != 0 {
                target.storeBytes(of: UInt8(ascii: "="), toByteOffset: o, as: UInt8.self)
                o += 1
            }
        }
        return o
    }

    /// Decodes groups of 4 characters with no padding among them; `input.count` is a multiple of 4.
    /// `offset` is the position of `input` in the whole text, for error messages.
    static func decodeGroups(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, alphabet: Alphabet,
        offset: Int64 = 0
    ) throws -> Int {
        guard let source = input.baseAddress, let target = output.baseAddress else { return 0 }
        let count = input.count
        var i = 0
        var o = 0
        let bad: Int? = alphabet.values.withUnsafeBufferPointer { values -> Int? in
            while i + 4 <= count {
                let a = values[Int(source.load(fromByteOffset: i, as: UInt8.self))]
                let b = values[Int(source.load(fromByteOffset: i + 1, as: UInt8.self))]
                let c = values[Int(source.load(fromByteOffset: i + 2, as: UInt8.self))]
                let d = values[Int(source.load(fromByteOffset: i + 3, as: UInt8.self))]
                if (a | b | c | d) & 0x80 != 0 { return i }
                let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                target.storeBytes(of: UInt8(truncatingIfNeeded: v >> 16), toByteOffset: o, as: UInt8.self)
                target.storeBytes(of: UInt8(truncatingIfNeeded: v >> 8), toByteOffset: o + 1, as: UInt8.self)
                target.storeBytes(of: UInt8(truncatingIfNeeded: v), toByteOffset: o + 2, as: UInt8.self)
                i += 4
                o += 3
            }
            return nil
        }
        if let bad {
            var position = bad
            while alphabet.values[Int(input[position])] != 0xFF { position += 1 }
            let what = input[position] == UInt8(ascii: "=") ? "padding before the end" : "a character outside the alphabet"
            throw invalid("\(what) at offset \(offset + Int64(position))")
        }
        return o
    }

    /// Decodes the last piece of a text: full groups, then a final group that may be short (and, for a
    /// padded alphabet, must be padded). `padding` nil means: the alphabet's own rule.
    static func decodeFinal(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, alphabet: Alphabet,
        offset: Int64 = 0, acceptPadding: Bool? = nil
    ) throws -> Int {
        var count = input.count
        var padding = 0
        while count > 0, padding < 2, input[count - 1] == UInt8(ascii: "=") {
            count -= 1
            padding += 1
        }
        let paddingAllowed = acceptPadding ?? alphabet.padded
        if padding > 0 {
            guard paddingAllowed else { throw invalid("padding in unpadded base64url at offset \(offset + Int64(count))") }
            guard input.count % 4 == 0 else { throw invalid("padding that does not end a 4-character group") }
        } else if alphabet.padded, acceptPadding == nil, count % 4 != 0 {
            throw invalid("the text ends without its padding (truncated?)")
        }
        let tail = count % 4
        guard tail != 1 else { throw invalid("the text ends in the middle of a byte (truncated?)") }
        let full = count - tail
        var o = try decodeGroups(
            UnsafeRawBufferPointer(rebasing: input[..<full]), into: output, alphabet: alphabet, offset: offset)
        guard tail > 0 else { return o }
        var v: UInt32 = 0
        for index in 0..<tail {
            let value = alphabet.values[Int(input[full + index])]
            guard value != 0xFF else {
                throw invalid("a character outside the alphabet at offset \(offset + Int64(full + index))")
            }
            v |= UInt32(value) << (18 - 6 * UInt32(index))
        }
        // The spare bits of a short group must be zero, or two texts would decode to the same bytes.
        let spare: UInt32 = tail == 2 ? 0xFFFF : 0xFF
        guard v & spare == 0 else { throw invalid("non-zero spare bits in the final group") }
        output[o] = UInt8(truncatingIfNeeded: v >> 16)
        o += 1
        if tail == 3 {
            output[o] = UInt8(truncatingIfNeeded: v >> 8)
            o += 1
        }
        return o
    }

    static func invalid(_ detail: String) -> AttacheError {
        AttacheError(.base64Invalid, stage: .seal, "invalid base64: \(detail)")
    }
}

/// Base64 text of another source, produced as it is read.
package struct Base64EncodedSource: ByteSource {
    let base: any ByteSource
    let alphabet: Base64.Alphabet

    package var byteCount: Int64 { Base64.encodedCount(base.byteCount, padded: alphabet.padded) }

    package func makeReader() throws -> any ByteReader {
        // A small source gets a buffer just larger than itself, so it is encoded in one step.
        let capacity = Int(min(Int64(Base64EncodingProducer.inputCapacity), (base.byteCount / 3 + 1) * 3))
        return ProducingReader(Base64EncodingProducer(base: try base.makeReader(), alphabet: alphabet, capacity: capacity))
    }
}

private final class Base64EncodingProducer: ChunkProducer {
    /// The largest input buffer: a multiple of 3 so that only the last chunk has a short group; 192 KiB
    /// of input per step.
    static let inputCapacity = 3 << 16

    let base: any ByteReader
    let alphabet: Base64.Alphabet
    let input: UnsafeMutableRawBufferPointer
    var done = false

    /// `capacity` is a multiple of 3.
    package init(base: any ByteReader, alphabet: Base64.Alphabet, capacity: Int) {
        self.base = base
        self.alphabet = alphabet
        input = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { input.deallocate() }

    var maximumChunkSize: Int { input.count / 3 * 4 }

    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !done else { return 0 }
        let filled = try base.readFully(into: input)
        if filled < input.count { done = true }
        return Base64.encode(
            UnsafeRawBufferPointer(rebasing: input[..<filled]), into: buffer, alphabet: alphabet,
            padded: alphabet.padded)
    }
}

/// Decodes base64 text read from another reader, strictly, in bounded memory.
package final class Base64DecodingProducer: ChunkProducer {
    /// A multiple of 4; the last group of a full buffer is held back until the next read shows
    /// whether it ends the text (only the final group may be short or padded).
    static let inputCapacity = 1 << 16

    let base: any ByteReader
    let alphabet: Base64.Alphabet
    let input: UnsafeMutableRawBufferPointer
    var carried = 0
    var consumed: Int64 = 0
    var done = false

    package init(base: any ByteReader, alphabet: Base64.Alphabet) {
        self.base = base
        self.alphabet = alphabet
        input = .allocate(byteCount: Self.inputCapacity, alignment: 16)
    }

    deinit { input.deallocate() }

    var maximumChunkSize: Int { Self.inputCapacity / 4 * 3 }

    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while !done {
            let n = try base.readFully(into: UnsafeMutableRawBufferPointer(rebasing: input[carried...]))
            let total = carried + n
            if total < input.count {
                done = true
                return try Base64.decodeFinal(
                    UnsafeRawBufferPointer(rebasing: input[..<total]), into: buffer, alphabet: alphabet,
                    offset: consumed)
            }
            let body = total - 4
            let written = try Base64.decodeGroups(
                UnsafeRawBufferPointer(rebasing: input[..<body]), into: buffer, alphabet: alphabet,
                offset: consumed)
            consumed += Int64(body)
            input.baseAddress!.copyMemory(from: input.baseAddress! + body, byteCount: 4)
            carried = 4
            if written > 0 { return written }
        }
        return 0
    }
}
