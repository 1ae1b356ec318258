import Glibc

/// Makes video, voice notes and animations chat-ready with `ffmpeg` and `ffprobe` run as subprocesses.
///
/// - Video: H.264 (High, yuv420p) + AAC-LC in MP4 with the index (`moov`) first, long side at most
///   1280 px by default, even dimensions, rotation applied, frame rate capped, video bit rate capped
///   by the short side as Telegram does. A file that already complies is sent as it is, or only remuxed
///   when its index is at the end or it carries a location (remuxing drops the metadata). A poster frame
///   becomes the thumbnails.
/// - Voice: anything but Ogg/Opus becomes mono Ogg/Opus; every voice note gets Telegram's waveform
///   (`VoiceWaveform`).
/// - Animation: an animated GIF or APNG becomes a silent H.264 MP4; its first frame is the thumbnail.
///
/// Outputs are deterministic for a given ffmpeg (`-fflags +bitexact`: no random Ogg serial numbers, no
/// version strings), so a retried or resumed upload, which transforms the file again, sends the same bytes
/// under its idempotency key. Every run reads local files only (`-protocol_whitelist file,pipe`), under
/// `ProcessLimits`, after a probe has checked the input against the limits of ``MediaOptions`` (at most
/// 3 hours, 7680 × 4320 pixels and 16 streams by default). Blocking: call it from a pool thread.
///
/// ```swift
/// let converter = MediaConverter(options: MediaOptions(), ffmpeg: "/usr/bin/ffmpeg", ffprobe: "/usr/bin/ffprobe")
/// let result = try converter.convertVideo("clip.mov", workDirectory: scratch, thumbnailSides: [320, 40])
/// ```
public struct MediaConverter: Sendable {
    /// The options in use.
    package let options: MediaOptions
    /// The `ffmpeg` executable.
    package let ffmpeg: String
    /// The `ffprobe` executable.
    package let ffprobe: String

    /// Creates a converter that runs the given executables.
    package init(options: MediaOptions, ffmpeg: String, ffprobe: String) {
        self.options = options
        self.ffmpeg = ffmpeg
        self.ffprobe = ffprobe
    }

    /// A converter using `ffmpeg` and `ffprobe` from ``MediaOptions/ffmpegPath``/``MediaOptions/ffprobePath``
    /// or `PATH`; nil when either is missing.
    package static func locate(options: MediaOptions) -> MediaConverter? {
        guard let ffmpeg = ProcessRunner.find(options.ffmpegPath ?? "ffmpeg"),
              let ffprobe = ProcessRunner.find(options.ffprobePath ?? "ffprobe")
        else { return nil }
        return MediaConverter(options: options, ffmpeg: ffmpeg, ffprobe: ffprobe)
    }

    // MARK: - Probe and caps

    /// Probes `path` and checks it against the input caps.
    ///
    /// - Throws: ``AttacheError`` in stage `.transform` naming `path`: `.corruptInput` (unreadable, no
    ///   streams of the kind wanted), `.limitExceeded` (duration, pixels, streams, or the probe's limits).
    package func probe(_ path: String, requiring type: String? = nil) throws -> MediaProbe {
        let probe = try MediaProbe.probe(path, ffprobe: ffprobe, limits: options.probeLimits)
        if probe.streams.count > options.maxStreams {
            throw AttacheError(.limitExceeded, stage: .transform,
                               "the file has \(probe.streams.count) streams, over the limit of \(options.maxStreams)",
                               file: path)
        }
        if let duration = probe.duration, duration > options.maxDuration {
            throw AttacheError(.limitExceeded, stage: .transform,
                               "the file lasts \(Int(duration)) s, over the limit of \(Int(options.maxDuration)) s",
                               file: path)
        }
        for stream in probe.streams where stream.type == "video" {
            let pixels = (stream.width ?? 0) * (stream.height ?? 0)
            if pixels > options.maxPixels || (stream.width ?? 0) > 16384 || (stream.height ?? 0) > 16384 {
                throw AttacheError(.limitExceeded, stage: .transform,
                                   "a video stream is \(stream.width ?? 0)×\(stream.height ?? 0), over the limit of "
                                       + "\(options.maxPixels) pixels", file: path)
            }
        }
        if let type, !probe.streams.contains(where: { $0.type == type }) {
            throw AttacheError(.corruptInput, stage: .transform, "the file has no \(type) stream", file: path)
        }
        return probe
    }

    // MARK: - Video

