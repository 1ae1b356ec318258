@testable import AttacheCore

/// The hand-written DEFLATE decoder detection used before zlib's inflate, kept only as the
/// reference the zlib path is compared with (InflaterTests): on valid streams both must decode the
/// same bytes.
struct HandWrittenInflater {
    private let input: ByteSpan
    private var position: Int
    private var bitBuffer = 0
    private var bitCount = 0
    private var output: [UInt8] = []
    private let limit: Int

    private struct Huffman {
        var counts = [Int](repeating: 0, count: 16)
        var symbols: [Int]

        /// Builds a canonical code from code lengths; nil when the lengths are over-subscribed.
        init?(lengths: ArraySlice<Int>) {
            symbols = [Int](repeating: 0, count: lengths.count)
            for length in lengths { counts[length] += 1 }
            var left = 1
            for length in 1..<16 {
                left = left << 1 - counts[length]
                if left < 0 { return nil }
            }
            var offsets = [Int](repeating: 0, count: 16)
            for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
            for (symbol, length) in lengths.enumerated() where length != 0 {
                symbols[offsets[length]] = symbol
                offsets[length] += 1
            }
            // The lookup table: every code of up to `tableBits` bits, indexed by the next input bits
            // in stream order (least significant first), so that one lookup replaces a walk per bit.
            table = [UInt16](repeating: 0, count: 1 << Self.tableBits)
            var code = 0
            var index = 0
            for length in 1...Self.tableBits {
                for _ in 0..<counts[length] {
                    var reversed = 0
                    for bit in 0..<length where code & (1 << bit) != 0 { reversed |= 1 << (length - 1 - bit) }
                    let entry = UInt16(symbols[index] << 4 | length)
                    for fill in stride(from: reversed, to: 1 << Self.tableBits, by: 1 << length) { table[fill] = entry }
                    code += 1
                    index += 1
                }
                code <<= 1
            }
        }

        static let tableBits = 9
        /// Symbol << 4 | code length, for the codes of at most `tableBits` bits; 0 elsewhere.
        var table: [UInt16]
    }

    /// The fixed code of block type 1, built once.
    private static let fixedLiterals: Huffman? = {
        var lengths = [Int](repeating: 8, count: 288)
        for index in 144..<256 { lengths[index] = 9 }
        for index in 256..<280 { lengths[index] = 7 }
        return Huffman(lengths: lengths[...])
    }()
    private static let fixedDistances = Huffman(lengths: [Int](repeating: 5, count: 30)[...])

    private static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    private static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    private static let distanceBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
    private static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
    private static let codeLengthOrder = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    /// Inflates the raw DEFLATE stream at `input[start...]`; returns what was decoded, at most `limit` bytes.
    static func inflate(_ input: ByteSpan, from start: Int, limit: Int) -> [UInt8] {
        var inflater = HandWrittenInflater(input: input, position: start, limit: limit)
        inflater.run()
        return inflater.output
    }

    private init(input: ByteSpan, position: Int, limit: Int) {
        self.input = input
        self.position = position
        self.limit = limit
        output.reserveCapacity(limit)
    }

    private mutating func bits(_ count: Int) -> Int? {
        while bitCount < count {
            guard position < input.count else { return nil }
            bitBuffer |= Int(input[position]) << bitCount
            position += 1
            bitCount += 8
        }
        let value = bitBuffer & ((1 << count) - 1)
        bitBuffer >>= count
        bitCount -= count
        return value
    }

    private mutating func decode(_ code: Huffman) -> Int? {
        while bitCount <= 56 - 8, position < input.count {
            bitBuffer |= Int(input[position]) << bitCount
            position += 1
            bitCount += 8
        }
        let entry = Int(code.table[bitBuffer & (1 << Huffman.tableBits - 1)])
        let length = entry & 0x0F
        if length > 0 && length <= bitCount {
            bitBuffer >>= length
            bitCount -= length
            return entry >> 4
        }
        // A longer code, or the last bits of the input: one bit at a time.
        var value = 0
        var first = 0
        var index = 0
        for length in 1..<16 {
            guard let bit = bits(1) else { return nil }
            value |= bit
            let count = code.counts[length]
            if value - first < count { return code.symbols[index + value - first] }
            index += count
            first = (first + count) << 1
            value <<= 1
        }
        return nil
    }

    private mutating func run() {
        var last = 0
        while last == 0, output.count < limit {
            guard let final = bits(1), let type = bits(2) else { return }
            last = final
            switch type {
            case 0:
                // Stored data starts at the next byte boundary; whole bytes already buffered are given back.
                position -= bitCount >> 3
                bitBuffer = 0
                bitCount = 0
                guard position <= input.count - 4, let length = input.le16(position), let check = input.le16(position + 2),
                    length == ~check & 0xFFFF
                else { return }
                position += 4
                let end = min(position + length, input.count)
                output += input[position..<end].prefix(limit - output.count)
                position = end
            case 1:
                guard let literals = Self.fixedLiterals, let distances = Self.fixedDistances,
                    block(literals, distances)
                else { return }
            case 2:
                guard dynamicBlock() else { return }
            default:
                return
            }
        }
    }

    private mutating func dynamicBlock() -> Bool {
        guard let literalCount = bits(5).map({ $0 + 257 }), let distanceCount = bits(5).map({ $0 + 1 }),
            let codeCount = bits(4).map({ $0 + 4 }), literalCount <= 286, distanceCount <= 30
        else { return false }
        var codeLengths = [Int](repeating: 0, count: 19)
        for index in 0..<codeCount {
            guard let length = bits(3) else { return false }
            codeLengths[Self.codeLengthOrder[index]] = length
        }
        guard let lengthCode = Huffman(lengths: codeLengths[...]) else { return false }
        var lengths: [Int] = []
        while lengths.count < literalCount + distanceCount {
            guard let symbol = decode(lengthCode) else { return false }
            if symbol < 16 {
                lengths.append(symbol)
                continue
            }
            var value = 0
            let repeatCount: Int
            switch symbol {
            case 16:
                guard let previous = lengths.last, let extra = bits(2) else { return false }
                value = previous
                repeatCount = 3 + extra
            case 17:
                guard let extra = bits(3) else { return false }
                repeatCount = 3 + extra
            default:
                guard let extra = bits(7) else { return false }
                repeatCount = 11 + extra
            }
            guard lengths.count + repeatCount <= literalCount + distanceCount else { return false }
            lengths += repeatElement(value, count: repeatCount)
        }
        guard let literals = Huffman(lengths: lengths[0..<literalCount]),
            let distances = Huffman(lengths: lengths[literalCount...])
        else { return false }
        return block(literals, distances)
    }

    private mutating func block(_ literals: Huffman, _ distances: Huffman) -> Bool {
        while output.count < limit {
            guard let symbol = decode(literals) else { return false }
            if symbol < 256 {
                output.append(UInt8(symbol))
            } else if symbol == 256 {
                return true
            } else {
                let index = symbol - 257
                guard index < 29, let extra = bits(Self.lengthExtra[index]),
                    let distanceSymbol = decode(distances), distanceSymbol < 30,
                    let distanceExtra = bits(Self.distanceExtra[distanceSymbol])
                else { return false }
                let length = Self.lengthBase[index] + extra
                let distance = Self.distanceBase[distanceSymbol] + distanceExtra
                guard distance <= output.count else { return false }
                for _ in 0..<min(length, limit - output.count) { output.append(output[output.count - distance]) }
            }
        }
        return true
    }
}
