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

/// The SHA-256 of `bytes` in lower-case hex, computed by coreutils' `sha256sum`: a hash that shares no
/// code with the one under test.
package func sha256Hex(_ bytes: [UInt8]) throws -> String {
    let output = try run("sha256sum", [], input: Data(bytes))
    let text = String(decoding: output, as: UTF8.self)
    guard text.count >= 64 else { throw TestFailure("sha256sum printed \(text)") }
    return String(text.prefix(64))
}

/// `sha256Hex` for async code: `sha256sum` runs and is waited for on a thread of its own, not on the
/// cooperative pool.
package func sha256Hex(_ bytes: [UInt8]) async throws -> String {
    let output = try await run("sha256sum", [], input: Data(bytes))
    let text = String(decoding: output, as: UTF8.self)
    guard text.count >= 64 else { throw TestFailure("sha256sum printed \(text)") }
    return String(text.prefix(64))
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

/// The SHA-256 of the file at `path` in lower-case hex, by coreutils' `sha256sum` (read as it streams).
package func sha256Hex(ofFile path: String) async throws -> String {
    let output = try await run("sha256sum", [path])
    let text = String(decoding: output, as: UTF8.self)
    guard text.count >= 64 else { throw TestFailure("sha256sum printed \(text)") }
    return String(text.prefix(64))
}
