import Foundation

/// `count` bytes from the system's random generator (read from /dev/urandom straight into the array).
package func randomBytes(_ count: Int) -> [UInt8] {
    let source = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
    precondition(source >= 0, "cannot open /dev/urandom: errno \(errno)")
    defer { close(source) }
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        while initialized < count {
            let got = read(source, buffer.baseAddress! + initialized, count - initialized)
            precondition(got > 0 || (got < 0 && errno == EINTR), "cannot read /dev/urandom: errno \(errno)")
            if got > 0 { initialized += got }
        }
    }
}

/// Deterministic, non-repeating-looking bytes (a linear congruential generator's high bytes).
package func patternBytes(_ count: Int, seed: UInt32 = 1) -> [UInt8] {
    var state = seed &* 2_654_435_761 | 1
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        for index in 0..<count {
            state = state &* 1_664_525 &+ 1_013_904_223
            buffer[index] = UInt8(truncatingIfNeeded: state >> 24)
        }
        initialized = count
    }
}

/// Deterministic pseudo-random bytes that contain CR, LF and dashes, like real binary files.
package func sampleBytes(count: Int, seed: UInt64 = 42) -> [UInt8] {
    var state = seed
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        for index in 0..<count {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            buffer[index] = UInt8(truncatingIfNeeded: state >> 33)
        }
        initialized = count
    }
}

/// The program that computes the tests' reference SHA-256: the `openssl` command, in its own process,
/// sharing no code with the Swift under test, and printing coreutils' format (`HEX *NAME`, with `-r`).
/// coreutils' `sha256sum` was used before; it took six CPU-seconds a GiB here against OpenSSL's one
/// (SHA-NI), and the tests hash several GiB.
package let sha256Command = (name: "openssl", arguments: ["dgst", "-sha256", "-r"])

/// The SHA-256 of `bytes` in lower-case hex, computed by ``sha256Command``: a hash that shares no
/// code with the one under test.
package func sha256Hex(_ bytes: [UInt8]) throws -> String {
    try digestHex(try run(sha256Command.name, sha256Command.arguments, input: Data(bytes)))
}

/// `sha256Hex` for async code: the command runs and is waited for on a thread of its own, not on the
/// cooperative pool.
package func sha256Hex(_ bytes: [UInt8]) async throws -> String {
    try digestHex(try await run(sha256Command.name, sha256Command.arguments, input: Data(bytes)))
}

/// The hex digest at the start of ``sha256Command``'s output.
private func digestHex(_ output: Data) throws -> String {
    let text = String(decoding: output, as: UTF8.self)
    let hex = text.prefix(64)
    guard hex.count == 64, hex.allSatisfy(\.isHexDigit) else { throw TestFailure("\(sha256Command.name) printed \(text)") }
    return String(hex)
}

/// Writes `count` bytes of ``SeededGenerator`` output (seeded with `seed`) to a new file at `path`, a
/// chunk at a time, so that a large file never sits in memory.
package func writeSeededFile(_ path: String, count: Int64, seed: UInt64) throws {
    guard FileManager.default.createFile(atPath: path, contents: nil) else {
        throw TestFailure("cannot create \(path)")
    }
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    var generator = SeededGenerator(seed: seed)
    let chunkWords = 1 << 19  // 4 MiB
    var words = [UInt64](repeating: 0, count: chunkWords)
    var left = count
    while left > 0 {
        words.withUnsafeMutableBufferPointer { buffer in
            for index in buffer.indices { buffer[index] = generator.next() }
        }
        let bytes = Int(min(left, Int64(chunkWords * 8)))
        try words.withUnsafeBytes { try handle.write(contentsOf: Data($0.prefix(bytes))) }
        left -= Int64(bytes)
    }
}

/// The SHA-256 of the file at `path` in lower-case hex, by ``sha256Command`` (read as it streams).
package func sha256Hex(ofFile path: String) async throws -> String {
    try digestHex(try await run(sha256Command.name, sha256Command.arguments + [path]))
}
