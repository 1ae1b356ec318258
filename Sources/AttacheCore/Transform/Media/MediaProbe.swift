import Glibc

/// What `ffprobe` says about a media file: its container, streams, size, rotation and duration.
package struct MediaProbe: Sendable, Hashable, Codable {
    /// One stream of the file.
    package struct Stream: Sendable, Hashable, Codable {
        /// `video`, `audio`, `subtitle`, `data`, `attachment`.
        package var type: String
        /// FFmpeg's codec name: `h264`, `hevc`, `aac`, `opus`, `gif`, …
        package var codec: String
        /// The codec profile (`High`, `LC`), when it has one.
        package var profile: String?
        /// The pixel format (`yuv420p`), for video.
        package var pixelFormat: String?
        /// The coded width, for video (before rotation).
        package var width: Int?
        /// The coded height, for video (before rotation).
        package var height: Int?
        /// The average frame rate, for video.
        package var frameRate: Double?
        /// The stream's bit rate in bits per second, when the container says.
        package var bitRate: Int?
        /// Audio channels.
        package var channels: Int?
        /// Audio sample rate.
        package var sampleRate: Int?
        /// The display rotation in degrees clockwise (0, 90, 180, 270), from the display matrix or the
        /// `rotate` tag.
        package var rotation: Int

        /// Creates a stream description.
        package init(type: String, codec: String, profile: String? = nil, pixelFormat: String? = nil, width: Int? = nil,
                    height: Int? = nil, frameRate: Double? = nil, bitRate: Int? = nil, channels: Int? = nil,
                    sampleRate: Int? = nil, rotation: Int = 0) {
            self.type = type
            self.codec = codec
            self.profile = profile
            self.pixelFormat = pixelFormat
            self.width = width
            self.height = height
            self.frameRate = frameRate
            self.bitRate = bitRate
            self.channels = channels
            self.sampleRate = sampleRate
            self.rotation = rotation
        }

        /// The width as displayed (after rotation).
        package var displayedWidth: Int? { rotation % 180 == 0 ? width : height }
        /// The height as displayed (after rotation).
        package var displayedHeight: Int? { rotation % 180 == 0 ? height : width }
    }

    /// FFmpeg's demuxer names (`mov,mp4,m4a,3gp,3g2,mj2`, `ogg`, `gif`).
    package var formatName: String
    /// Seconds, when known.
    package var duration: Double?
    /// The whole file's bit rate, when known.
    package var bitRate: Int?
    /// Every stream, in file order.
    package var streams: [Stream]

    /// Creates a probe result.
    package init(formatName: String, duration: Double?, bitRate: Int?, streams: [Stream]) {
        self.formatName = formatName
        self.duration = duration
        self.bitRate = bitRate
        self.streams = streams
    }

    /// The first video stream (attached cover pictures included: check the codec).
    package var video: Stream? { streams.first { $0.type == "video" } }
    /// The first audio stream.
    package var audio: Stream? { streams.first { $0.type == "audio" } }

    /// Whether the container is MP4/QuickTime (the family FFmpeg's `mov` demuxer reads).
    package var isMP4Family: Bool { formatName.split(separator: ",").contains("mp4") }

    /// The entries `ffprobe` is asked for, no more: a probe of a hostile file reads headers only.
    static let entries =
        "format=format_name,duration,bit_rate:stream=codec_type,codec_name,profile,pix_fmt,width,height,"
        + "avg_frame_rate,bit_rate,channels,sample_rate:stream_tags=rotate:stream_side_data=rotation"

    /// Runs `ffprobe` on `path` under `limits`, reading local files only.
    ///
    /// - Throws: ``AttacheError`` in stage `.transform` naming `path`: `.corruptInput` when ffprobe cannot
    ///   read it, `.limitExceeded` when it runs out of time or memory, `.nativeLibrary` when it cannot start.
    package static func probe(_ path: String, ffprobe: String, limits: ProcessLimits = .probe) throws -> MediaProbe {
        var output: [UInt8] = []
        let outcome = try ProcessRunner.run(
            ffprobe,
            ["-hide_banner", "-v", "error", "-protocol_whitelist", "file", "-show_entries", entries,
             "-of", "flat", MediaCommand.inputURL(path)],
            limits: limits
        ) { chunk in
            output.append(contentsOf: chunk)
            return output.count < 1 << 20
        }
        guard outcome.succeeded else {
            let code: AttacheError.Code = outcome.timedOut || outcome.signal != nil ? .limitExceeded : .corruptInput
            throw AttacheError(code, stage: .transform, "ffprobe cannot read the file: \(outcome.failureReason)",
                               file: path)
        }
        guard let probe = parse(flat: String(decoding: output, as: UTF8.self)) else {
            throw AttacheError(.corruptInput, stage: .transform, "ffprobe found no media streams", file: path)
        }
        return probe
    }

    /// Reads `ffprobe -of flat` output (`streams.stream.0.codec_name="h264"`); nil without a format line.
    package static func parse(flat text: String) -> MediaProbe? {
        var format: [String: String] = [:]
        var streams: [Int: [String: String]] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals]
            var value = line[line.index(after: equals)...]
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = value.dropFirst().dropLast() }
            let parts = key.split(separator: ".")
            if parts.count == 2, parts[0] == "format" {
                format[String(parts[1])] = String(value)
            } else if parts.count >= 4, parts[0] == "streams", parts[1] == "stream", let index = Int(parts[2]) {
                // Side data (`side_data_list.side_data.0.rotation`) and tags (`tags.rotate`) by their last name.
                let name = parts.count == 4 ? String(parts[3]) : "\(parts[3]).\(parts[parts.count - 1])"
                streams[index, default: [:]][name] = String(value)
            }
        }
        guard let formatName = format["format_name"] else { return nil }
        let list = streams.keys.sorted().compactMap { index -> Stream? in
            guard let fields = streams[index], let type = fields["codec_type"] else { return nil }
            var rotation = 0
            if let side = fields["side_data_list.rotation"].flatMap(Double.init) {
                // The display matrix's angle is counter-clockwise; -90 means "turn 90° clockwise to show".
                rotation = Int((-side).rounded())
            } else if let tag = fields["tags.rotate"].flatMap(Int.init) {
                rotation = tag
            }
            rotation = ((rotation % 360) + 360) % 360
            return Stream(
                type: type, codec: fields["codec_name"] ?? "unknown", profile: fields["profile"],
                pixelFormat: fields["pix_fmt"], width: fields["width"].flatMap(Int.init),
                height: fields["height"].flatMap(Int.init), frameRate: fields["avg_frame_rate"].flatMap(rate),
                bitRate: fields["bit_rate"].flatMap(Int.init), channels: fields["channels"].flatMap(Int.init),
                sampleRate: fields["sample_rate"].flatMap(Int.init), rotation: rotation)
        }
        return MediaProbe(
            formatName: formatName, duration: format["duration"].flatMap(Double.init),
            bitRate: format["bit_rate"].flatMap(Int.init), streams: list)
    }

    /// `30000/1001` → 29.97; nil for `0/0`.
    private static func rate(_ text: String) -> Double? {
        let parts = text.split(separator: "/")
        if parts.count == 1 { return Double(parts[0]) }
        guard parts.count == 2, let numerator = Double(parts[0]), let denominator = Double(parts[1]), denominator > 0,
              numerator > 0
        else { return nil }
        return numerator / denominator
    }
}

