import Glibc

/// Telegram's voice-note waveform: 100 five-bit levels packed into 63 bytes, which a chat draws as bars.
///
/// The rule, which a receiver can recompute from the decoded audio:
/// 1. Split the N mono 16-bit samples into 100 runs, run k holding samples `⌊k·N/100⌋ ..< ⌊(k+1)·N/100⌋`,
///    and take each run's peak `|s|` (so −32768 counts as 32768; an empty run's peak is 0).
/// 2. Scale against `m = max(2500, 1.8 × mean of the 100 peaks)`: level = `min(31, ⌊peak · 31 / m⌋)`.
/// 3. Pack level k into bits `5k ..< 5k+5` of a 63-byte little-endian bit string (least significant bit
///    first within each byte, a level's low bit first); the last 4 bits are zero.
///
/// ```swift
/// let peaks = try VoiceWaveform.peaks(ofPCMFileAt: "voice.s16le")
/// let packed = VoiceWaveform.pack(VoiceWaveform.levels(fromPeaks: peaks))  // 63 bytes, sent base64
/// ```
package enum VoiceWaveform {
    /// Runs in a waveform.
    package static let levelCount = 100
    /// Bytes in a packed waveform: ⌈100 × 5 / 8⌉.
    package static let packedByteCount = 63

    /// The 100 run peaks of `samples` (step 1).
    package static func peaks(of samples: some Collection<Int16>) -> [Int] {
        var peaks = [Int](repeating: 0, count: levelCount)
        let total = samples.count
        guard total > 0 else { return peaks }
        var run = 0
        var nextBoundary = total / levelCount  // ⌊(run+1)·N/100⌋
        for (index, sample) in samples.enumerated() {
            while index >= nextBoundary, run < levelCount - 1 {
                run += 1
                nextBoundary = (run + 1) * total / levelCount
            }
            let magnitude = abs(Int(sample))
            if magnitude > peaks[run] { peaks[run] = magnitude }
        }
        return peaks
    }

    /// The peaks of the raw signed 16-bit little-endian mono samples in the file at `path` (ffmpeg's
    /// `s16le`), read in blocks, never held whole.
    ///
    /// - Throws: ``AttacheError`` `.fileUnreadable` in stage `.transform`.
    package static func peaks(ofPCMFileAt path: String) throws -> [Int] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw AttacheError(.fileUnreadable, stage: .transform, "cannot read the decoded audio",
                               file: path, cause: NativeError.posix())
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw AttacheError(.fileUnreadable, stage: .transform, "cannot read the decoded audio", file: path,
                               cause: NativeError.posix())
        }
        let total = Int(info.st_size) / 2
        var peaks = [Int](repeating: 0, count: levelCount)
        guard total > 0 else { return peaks }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var index = 0
        var run = 0
        var nextBoundary = total / levelCount
        var carry: UInt8?
        while index < total {
            let count = buffer.withUnsafeMutableBytes { FileDescriptor.read(fd, into: $0) }
            guard count > 0 else { break }
            var position = 0
            if let low = carry {
                // A sample split across two reads.
                consume(Int16(bitPattern: UInt16(low) | UInt16(buffer[0]) << 8))
                position = 1
                carry = nil
            }
            while position + 1 < count {
                consume(Int16(bitPattern: UInt16(buffer[position]) | UInt16(buffer[position + 1]) << 8))
                position += 2
            }
            if position < count { carry = buffer[position] }
        }
        return peaks

        func consume(_ sample: Int16) {
            guard index < total else { return }
            while index >= nextBoundary, run < levelCount - 1 {
                run += 1
                nextBoundary = (run + 1) * total / levelCount
            }
            let magnitude = abs(Int(sample))
            if magnitude > peaks[run] { peaks[run] = magnitude }
            index += 1
        }
    }

    /// The five-bit levels of `peaks` (step 2).
    package static func levels(fromPeaks peaks: [Int]) -> [UInt8] {
        guard !peaks.isEmpty else { return [] }
        let mean = Double(peaks.reduce(0, +)) / Double(peaks.count)
        let scale = max(2500.0, 1.8 * mean)
        return peaks.map { UInt8(min(31.0, (Double($0) * 31.0 / scale).rounded(.down))) }
    }

    /// The five-bit levels of a waveform made by ``pack(_:)``.
    package static func unpack(_ packed: [UInt8]) -> [UInt8] {
        (0..<(packed.count * 8 / 5)).map { index in
            var value: UInt8 = 0
            for bit in 0..<5 {
                let position = index * 5 + bit
                if packed[position / 8] >> (position % 8) & 1 == 1 { value |= UInt8(1 << bit) }
            }
            return value
        }
    }

    /// `levels` packed five bits each, least significant bit first (step 3).
    package static func pack(_ levels: [UInt8]) -> [UInt8] {
        var packed = [UInt8](repeating: 0, count: (levels.count * 5 + 7) / 8)
        for (index, level) in levels.enumerated() {
            let value = Int(level & 31)
            for bit in 0..<5 where value >> bit & 1 == 1 {
                let position = index * 5 + bit
                packed[position / 8] |= UInt8(1 << (position % 8))
            }
        }
        return packed
    }
}
