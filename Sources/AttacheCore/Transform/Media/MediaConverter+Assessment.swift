import Glibc

/// What a video source lacks for a chat client, and so which path the converter takes and why: the rule
/// that media never gets worse.
///
/// - A source that plays everywhere (H.264 High/Main/Baseline 4:2:0 and AAC-LC in MP4) within the caps
///   goes byte for byte, or is only remuxed when its index is last, it carries a location or a QuickTime
///   brand, or it has streams beyond one video and one audio.
/// - Otherwise it is encoded, at no more than its own video bit rate (and the cap), its AAC copied when
///   that is already compliant. The encode is kept when it is smaller than the source, or when the source
///   breaks a cap or cannot be played (``VideoAssessment/breaks``); a rotation alone does not justify a
///   larger file (players apply the display matrix), so then the source goes as it would have without it.
extension MediaConverter {
    /// The converter's view of one video source.
    package struct VideoAssessment: Sendable {
        /// The path to try first.
        package var plan: VideoPlan
        /// The output geometry and caps.
        package var target: VideoTarget
        /// What makes the source unfit to send as it is: a cap it breaks (size, frame rate, bit rate, audio)
        /// or something a receiver cannot play (container, codec, profile, pixel format, odd sides). Any of
        /// them keeps an encode even when it is larger.
        package var breaks: [String] = []
        /// What an encode would improve but the source may keep: a display rotation.
        package var improvements: [String] = []
        /// Why a compliant source is remuxed rather than sent as it is.
        package var remuxReasons: [String] = []
        /// The source's video bit rate, bits per second, when the container or its size tells.
        package var sourceVideoBitRate: Int?
        /// Whether the source's audio is AAC-LC within the caps in an MP4, and so copied into an encode.
        package var copiesAudio = false
    }

    /// Assesses `probe` of a video whose index is first (`fastStart`) or not, and which may carry a
    /// location (or a QuickTime brand); nil when the video stream has no size.
    package func assess(_ probe: MediaProbe, fastStart: Bool?, carriesLocation: Bool = false) -> VideoAssessment? {
        guard let video = probe.video, let width = video.displayedWidth, let height = video.displayedHeight else {
            return nil
        }
        let target = target(width: width, height: height)
        var assessment = VideoAssessment(plan: .keep, target: target)
        let audios = probe.streams.filter { $0.type == "audio" }
        let audioBitRate = audios.compactMap(\.bitRate).reduce(0, +)
        assessment.sourceVideoBitRate = video.bitRate ?? probe.bitRate.map { max(0, $0 - audioBitRate) }

        var breaks: [String] = []
        if !probe.isMP4Family { breaks.append("container \(probe.formatName.split(separator: ",").first ?? "?") is not MP4") }
        if video.codec != "h264" { breaks.append("video codec \(video.codec) is not H.264") }
        if video.pixelFormat != "yuv420p" { breaks.append("pixel format \(video.pixelFormat ?? "?") is not yuv420p") }
        if !["High", "Main", "Baseline", "Constrained Baseline"].contains(video.profile ?? "") {
            breaks.append("H.264 profile \(video.profile ?? "?") is not High, Main or Baseline")
        }
        if max(width, height) > options.video.maxSide {
            breaks.append("\(width)×\(height) is over the \(options.video.maxSide) px side")
        } else if width != target.width || height != target.height {
            breaks.append("\(width)×\(height) has an odd side")
        }
        if let rate = video.frameRate, rate > target.maxFrameRate + 0.01 {
            breaks.append("\(Self.rate(rate)) fps is over the \(Int(target.maxFrameRate)) fps cap")
        }
        let videoBitRate = assessment.sourceVideoBitRate ?? Int.max
        if videoBitRate > target.videoBitRate {
            breaks.append(assessment.sourceVideoBitRate.map {
                "video \(Self.megabits($0)) Mbps is over the \(Self.megabits(target.videoBitRate)) Mbps cap"
            } ?? "the video bit rate is unknown")
        }
        for audio in audios {
            if audio.codec != "aac" || audio.profile != "LC" {
                breaks.append("audio \(audio.codec) \(audio.profile ?? "") is not AAC-LC".replacingDoubleSpaces)
            } else if (audio.bitRate ?? Int.max) > options.video.audioBitRate + 8000 {
                breaks.append("audio \(audio.bitRate.map { "\($0 / 1000) kbps" } ?? "of unknown rate") is over the "
                              + "\(options.video.audioBitRate / 1000) kbps cap")
            } else if (audio.channels ?? 3) > 2 {
                breaks.append("audio has \(audio.channels.map(String.init) ?? "unknown") channels")
            }
        }
        if let first = audios.first, first.codec == "aac", first.profile == "LC", probe.isMP4Family,
           (first.bitRate ?? Int.max) <= options.video.audioBitRate + 8000, (first.channels ?? 3) <= 2
        {
            assessment.copiesAudio = true
        }
        if video.rotation != 0 { assessment.improvements.append("rotated \(video.rotation)°") }

        if fastStart != true { assessment.remuxReasons.append("the index is after the media data") }
        if carriesLocation { assessment.remuxReasons.append("it carries a location or a QuickTime brand") }
        if probe.streams.count != 1 + min(audios.count, 1) || audios.count > 1 {
            assessment.remuxReasons.append("it has streams beyond one video and one audio")
        }
        assessment.breaks = breaks
        if !breaks.isEmpty || !assessment.improvements.isEmpty {
            assessment.plan = .encode
        } else if !assessment.remuxReasons.isEmpty {
            assessment.plan = .remux
        }
        return assessment
    }

