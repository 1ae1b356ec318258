/// What detection learned from a file's headers: sizes, duration, codecs.
///
/// Every property is optional: a value is present only when the headers state it (or it follows
/// from them cheaply, such as a constant-bitrate MP3's duration from its size). Nothing here comes
/// from decoding pixels or samples.
///
/// Width and height are the displayed size: a video whose track matrix rotates it by 90° reports
/// its sides swapped. For images the sides are as stored (before the EXIF orientation is applied),
/// as in the EXIF convention.
public struct MediaMetadata: Sendable, Hashable, Codable {
    /// Width in pixels (images, video).
    public var width: Int?
    /// Height in pixels (images, video).
    public var height: Int?
    /// EXIF orientation, 1–8 (1 = as stored), when the file states one.
    public var orientation: Int?
    /// Clockwise rotation in degrees (0, 90, 180, 270) a video player applies, from the track matrix.
    public var rotation: Int?
    /// Whether the image has an alpha channel or transparency.
    public var hasAlpha: Bool?
    /// Whether the image is animated (APNG, animated GIF/WebP/AVIF, HEIF sequence).
    public var isAnimated: Bool?
    /// Number of frames of an animation, when counting them was cheap.
    public var frameCount: Int?
    /// Duration in seconds (audio, video, animated stickers).
    public var duration: Double?
    /// The audio codec, in lower-case FFmpeg-style names: `opus`, `vorbis`, `aac`, `mp3`, `flac`,
    /// `pcm`, `amr_nb`, `amr_wb`, `alac`, ….
    public var audioCodec: String?
    /// The video codec: `h264`, `hevc`, `vp8`, `vp9`, `av1`, `theora`, `mpeg4`, ….
    public var videoCodec: String?
    /// Audio sample rate in Hz.
    public var sampleRate: Int?
    /// Audio channel count.
    public var channels: Int?
    /// The text encoding of a text file: `utf-8`, `utf-16le`, `utf-16be`, `utf-32le`, `utf-32be`,
    /// or `unknown-8bit` for text that is not valid UTF-8.
    public var textEncoding: String?
    /// The title an audio file's tags give (ID3 `TIT2`, Vorbis `TITLE`, MP4 `©nam`), as written there.
    public var title: String?
    /// The performer an audio file's tags give (ID3 `TPE1`, Vorbis `ARTIST`, MP4 `©ART`; the album
    /// artist when no performer is named).
    public var performer: String?
    /// The album an audio file's tags give (ID3 `TALB`, Vorbis `ALBUM`, MP4 `©alb`).
    public var album: String?

    /// Creates metadata; every field defaults to unknown.
    package init(
        width: Int? = nil, height: Int? = nil, orientation: Int? = nil, rotation: Int? = nil,
        hasAlpha: Bool? = nil, isAnimated: Bool? = nil, frameCount: Int? = nil,
        duration: Double? = nil, audioCodec: String? = nil, videoCodec: String? = nil,
        sampleRate: Int? = nil, channels: Int? = nil, textEncoding: String? = nil
    ) {
        self.width = width
        self.height = height
        self.orientation = orientation
        self.rotation = rotation
        self.hasAlpha = hasAlpha
        self.isAnimated = isAnimated
        self.frameCount = frameCount
        self.duration = duration
        self.audioCodec = audioCodec
        self.videoCodec = videoCodec
        self.sampleRate = sampleRate
        self.channels = channels
        self.textEncoding = textEncoding
    }

    /// Sets width and height only when both are plausible (positive, at most 2^24).
    mutating func setSize(_ width: Int?, _ height: Int?) {
        guard let width, let height, (1...(1 << 24)).contains(width), (1...(1 << 24)).contains(height)
        else { return }
        self.width = width
        self.height = height
    }

    /// Sets the duration only when it is finite, non-negative and under ten years.
    mutating func setDuration(_ seconds: Double?) {
        guard let seconds, seconds.isFinite, seconds >= 0, seconds < 315_360_000 else { return }
        duration = seconds
    }

    /// The metadata as ordered name/value pairs, with the stable names used for upload fields and
    /// JSON output.
    var fields: [(name: String, value: String)] {
        var result: [(String, String)] = []
        if let width { result.append(("width", String(width))) }
        if let height { result.append(("height", String(height))) }
        if let orientation { result.append(("orientation", String(orientation))) }
        if let rotation { result.append(("rotation", String(rotation))) }
        if let hasAlpha { result.append(("hasAlpha", String(hasAlpha))) }
        if let isAnimated { result.append(("isAnimated", String(isAnimated))) }
        if let frameCount { result.append(("frameCount", String(frameCount))) }
        if let duration { result.append(("duration", Self.format(duration))) }
        if let audioCodec { result.append(("audioCodec", audioCodec)) }
        if let videoCodec { result.append(("videoCodec", videoCodec)) }
        if let sampleRate { result.append(("sampleRate", String(sampleRate))) }
        if let channels { result.append(("channels", String(channels))) }
        if let textEncoding { result.append(("textEncoding", textEncoding)) }
        if let title { result.append(("title", title)) }
        if let performer { result.append(("performer", performer)) }
        if let album { result.append(("album", album)) }
        return result
    }

    /// Seconds with two decimals and no exponent: `3.52`, `0.00`, `3600.00`.
    package static func format(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "0.00" }
        let hundredths = Int64((min(max(seconds, 0), 1e15) * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
