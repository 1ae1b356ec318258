import Testing
@testable import AttacheServer

@Suite("Reference server: the streaming multipart reader")
struct MultipartReaderTests {
    /// What the reader reported, as one part per entry.
    final class Recorder: MultipartReader.Delegate {
        struct Part: Equatable {
            var headers: [String] = []
            var body: [UInt8] = []
        }
        var parts: [Part] = []
        var open: Part?

        func header(name: String, value: String) throws {
            if open == nil { open = Part() }
            open!.headers.append("\(name)=\(value)")
        }

        func body(_ bytes: UnsafeRawBufferPointer) throws {
            #expect(!bytes.isEmpty, "no empty body calls")
            if open == nil { open = Part() }
            open!.body += bytes
        }

        func partComplete() throws {
            parts.append(open ?? Part())
            open = nil
        }
    }

    static let boundary = "b0undary-x"

    /// Reads `body` in the pieces `sizes` cuts it into (the rest in one piece) and returns the parts.
    static func read(_ body: [UInt8], pieces sizes: [Int] = [], boundary: String = boundary) throws -> [Recorder.Part] {
        let recorder = Recorder()
        var reader = MultipartReader(boundary: boundary, delegate: recorder)
        var offset = 0
        for size in sizes + [body.count] where offset < body.count {
            let end = min(body.count, offset + size)
            try body[offset..<end].withUnsafeBytes { try reader.read($0) }
            offset = end
        }
        try reader.finish()
        let complete = reader.isComplete
        #expect(complete)
        return recorder.parts
    }