    /// What a video needs: nothing, a remux (index to the front, extra streams dropped), or a new encode.
    public enum VideoPlan: String, Sendable, Codable {
        /// Already compliant, index first: sent as it is.
        case keep
        /// Compliant streams, copied into a new MP4 with the index first.
        case remux
        /// Encoded again.
        case encode
    }

    /// The output geometry and caps for a video stream shown at `width` × `height`.
    package struct VideoTarget: Equatable {
        package var width: Int
        package var height: Int
        package var maxFrameRate: Double
        package var videoBitRate: Int
    }

    /// The size, frame-rate cap and bit-rate cap for a picture displayed at `width` × `height`: fitted
    /// into ``VideoOptions/maxSide`` without enlarging, both sides even.
    package func target(width: Int, height: Int) -> VideoTarget {
        let longSide = max(width, height, 1)
        let scale = min(1.0, Double(options.video.maxSide) / Double(longSide))
        func even(_ side: Int) -> Int { max(2, Int((Double(side) * scale).rounded()) & ~1) }
        let (outWidth, outHeight) = (even(width), even(height))
        let shortSide = min(outWidth, outHeight)
        return VideoTarget(
            width: outWidth, height: outHeight,
            maxFrameRate: shortSide <= 480 ? options.video.maxFrameRateAt480 : options.video.maxFrameRate,
            videoBitRate: VideoOptions.bitRateCap(shortSide: shortSide))
    }

    /// Decides what `probe` of a video needs (``assess(_:fastStart:carriesLocation:)`` says why).
    package func plan(_ probe: MediaProbe, fastStart: Bool?, carriesLocation: Bool = false) -> (VideoPlan, VideoTarget)? {
        assess(probe, fastStart: fastStart, carriesLocation: carriesLocation).map { ($0.plan, $0.target) }
    }

    /// Converts the video at `path` into `workDirectory` (or leaves it), with a poster frame's thumbnails.
    ///
    /// - Throws: ``AttacheError`` in stage `.transform` naming `path`: `.corruptInput`, `.limitExceeded`
    ///   (caps, CPU time, memory, wall clock), `.nativeLibrary` (ffmpeg could not start).
    package func convertVideo(_ path: String, workDirectory: String, thumbnailSides: [Int]) throws -> MediaResult {
        let probe = try probe(path, requiring: "video")
        let fastStart = probe.isMP4Family ? MP4Layout.isFastStart(path) : nil
        // A location in the metadata, or a QuickTime brand, is reason enough to remux a compliant file.
        let location = probe.isMP4Family && (MP4Layout.carriesLocation(path) || MP4Layout.isQuickTime(path))
        guard let assessment = assess(probe, fastStart: fastStart, carriesLocation: location) else {
            throw AttacheError(.corruptInput, stage: .transform, "the video stream has no size", file: path)
        }
        let target = assessment.target
        var result = MediaResult(path: nil, mimeType: "video/mp4", filenameExtension: "mp4", plan: assessment.plan,
                                 width: target.width, height: target.height, duration: probe.duration,
                                 supportsStreaming: true)
        result.reason = Self.reason(assessment, plan: assessment.plan)
        let output = Self.workPath(for: path, in: workDirectory, extension: "mp4")
        if assessment.plan == .encode {
            try run(encodeArguments(input: path, output: output, probe: probe, target: target, silent: false,
                                    videoBitRate: encodeBitRate(assessment, duration: probe.duration),
                                    copyAudio: assessment.copiesAudio),
                    for: path, what: "convert the video", output: output, duration: probe.duration)
            result.path = output
            settle(&result, assessment: assessment, probe: probe, source: path)
        }
        if result.plan == .remux {
            try run(MediaCommand.common + ["-i", MediaCommand.inputURL(path), "-map", "0:v:0", "-map", "0:a:0?",
                                           "-c", "copy", "-map_metadata", "-1", "-map_chapters", "-1",
                                           "-movflags", "+faststart", "-fflags", "+bitexact", "-f", "mp4", "-y", MediaCommand.inputURL(output)],
                    for: path, what: "remux the video", output: output, duration: probe.duration)
            result.path = output
            let (remuxed, original) = (Self.byteCount(output), Self.byteCount(path))
            if remuxed > original {
                result.reason = (result.reason ?? "")
                    + "; larger than the source (\(remuxed) B > \(original) B), kept because "
                    + assessment.remuxReasons.joined(separator: "; ")
            }
        }
        if !thumbnailSides.isEmpty {
            let previews = try poster(of: result.path ?? path, sides: thumbnailSides, source: path)
            (result.thumbnails, result.placeholders) = (previews.thumbnails, previews.placeholders)
        }
        return result
    }

