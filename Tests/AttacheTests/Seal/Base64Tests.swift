import Foundation
import AttacheTestSupport
import Testing
@testable import Attache
@testable import AttacheCore

@Suite struct Base64Tests {
    // RFC 4648 §10.
    static let rfcVectors = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ]

    @Test(arguments: rfcVectors)
    func encodesAndDecodesTheRFCVectors(_ plain: String, _ encoded: String) throws {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(try Base64.decode(encoded) == Array(plain.utf8))
        let unpadded = encoded.replacingOccurrences(of: "=", with: "")
        #expect(Base64.encode(Array(plain.utf8), alphabet: .url) == unpadded)
        #expect(try Base64.decode(unpadded, alphabet: .url) == Array(plain.utf8))
    }

    @Test func urlAlphabetUsesDashAndUnderscore() throws {
        let bytes: [UInt8] = [0xfb, 0xff, 0xbf]
        #expect(Base64.encode(bytes) == "+/+/")
        #expect(Base64.encode(bytes, alphabet: .url) == "-_-_")
        #expect(try Base64.decode("-_-_", alphabet: .url) == bytes)
    }

    @Test(arguments: [0, 1, 2, 3, 11, 12, 13, 14, 15, 100, 3 << 16, (3 << 16) + 1, (3 << 16) + 2, 1_000_001])
    func streamingMatchesFoundationAtEverySize(count: Int) throws {
        let bytes = patternBytes(count, seed: UInt32(count))
        let source = Base64EncodedSource(base: DataSource(bytes), alphabet: .standard)
        let text = try readAll(source.makeReader(), chunk: 4099)
        #expect(Int64(text.count) == source.byteCount)
        #expect(String(decoding: text, as: UTF8.self) == Data(bytes).base64EncodedString())
        let decoder = ProducingReader(Base64DecodingProducer(base: try DataSource(text).makeReader(), alphabet: .standard))
        #expect(try readAll(decoder, chunk: 1000) == bytes)
    }

    /// Lengths around the vector path's 24-byte step and its 28-byte look-ahead, in both alphabets, so
    /// a wrong lane shuffle or table entry shows whichever encoder this CPU runs.
    @Test(arguments: [TransferEncoding.base64, .base64URL])
    func everyLengthUpTo300MatchesFoundation(_ encoding: TransferEncoding) throws {
        let alphabet = encoding == .base64 ? Base64.Alphabet.standard : .url
        for count in 0...300 {
            let bytes = patternBytes(count, seed: UInt32(count) &* 7 &+ 3)
            var expected = Data(bytes).base64EncodedString()
            if encoding == .base64URL {
                expected = expected.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: "")
            }
            #expect(Base64.encode(bytes, alphabet: alphabet) == expected, "length \(count)")
        }
    }

    @Test func everySixBitValueMapsToItsCharacterInBothAlphabets() throws {
        // 48 bytes whose 64 six-bit groups are 0, 1, …, 63: each value once, in every lane position.
        var bits: [UInt8] = []
        var accumulator: UInt32 = 0
        for value in 0..<64 {
            accumulator = accumulator << 6 | UInt32(value)
            if value % 4 == 3 {
                bits += [UInt8(accumulator >> 16), UInt8(truncatingIfNeeded: accumulator >> 8), UInt8(truncatingIfNeeded: accumulator)]
                accumulator = 0
            }
        }
        let standard = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        #expect(Base64.encode(bits) == standard)
        #expect(Base64.encode(bits, alphabet: .url) == standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_"))
    }

    @Test(arguments: [
        "Zm9v\nYmFy",  // a line break
        "Zm9v YmFy",  // a space
        "Zm9=YmFy",  // padding inside
        "Zm9vY",  // length 1 mod 4
        "Zm9vYg=",  // padding that does not complete a group
        "Zm9vYh==",  // non-zero spare bits
        "Zm9vYmF",  // missing padding
        "Zm9v-_",  // url characters in a standard text
        "Zg===",  // too much padding
    ])
    func rejectsMalformedText(_ text: String) {
        #expect(sealErrorCode { _ = try Base64.decode(text) } == .base64Invalid)
    }

    @Test func rejectsPaddingInBase64URL() {
        #expect(sealErrorCode { _ = try Base64.decode("Zg==", alphabet: .url) } == .base64Invalid)
    }

    @Test func streamingDecoderRejectsABadCharacterFarIntoTheText() throws {
        var text = Array(Base64.encode(patternBytes(300_000)).utf8)
        text[200_001] = UInt8(ascii: "*")
        let decoder = ProducingReader(Base64DecodingProducer(base: try DataSource(text).makeReader(), alphabet: .standard))
        #expect(sealErrorCode { _ = try readAll(decoder) } == .base64Invalid)
    }
}
