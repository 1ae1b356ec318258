import Foundation
import Testing
@testable import AttacheCore

@Suite struct VoiceTests {
    /// The waveform rule written out again, plainly, from docs/FORMAT.md: 100 runs, peak |s| of each,
    /// scaled against max(2500, 1.8 × mean), 5 bits each, least significant bit first.
    static func expectedWaveform(_ samples: [Int16]) -> [UInt8] {
        let n = samples.count
        var levels: [Int] = []
        var peaks: [Double] = []
        for k in 0..<100 {
            let slice = samples[(k * n / 100)..<((k + 1) * n / 100)]
            peaks.append(Double(slice.map { abs(Int($0)) }.max() ?? 0))
        }
        let mean = peaks.reduce(0, +) / 100
        let scale = max(2500, 1.8 * mean)
        for peak in peaks { levels.append(min(31, Int(floor(peak * 31 / scale)))) }
        var bits = [Bool]()
        for level in levels { for b in 0..<5 { bits.append((level >> b) & 1 == 1) } }
        while bits.count < 63 * 8 { bits.append(false) }
        return (0..<63).map { byte in (0..<8).reduce(UInt8(0)) { $0 | (bits[byte * 8 + $1] ? 1 << $1 : 0) } }
    }

    static func tone(seconds: Double, rate: Int = 16_000, amplitude: Double, frequency: Double = 440,
                     during: ClosedRange<Double>? = nil) -> [Int16] {
        (0..<Int(seconds * Double(rate))).map { i in
            let t = Double(i) / Double(rate)
            if let during, !during.contains(t) { return 0 }
            return Int16((amplitude * sin(2 * .pi * frequency * t)).rounded())
        }
    }

    static func signal(_ name: String) -> [Int16] {
        switch name {
        case "silence": tone(seconds: 3, amplitude: 0)
        case "tone": tone(seconds: 3, amplitude: 12_000)
        case "burst": tone(seconds: 4, amplitude: 20_000, during: 1.0...2.2)
        default: tone(seconds: 2.5, amplitude: 900)
        }
    }

    @Test(arguments: ["silence", "tone", "burst", "quiet"])
    func waveformMatchesAnIndependentComputation(name: String) async throws {
        let samples = Self.signal(name)
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let wav = dir + "/\(name).wav"
        try MediaTools.wav(samples, rate: 16_000).write(to: URL(fileURLWithPath: wav))

        let result = try await MediaTools.converter().convertVoice(wav, workDirectory: dir)
        let waveform = try #require(result.waveform)
        #expect(waveform.count == 63)
        #expect(waveform == Self.expectedWaveform(samples))
        if name == "silence" { #expect(waveform.allSatisfy { $0 == 0 }) }
        if name == "tone" {
            // A steady tone: every level ⌊31 / 1.8⌋ = 17.
            #expect(VoiceWaveform.levels(fromPeaks: VoiceWaveform.peaks(of: samples)).allSatisfy { $0 == 17 })
        }

        let output = try #require(result.path)
        let probe = try await MediaTools.probe(output)
        #expect(probe.format["format_name"] == "ogg")
        #expect(probe.streams.count == 1 && probe.streams[0]["codec_name"] == "opus" && probe.streams[0]["channels"] == "1")
        let duration = try #require(Double(probe.format["duration"] ?? ""))
        #expect(abs(duration - Double(samples.count) / 16_000) <= 0.1)
        #expect(result.mimeType == "audio/ogg" && result.filenameExtension == "ogg")
        #expect(FileManager.default.fileExists(atPath: dir + "/\(name)-transformed.pcm") == false,
                "the decoded samples are removed")
    }

    @Test func oggOpusIsLeftAsItIsAndStillGetsAWaveform() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let samples = Self.tone(seconds: 2, amplitude: 8000, during: 0.5...1.5)
        let wav = dir + "/note.wav"
        try MediaTools.wav(samples, rate: 16_000).write(to: URL(fileURLWithPath: wav))
        let opus = dir + "/note.ogg"
        try await MediaTools.ffmpeg(["-i", wav, "-c:a", "libopus", "-b:a", "24k", opus])

        let result = try await MediaTools.converter().convertVoice(opus, workDirectory: dir)
        #expect(result.path == nil && result.plan == .keep)
        let waveform = try #require(result.waveform)
        func level(_ k: Int) -> Int {
            var value = 0
            for bit in 0..<5 {
                let position = k * 5 + bit
                let set = Int(waveform[position / 8] >> UInt8(position % 8)) & 1
                value |= set << bit
            }
            return value
        }
        let levels = (0..<100).map(level)
        #expect(levels[10] == 0 && levels[90] == 0, "silence before and after")
        #expect(levels[50] > 20, "the tone in the middle")
    }

    @Test func highPresetMakes48kHz() async throws {
        let dir = try TestImages.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let mp3 = dir + "/memo.mp3"
        try await MediaTools.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=200:sample_rate=44100:duration=1.5", "-ac", "2", mp3])
        let result = try await MediaTools.converter { $0.voice = .high }.convertVoice(mp3, workDirectory: dir)
        let probe = try await MediaTools.probe(try #require(result.path))
        #expect(probe.streams[0]["sample_rate"] == "48000" && probe.streams[0]["channels"] == "1")
        #expect(try #require(Int(probe.format["bit_rate"] ?? "")) < 48_000)
    }

    @Test func documentedVectors() {
        let packed = VoiceWaveform.pack((0..<100).map { UInt8($0 % 32) })
        #expect(Base64.encode(packed)
            == "IIhBijkoqcWaezDKSau9OOvNu/8giEGKOSipxZp7MMpJq7046827/yCIQYo5KKnFmnswykmrvTjrzbv/IIgB")
        let levels = VoiceWaveform.levels(fromPeaks: Array(repeating: 1000, count: 50) + Array(repeating: 20_000, count: 50))
        #expect(levels.first == 1 && levels.last == 31)
        #expect(VoiceWaveform.levels(fromPeaks: Array(repeating: 100, count: 100)) == Array(repeating: 1, count: 100),
                "quiet audio is scaled against 2500, not its own mean")
    }

    @Test func packingIsLeastSignificantBitFirst() {
        var levels = [UInt8](repeating: 0, count: 100)
        levels[0] = 0b10110
        levels[1] = 0b00001
        levels[99] = 31
        let packed = VoiceWaveform.pack(levels)
        #expect(packed.count == 63)
        #expect(packed[0] == 0b0011_0110, "level 0 in bits 0–4, level 1's low bit in bit 5")
        #expect(packed[61] == 0b1000_0000 && packed[62] == 0b0000_1111, "level 99 in bits 495–499")
    }
}