    /// A body whose part bodies hold everything that looks almost like a delimiter.
    static let tricky: (body: [UInt8], parts: [Recorder.Part]) = {
        let bodies: [[UInt8]] = [
            Array("42".utf8),
            [],
            Array("\r\n--b0undary-\r\r\n-\r\n--b0undary\r\n--b0undary-y--\r".utf8) + [0, 255, 13],
            Array("\r".utf8),
            (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 13) },
        ]
        var out = Array("preamble, ignored\r\n".utf8)
        var parts: [Recorder.Part] = []
        for (index, body) in bodies.enumerated() {
            let headers = ["Content-Disposition=form-data; name=\"p\(index)\"", "Content-Type=application/x-\(index)"]
            out += Array("--\(boundary)  \t\r\nContent-Disposition: form-data; name=\"p\(index)\"\r\nContent-Type:application/x-\(index)  \r\n\r\n".utf8)
            out += body + Array("\r\n".utf8)
            parts.append(.init(headers: headers, body: body))
        }
        out += Array("--\(boundary)--\r\nepilogue \r\n--\(boundary)\r\nignored too".utf8)
        return (out, parts)
    }()

    @Test("every cut into two pieces gives the same parts")
    func everySplit() throws {
        let (body, expected) = Self.tricky
        #expect(try Self.read(body) == expected)
        for cut in 1..<body.count {
            #expect(try Self.read(body, pieces: [cut]) == expected, "cut at \(cut)")
        }
    }

    @Test("a byte at a time, and pieces of every small size")
    func smallPieces() throws {
        let (body, expected) = Self.tricky
        for size in 1...80 {
            #expect(try Self.read(body, pieces: Array(repeating: size, count: body.count / size + 1)) == expected, "pieces of \(size)")
        }
    }

    @Test("random pieces over random bodies")
    func randomPieces() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            // Bytes from a small alphabet that spells the delimiter's pieces often.
            let alphabet = Array("\r\n-b0undary-x".utf8) + [0, 255]
            let bodies = (0..<Int.random(in: 1...4, using: &generator)).map { _ in
                (0..<Int.random(in: 0...300, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
            }.filter { !$0.containsDelimiter(Self.boundary) }
            guard !bodies.isEmpty else { continue }
            var body: [UInt8] = []
            for part in bodies { body += Array("\r\n--\(Self.boundary)\r\nA: b\r\n\r\n".utf8) + part }
            body += Array("\r\n--\(Self.boundary)--".utf8)
            let sizes = (0..<40).map { _ in Int.random(in: 1...64, using: &generator) }
            let parts = try Self.read(body, pieces: sizes)
            #expect(parts.map(\.body) == bodies)
        }
    }

    @Test("a part with no headers, folded header lines, and a first delimiter after a line break")
    func headerForms() throws {
        let body = Array("\r\n--\(Self.boundary)\r\n\r\nno headers\r\n--\(Self.boundary)\r\nX-Long: one\r\n two\r\n\tthree\r\nY:\r\n\r\n\r\n--\(Self.boundary)--".utf8)
        let parts = try Self.read(body)
        #expect(parts == [
            .init(headers: [], body: Array("no headers".utf8)),
            .init(headers: ["X-Long=one two three", "Y="], body: []),
        ])
    }

    @Test("malformed bodies are refused with a reason", arguments: [
        ("", "no part found"),
        ("no delimiter at all", "no part found"),
        ("--b0undary-x\r\nA: b\r\n\r\nbody without an end", "ends before the closing boundary"),
        ("--b0undary-x\r\nA: b\r\n", "ends before the closing boundary"),
        ("--b0undary-xyz\r\nA: b\r\n\r\n\r\n--b0undary-x--", "neither a line break nor '--'"),
        ("--b0undary-x\r\nno colon here\r\n\r\n\r\n--b0undary-x--", "has no name"),
        ("--b0undary-x\r\n: empty name\r\n\r\n\r\n--b0undary-x--", "has no name"),
        ("--b0undary-x\r\n folded first\r\n\r\n\r\n--b0undary-x--", "continuation line"),
    ])
    func malformed(body: String, reason: String) throws {
        let error = #expect(throws: MultipartRejection.self) { try Self.read(Array(body.utf8)) }
        guard case .malformed(let message) = error else {
            Issue.record("expected malformed, got \(String(describing: error))")
            return
        }
        #expect(message.contains(reason), "\(message)")
    }

    @Test("a header block over the limit is refused, whatever the pieces")
    func headerLimit() throws {
        let huge = "--b0undary-x\r\nX: " + String(repeating: "a", count: MultipartReader.headerLimit) + "\r\n\r\n\r\n--b0undary-x--"
        for pieces in [[], [100], Array(repeating: 4096, count: 10)] {
            let error = #expect(throws: MultipartRejection.self) { try Self.read(Array(huge.utf8), pieces: pieces) }
            if case .malformed(let message) = error {
                #expect(message.contains("exceed"))
            } else {
                Issue.record("expected malformed, got \(String(describing: error))")
            }
        }
        // Just under the limit is fine.
        let fits = "--b0undary-x\r\nX: " + String(repeating: "a", count: MultipartReader.headerLimit - 3) + "\r\n\r\nz\r\n--b0undary-x--"
        #expect(try Self.read(Array(fits.utf8), pieces: [1000]).map(\.body) == [Array("z".utf8)])
    }

    @Test("the reader's search finds the first delimiter and holds back only a real prefix")
    func searchHelpers() {
        let pattern = Array("\r\n--ab".utf8)
        func find(_ text: String) -> Int? { Array(text.utf8).withUnsafeBytes { MultipartReader.find(pattern, in: $0) } }
        func held(_ text: String) -> Int { Array(text.utf8).withUnsafeBytes { MultipartReader.heldBack(pattern, atEndOf: $0) } }
        #expect(find("x\r\n--ab") == 1)
        #expect(find("\r\r\n--a\r\n--ab\r\n--ab") == 6)
        #expect(find("\r\n--a") == nil)
        #expect(find("") == nil)
        #expect(held("abc\r\n--a") == 5)
        #expect(held("abc\r") == 1)
        #expect(held("abc\r\n-x") == 0)
        #expect(held("\r\n--ab") == 0, "a whole pattern is not a proper prefix")
        #expect(held("") == 0)
    }
}

extension [UInt8] {
    /// Whether the bytes, as a part body, hold a whole delimiter (a line break before them counted).
    fileprivate func containsDelimiter(_ boundary: String) -> Bool {
        let pattern = Array("\r\n--\(boundary)".utf8)
        let text = Array("\r\n".utf8) + self
        guard text.count >= pattern.count else { return false }
        return (0...(text.count - pattern.count)).contains { Array(text[$0..<($0 + pattern.count)]) == pattern }
    }
}
