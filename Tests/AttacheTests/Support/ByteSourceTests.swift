import Testing
@testable import Attache
@testable import AttacheCore

@Suite struct ByteSourceTests {
    @Test func concatenatedSourceYieldsPartsInOrder() throws {
        let source = ConcatenatedSource([DataSource("ab"), DataSource(""), DataSource("cde")])
        #expect(source.byteCount == 5)
        let reader = try source.makeReader()
        var out = [UInt8](repeating: 0, count: 16)
        let n = try out.withUnsafeMutableBytes { try reader.readFully(into: $0) }
        #expect(n == 5)
        #expect(String(decoding: out[..<n], as: UTF8.self) == "abcde")
    }
}