    /// The ffmpeg arguments of a video encode, as Attache runs them (also what the benchmark compares
    /// against by hand).
    ///
    /// `videoBitRate` is the `-maxrate` (with a buffer of one second of it): the cap when nil. With
    /// `copyAudio` the first audio stream is copied as it is (compliant AAC-LC), not encoded again.
    package func encodeArguments(input: String, output: String, probe: MediaProbe, target: VideoTarget,
                                 silent: Bool, videoBitRate: Int? = nil, copyAudio: Bool = false) -> [String] {
        var filters = ["scale=\(target.width):\(target.height):flags=bicubic"]
        if let rate = probe.video?.frameRate, rate > target.maxFrameRate + 0.01 {
            filters.append("fps=\(Int(target.maxFrameRate))")
        }
        filters.append("format=yuv420p")
        let video = options.video
        var arguments = MediaCommand.common + ["-i", MediaCommand.inputURL(input), "-map", "0:v:0"]
        if !silent, probe.audio != nil { arguments += ["-map", "0:a:0"] }
        arguments += [
            "-vf", filters.joined(separator: ","),
            "-c:v", "libx264", "-preset", video.encoderPreset, "-profile:v", "high", "-crf", String(video.crf),
            // One encoder thread: a resumed upload encodes the file again and must get the same bytes.
            // With more, x264's rate control under the bit-rate cap reads the other threads' progress as
            // it happens to be: frame threads give a different file nearly every run, and sliced threads
            // did on a loaded machine. A batch keeps both cores busy with several files at a time.
            "-threads", "1",
            "-maxrate", String(videoBitRate ?? target.videoBitRate),
            "-bufsize", String(videoBitRate ?? target.videoBitRate * 2),
        ]
        if silent || probe.audio == nil {
            arguments += ["-an"]
        } else if copyAudio {
            arguments += ["-c:a", "copy"]
        } else {
            let channels = min(probe.audio?.channels ?? 2, 2)
            // No more than the source's own audio rate either: an encode never adds bits it did not have.
            let rate = min(video.audioBitRate, 64_000 * channels, max(probe.audio?.bitRate ?? Int.max, 24_000))
            arguments += ["-c:a", "aac", "-b:a", String(rate), "-ac", String(channels)]
        }
        arguments += ["-sn", "-dn", "-map_metadata", "-1", "-map_chapters", "-1", "-movflags", "+faststart",
                      "-fflags", "+bitexact", "-f", "mp4", "-y", MediaCommand.inputURL(output)]
        return arguments
    }

    // MARK: - Animation

    /// Converts an animated GIF or APNG into a silent H.264 MP4, its first frame the thumbnail.
    ///
    /// - Throws: as ``convertVideo(_:workDirectory:thumbnailSides:)``.
    package func convertAnimation(_ path: String, workDirectory: String, thumbnailSides: [Int]) throws -> MediaResult {
        let probe = try probe(path, requiring: "video")
        guard let video = probe.video, let width = video.displayedWidth, let height = video.displayedHeight else {
            throw AttacheError(.corruptInput, stage: .transform, "the animation has no size", file: path)
        }
        let target = target(width: width, height: height)
        let output = Self.workPath(for: path, in: workDirectory, extension: "mp4")
        try run(encodeArguments(input: path, output: output, probe: probe, target: target, silent: true),
                for: path, what: "convert the animation", output: output, duration: probe.duration)
        var result = MediaResult(path: output, mimeType: "video/mp4", filenameExtension: "mp4", plan: .encode,
                                 width: target.width, height: target.height, duration: probe.duration,
                                 supportsStreaming: true)
        result.isAnimation = true
        result.reason = "encoded: an animation is sent as a silent H.264 MP4"
        let (encoded, source) = (Self.byteCount(output), Self.byteCount(path))
        if encoded >= source {
            result.reason! += "; larger than the source (\(encoded) B > \(source) B), kept because chat clients play it as MP4"
        }
        if !thumbnailSides.isEmpty {
            let previews = try poster(of: output, sides: thumbnailSides, source: path)
            (result.thumbnails, result.placeholders) = (previews.thumbnails, previews.placeholders)
        }
        return result
    }

    // MARK: - Voice

