/// How video, voice and animations are converted, and the limits their helpers run under.
public struct MediaOptions: Sendable, Hashable, Codable {
    /// The `ffmpeg` to run; nil finds `ffmpeg` in `PATH`.
    public var ffmpegPath: String?
    /// The `ffprobe` to run; nil finds `ffprobe` in `PATH`.
    public var ffprobePath: String?
    /// Video settings.
    public var video = VideoOptions.standard
    /// Voice settings.
    public var voice = VoiceOptions.telegram
    /// Limits of every conversion run (raised for long files: ``secondsPerMediaSecond``).
    public var limits = ProcessLimits.conversion
    /// CPU and wall-clock seconds a video or animation conversion may take per second of media, when that
    /// is more than ``limits`` gives (a 30 s 1080p clip took 13 CPU seconds here): a two-hour film gets
    /// its time, a short file that makes the decoder loop does not.
    public var secondsPerMediaSecond = 4.0
    /// Limits of every probe.
    public var probeLimits = ProcessLimits.probe
    /// The longest input accepted, in seconds (3 hours).
    public var maxDuration = 3.0 * 3600
    /// The most pixels a video frame may have (8K UHD).
    public var maxPixels = 7680 * 4320
    /// The most streams an input may have.
    public var maxStreams = 16
    /// How a poster frame's placeholders are made; nil makes none. The Transform stage sets it from
    /// ``ImageRecompressor/Options/placeholders``.
    public var placeholders: PlaceholderOptions? = PlaceholderOptions()

    /// The defaults.
    public init() {}
}

/// How videos are encoded.
public struct VideoOptions: Sendable, Hashable, Codable {
    /// The longest side of the output (no enlarging).
    public var maxSide: Int
    /// The frame-rate cap.
    public var maxFrameRate = 60.0
    /// The frame-rate cap when the short side is at most 480.
    public var maxFrameRateAt480 = 30.0
    /// The audio bit rate cap, bits per second.
    public var audioBitRate = 128_000
    /// x264's constant rate factor (quality; lower is better), under the bit-rate cap.
    public var crf = 23
    /// x264's speed preset.
    public var encoderPreset = "veryfast"

    /// Creates options for a long side of `maxSide`.
    public init(maxSide: Int) { self.maxSide = maxSide }

    /// Long side 1280: 720p for a landscape 16:9 video. The default.
    public static let standard = VideoOptions(maxSide: 1280)
    /// Long side 1920: 1080p "HD".
    public static let hd = VideoOptions(maxSide: 1920)

    /// Telegram's video bit-rate cap for a short side: ≥ 1080: 6.8 Mbps, ≥ 720: 2.6, ≥ 480: 1.0, else 0.75.
    package static func bitRateCap(shortSide: Int) -> Int {
        switch shortSide {
        case 1080...: 6_800_000
        case 720...: 2_600_000
        case 480...: 1_000_000
        default: 750_000
        }
    }
}

/// How voice notes are encoded.
public struct VoiceOptions: Sendable, Hashable, Codable {
    /// Opus sample rate: 8000, 12000, 16000, 24000 or 48000.
    public var sampleRate: Int
    /// Opus bit rate, bits per second.
    public var bitRate: Int

    /// Creates voice options.
    public init(sampleRate: Int, bitRate: Int) {
        self.sampleRate = sampleRate
        self.bitRate = bitRate
    }

    /// Telegram's: 16 kHz, 16 kbps. The default.
    public static let telegram = VoiceOptions(sampleRate: 16_000, bitRate: 16_000)
    /// 48 kHz, 32 kbps.
    public static let high = VoiceOptions(sampleRate: 48_000, bitRate: 32_000)
}