    /// The video bit rate an encode of `assessment`'s source is given: the cap, or the source's own rate when
    /// lower, less the room a short clip's encoder buffer gives on top of it. x264 keeps any stretch of the
    /// stream within rate × time + buffer, and starts with the buffer 90 % full, so over a clip of `duration`
    /// seconds with a one-second buffer the average can reach rate × (1 + 0.9 / duration): the rate asked
    /// for is scaled down by that, so that the file's average stays within the limit.
    package func encodeBitRate(_ assessment: VideoAssessment, duration: Double?) -> Int {
        let limit = min(assessment.target.videoBitRate, assessment.sourceVideoBitRate ?? Int.max)
        let seconds = max(duration ?? 60, 0.5)
        return max(32_000, Int(Double(limit) * seconds / (seconds + 0.9)))
    }

    /// Why `assessment` took `plan`, for the receipt.
    package static func reason(_ assessment: VideoAssessment, plan: VideoPlan) -> String {
        switch plan {
        case .keep:
            return "compliant: H.264/AAC MP4 within the caps, index first"
        case .remux:
            return "compliant streams, remuxed: " + assessment.remuxReasons.joined(separator: "; ")
        case .encode:
            let cap = assessment.target.videoBitRate
            var limit = "the cap's \(megabits(cap))"
            if let source = assessment.sourceVideoBitRate, source < cap { limit = "the source's \(megabits(source))" }
            return "encoded: " + (assessment.breaks + assessment.improvements).joined(separator: "; ")
                + "; video at most \(limit) Mbps"
                + (assessment.copiesAudio ? ", audio copied" : "")
        }
    }

    /// Keeps the encode in `result` when it is smaller than the source, or when the source breaks a cap;
    /// otherwise deletes it and makes `result` the source as it would have gone without a rotation (kept,
    /// or to be remuxed). The reason says which, with both sizes.
    func settle(_ result: inout MediaResult, assessment: VideoAssessment, probe: MediaProbe, source: String) {
        guard let output = result.path else { return }
        let (encoded, original) = (Self.byteCount(output), Self.byteCount(source))
        guard encoded >= original else { return }
        guard assessment.breaks.isEmpty else {
            result.reason = Self.reason(assessment, plan: .encode)
                + "; larger than the source (\(encoded) B > \(original) B), kept because the source cannot go as it is"
            return
        }
        // Only a rotation asked for the encode, and it did not pay: players apply the display matrix.
        unlink(output)
        result.path = nil
        result.plan = assessment.remuxReasons.isEmpty ? .keep : .remux
        if let video = probe.video, let width = video.displayedWidth, let height = video.displayedHeight {
            (result.width, result.height) = (width, height)
        }
        result.reason = Self.reason(assessment, plan: result.plan)
            + "; an encode (\(encoded) B) was not smaller than the source (\(original) B), which breaks no cap: "
            + assessment.improvements.joined(separator: "; ") + " left to the player"
    }

    /// The size of the file at `path`, or 0 when it cannot be asked.
    static func byteCount(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    static func megabits(_ bitsPerSecond: Int) -> String {
        let tenths = (Double(bitsPerSecond) / 100_000).rounded()
        return "\(Int(tenths) / 10).\(Int(tenths) % 10)"
    }

    private static func rate(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(Double(Int(value * 100)) / 100)
    }
}

extension String {
    fileprivate var replacingDoubleSpaces: String { split(separator: " ").joined(separator: " ") }
}