    /// Converts a voice note to mono Ogg/Opus (Ogg/Opus is left as it is) and computes its waveform.
    ///
    /// No probe: one ffmpeg run decodes the first audio stream once for both outputs, and the facts a
    /// probe would give come from that decode (the exact duration from the sample count) or from the file
    /// itself (Ogg/Opus from its first page). A probe costs ffprobe's start, ~0.1 s of CPU, a tenth of the
    /// conversion of a minute of speech. Only the first audio stream is decoded, and at most
    /// ``MediaOptions/maxDuration`` of it: a longer note is refused.
    ///
    /// - Throws: as ``convertVideo(_:workDirectory:thumbnailSides:)``; `.corruptInput` also when the file
    ///   has no audio stream.
    package func convertVoice(_ path: String, workDirectory: String) throws -> MediaResult {
        let keep = Self.isOggOpus(path)
        let voice = options.voice
        let pcm = Self.workPath(for: path, in: workDirectory, extension: "pcm")
        defer { unlink(pcm) }
        let output = Self.workPath(for: path, in: workDirectory, extension: "ogg")
        // A little over the cap is decoded, so that a note longer than the cap shows as such.
        let limit = ["-t", String(options.maxDuration + 1)]
        var arguments = MediaCommand.common + ["-i", MediaCommand.inputURL(path)]
        if !keep {
            arguments += ["-map", "0:a:0", "-vn", "-ac", "1", "-ar", String(voice.sampleRate), "-c:a", "libopus",
                          "-b:a", String(voice.bitRate), "-application", "voip", "-map_metadata", "-1"]
                + limit + ["-fflags", "+bitexact", "-f", "ogg", "-y", MediaCommand.inputURL(output)]
        }
        arguments += ["-map", "0:a:0", "-vn", "-ac", "1", "-ar", String(voice.sampleRate), "-c:a", "pcm_s16le"]
            + limit + ["-f", "s16le", "-y", MediaCommand.inputURL(pcm)]
        // No probe, so no duration to scale the limits by: voice is cheap (~1.5 % of real time here).
        try run(arguments, for: path, what: keep ? "decode the voice note" : "convert the voice note",
                output: keep ? nil : output)
        var info = stat()
        let sampleCount = stat(pcm, &info) == 0 ? Int(info.st_size) / 2 : 0
        let duration = Double(sampleCount) / Double(voice.sampleRate)
        guard duration <= options.maxDuration else {
            if !keep { unlink(output) }
            throw AttacheError(.limitExceeded, stage: .transform,
                               "the voice note lasts over \(Int(options.maxDuration)) s, the limit", file: path)
        }
        let peaks = try VoiceWaveform.peaks(ofPCMFileAt: pcm)
        var result = MediaResult(path: keep ? nil : output, mimeType: "audio/ogg",
                                 filenameExtension: keep ? nil : "ogg", plan: keep ? .keep : .encode, width: nil,
                                 height: nil, duration: duration, supportsStreaming: false)
        result.waveform = VoiceWaveform.pack(VoiceWaveform.levels(fromPeaks: peaks))
        if keep {
            result.reason = "compliant: already Ogg/Opus"
        } else {
            result.reason = "encoded: a voice note is sent as mono Ogg/Opus"
            let (encoded, source) = (Self.byteCount(output), Self.byteCount(path))
            if encoded >= source {
                result.reason! += "; larger than the source (\(encoded) B > \(source) B), kept because voice notes play only as Ogg/Opus"
            }
        }
        return result
    }