/// Where an MP4's top-level boxes are: whether `moov` (the index) comes before `mdat` (the media), which
/// is what lets a player start before the whole file arrived ("fast start").
package enum MP4Layout {
    /// Atoms that place a video on a map: QuickTime's `©xyz`, 3GPP's `loci`, and Apple's
    /// `com.apple.quicktime.location.ISO6709` key.
    static let locationMarkers: [[UInt8]] = [[0xA9] + Array("xyz".utf8), Array("loci".utf8),
                                             Array("location.ISO6709".utf8)]

    /// Whether the `moov` box (read up to 32 MiB) carries a location: such a file is remuxed, which drops
    /// its metadata, rather than sent as it is.
    package static func carriesLocation(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard let (offset, size) = moovBox(fd) else { return false }
        let length = Int(min(size, 32 << 20))
        var bytes = [UInt8](repeating: 0, count: length)
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, length, offset) }
        guard count > 0 else { return false }
        let moov = bytes[0..<count]
        return locationMarkers.contains { marker in
            var index = moov.startIndex
            while let first = moov[index...].firstIndex(of: marker[0]) {
                if moov[first...].starts(with: marker) { return true }
                index = moov.index(after: first)
            }
            return false
        }
    }

    /// Whether the file is QuickTime rather than MP4: its `ftyp` names the `qt  ` brand first, or it has
    /// no `ftyp` at all. Chats expect MP4, so such a file is remuxed even when its streams comply.
    package static func isQuickTime(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 12)
        let count = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 12, 0) }
        guard count == 12, header[4..<8].elementsEqual("ftyp".utf8) else { return true }
        return header[8..<12].elementsEqual("qt  ".utf8)
    }

    /// The `moov` box's offset and size.
    private static func moovBox(_ fd: Int32) -> (off_t, UInt64)? {
        var offset: off_t = 0
        var header = [UInt8](repeating: 0, count: 16)
        for _ in 0..<64 {
            let count = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 16, offset) }
            guard count >= 8 else { return nil }
            var size = header[0..<4].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if size == 1, count == 16 { size = header[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
            guard size >= 8, size < UInt64(Int64.max) - UInt64(offset) else { return nil }
            if header[4..<8].elementsEqual("moov".utf8) { return (offset, size) }
            offset += off_t(size)
        }
        return nil
    }

    /// True when `moov` comes before the first `mdat`; false when after; nil when the file has no such
    /// boxes or cannot be read.
    package static func isFastStart(_ path: String) -> Bool? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var offset: off_t = 0
        var header = [UInt8](repeating: 0, count: 16)
        for _ in 0..<64 {
            let count = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 16, offset) }
            guard count >= 8 else { return nil }
            let size32 = header[0..<4].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let type = String(decoding: header[4..<8], as: UTF8.self)
            if type == "moov" { return true }
            if type == "mdat" { return false }
            var size = size32
            if size32 == 1 {
                guard count == 16 else { return nil }
                size = header[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            } else if size32 == 0 {
                return nil
            }
            guard size >= 8, size < UInt64(Int64.max) - UInt64(offset) else { return nil }
            offset += off_t(size)
        }
        return nil
    }
}

/// Shared pieces of the ffmpeg command lines.
package enum MediaCommand {
    /// The input as a `file:` URL, so that a name starting with `-`, or one with a colon that would read
    /// as a protocol, stays a local file name.
    package static func inputURL(_ path: String) -> String {
        "file:" + path
    }

    /// The options every ffmpeg run starts with: quiet, no standard input, local files only.
    package static let common = [
        "-nostdin", "-hide_banner", "-loglevel", "error", "-protocol_whitelist", "file,pipe",
    ]
}