    /// Whether the file is Ogg with an Opus first stream: its first page (`OggS`) starts with `OpusHead`.
    static func isOggOpus(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 64)
        let count = head.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count >= 36, head[0..<4].elementsEqual("OggS".utf8) else { return false }
        // The page header is 27 bytes plus one lacing value per segment; the packet follows.
        let start = 27 + Int(head[26])
        return count >= start + 8 && head[start..<start + 8].elementsEqual("OpusHead".utf8)
    }

    // MARK: - Helpers

    /// The previews and placeholders of the first frame of the video or animation at `path`, as an
    /// upload makes them (`attache detect --placeholders`).
    /// - Throws: ``AttacheError`` when ffmpeg cannot take the frame or it cannot be decoded.
    package func posterPreviews(of path: String, sides: [Int]) throws -> ImagePreviews {
        try poster(of: path, sides: sides, source: path)
    }

    /// JPEG thumbnails of the first frame of `video` (rotation applied by ffmpeg).
    private func poster(of video: String, sides: [Int], source: String) throws -> ImagePreviews {
        guard let largest = sides.max() else { return ImagePreviews(thumbnails: [], placeholders: nil) }
        var png: [UInt8] = []
        let outcome = try ProcessRunner.run(
            ffmpeg,
            MediaCommand.common + ["-i", MediaCommand.inputURL(video), "-map", "0:v:0", "-frames:v", "1",
                                   // Fitted into `largest` without enlarging (the commas inside min() escaped for the filter graph).
                                   "-vf", "scale=w='min(\(largest)\\,iw)':h='min(\(largest)\\,ih)'"
                                       + ":force_original_aspect_ratio=decrease:flags=bicubic",
                                   "-f", "image2pipe", "-c:v", "png", "pipe:1"],
            limits: options.limits
        ) { chunk in
            png.append(contentsOf: chunk)
            return png.count < 16 << 20
        }
        guard outcome.succeeded, !png.isEmpty else {
            throw AttacheError(Self.code(for: outcome), stage: .transform,
                               "cannot take a poster frame: \(outcome.failureReason)", file: source)
        }
        var imageOptions = ImageRecompressor.Options.standard
        imageOptions.placeholders = options.placeholders
        let recompressor = ImageRecompressor(options: imageOptions)
        return try recompressor.previews(ofImage: png, sides: sides)
    }

    /// The limits of a conversion of `duration` seconds of media: ``MediaOptions/limits``, with CPU and
    /// wall-clock time raised to ``MediaOptions/secondsPerMediaSecond`` per second of media for a long file
    /// (the duration is the probe's, itself capped by ``MediaOptions/maxDuration``).
    package func limits(forDuration duration: Double?) -> ProcessLimits {
        var limits = options.limits
        let budget = (duration ?? 0) * options.secondsPerMediaSecond
        limits.cpuSeconds = max(limits.cpuSeconds, Int(budget.rounded(.up)))
        limits.wallSeconds = max(limits.wallSeconds, budget)
        return limits
    }

    /// Runs ffmpeg; on failure removes the partial `output` and throws.
    private func run(_ arguments: [String], for path: String, what: String, output: String?,
                     duration: Double? = nil) throws {
        let outcome = try ProcessRunner.run(ffmpeg, arguments, limits: limits(forDuration: duration))
        guard outcome.succeeded else {
            if let output { unlink(output) }
            throw AttacheError(Self.code(for: outcome), stage: .transform,
                               "ffmpeg cannot \(what): \(outcome.failureReason)", file: path)
        }
    }

    private static func code(for outcome: ProcessOutcome) -> AttacheError.Code {
        if outcome.timedOut { return .limitExceeded }
        switch outcome.signal {
        case .some(SIGXCPU), .some(SIGKILL), .some(SIGXFSZ): return .limitExceeded
        case .some: return .nativeLibrary
        case nil: return .corruptInput
        }
    }

    /// `<stem>-transformed.<extension>` in the work directory.
    static func workPath(for path: String, in workDirectory: String, extension: String) -> String {
        let stem = PathText.deletingExtension(PathText.lastComponent(path))
        return PathText.appending("\(stem.isEmpty ? "media" : stem)-transformed.\(`extension`)", to: workDirectory)
    }
}

/// What ``MediaConverter`` made of one file.
package struct MediaResult: Sendable {
    /// The new file in the work directory; nil when the input goes as it is.
    package var path: String?
    /// The media type of what is sent.
    package var mimeType: String
    /// The filename extension of a new file (`mp4`, `ogg`); nil when the input goes as it is.
    package var filenameExtension: String?
    /// What was done.
    package var plan: MediaConverter.VideoPlan
    /// The picture's width as sent, for video.
    package var width: Int?
    /// The picture's height as sent, for video.
    package var height: Int?
    /// Seconds.
    package var duration: Double?
    /// Whether a player can start before the whole file arrived (MP4 with `moov` first).
    package var supportsStreaming: Bool
    /// A GIF or APNG sent as a silent MP4.
    package var isAnimation = false
    /// Telegram's 63-byte waveform, for voice.
    package var waveform: [UInt8]?
    /// The poster frame's JPEG previews, for video and animations.
    package var thumbnails: [Thumbnail] = []
    /// The poster frame's placeholders, for video and animations.
    package var placeholders: Placeholders?
    /// Why ``plan`` ran: what the source lacked, and why a larger output was kept or dropped.
    package var reason: String?

    /// Creates a result.
    package init(path: String?, mimeType: String, filenameExtension: String?, plan: MediaConverter.VideoPlan,
                width: Int?, height: Int?, duration: Double?, supportsStreaming: Bool) {
        self.path = path
        self.mimeType = mimeType
        self.filenameExtension = filenameExtension
        self.plan = plan
        self.width = width
        self.height = height
        self.duration = duration
        self.supportsStreaming = supportsStreaming
    }
}
