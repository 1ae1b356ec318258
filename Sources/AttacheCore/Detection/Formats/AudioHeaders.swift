import Glibc

/// Header parsers for audio formats and the RIFF family. Durations come from headers (Xing/VBRI,
/// STREAMINFO, `fmt `+`data`, COMM, `pakt`, the last Ogg page) or from frame walks bounded by the
/// source's read budget.
enum AudioHeaders {
    // MARK: MPEG audio (MP3) and ADTS (AAC)

    struct MPEGFrame {
        var sampleRate: Int
        var bitRate: Int  // bits per second
        var length: Int
        var samples: Int
        var channels: Int
        var isVersion1: Bool
        var layer: Int

        private static let bitRates: [[Int]] = [
            [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],  // V1 L1
            [32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],  // V1 L2
            [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],  // V1 L3
            [32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],  // V2 L1
            [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],  // V2 L2/L3
        ]

        init?(_ b: ByteSpan, at offset: Int) {
            guard b.has(4, at: offset), b[offset] == 0xFF, b[offset + 1] & 0xE0 == 0xE0 else { return nil }
            let version = Int(b[offset + 1] >> 3) & 3  // 0: 2.5, 2: 2, 3: 1
            let layerBits = Int(b[offset + 1] >> 1) & 3  // 1: III, 2: II, 3: I
            let bitRateIndex = Int(b[offset + 2] >> 4)
            let rateIndex = Int(b[offset + 2] >> 2) & 3
            guard version != 1, layerBits != 0, bitRateIndex != 0, bitRateIndex != 15, rateIndex != 3 else {
                return nil
            }
            layer = 4 - layerBits
            isVersion1 = version == 3
            let baseRate = rateIndex == 0 ? 44100 : rateIndex == 1 ? 48000 : 32000
            sampleRate = baseRate >> (version == 3 ? 0 : version == 2 ? 1 : 2)
            let table = isVersion1 ? layer - 1 : (layer == 1 ? 3 : 4)
            bitRate = Self.bitRates[table][bitRateIndex - 1] * 1000
            let padding = Int(b[offset + 2] >> 1) & 1
            switch layer {
            case 1:
                length = (12 * bitRate / sampleRate + padding) * 4
                samples = 384
            case 2:
                length = 144 * bitRate / sampleRate + padding
                samples = 1152
            default:
                length = (isVersion1 ? 144 : 72) * bitRate / sampleRate + padding
                samples = isVersion1 ? 1152 : 576
            }
            channels = b[offset + 3] >> 6 == 3 ? 1 : 2
        }
    }

    /// MPEG audio starting at `start` (after any ID3 tag). A frame must be followed by another frame
    /// header unless the content ends first, which keeps random `FF Ex` bytes from matching.
    static func mpegAudio(_ source: SniffSource, at start: Int64) -> Sniffed? {
        let window = source.bytes(at: start, count: 4096)
        guard let frame = MPEGFrame(window, at: 0), frame.length >= 24 else { return nil }
        let next = source.bytes(at: start + Int64(frame.length), count: 4)
        if next.count == 4 {
            guard MPEGFrame(next, at: 0) != nil else { return nil }
        } else if start + Int64(frame.length) < source.length - 4 {
            return nil
        }
        var result = Sniffed(mimeType: "audio/mpeg")
        result.metadata.audioCodec = frame.layer == 3 ? "mp3" : frame.layer == 2 ? "mp2" : "mp1"
        result.metadata.sampleRate = frame.sampleRate
        result.metadata.channels = frame.channels
        // A Xing/Info or VBRI header in the first frame gives the frame count of a VBR file.
        let sideInfo = frame.isVersion1 ? (frame.channels == 1 ? 17 : 32) : (frame.channels == 1 ? 9 : 17)
        let xing = 4 + sideInfo
        if window.matches("Xing", at: xing) || window.matches("Info", at: xing),
            let flags = window.be32(xing + 4), flags & 1 != 0, let frames = window.be32(xing + 8)
        {
            result.metadata.setDuration(Double(frames * frame.samples) / Double(frame.sampleRate))
        } else if window.matches("VBRI", at: 36), let frames = window.be32(36 + 14) {
            result.metadata.setDuration(Double(frames * frame.samples) / Double(frame.sampleRate))
        } else if let size = source.size {
            var audioBytes = size - start
            if size >= 128, source.bytes(at: size - 128, count: 3).matches("TAG") { audioBytes -= 128 }
            result.metadata.setDuration(Double(audioBytes) * 8 / Double(frame.bitRate))
        }
        result.metadata.apply(AudioTags.id3v1(source))
        return result
    }

    struct ADTSFrame {
        var sampleRate: Int
        var channels: Int
        var length: Int

        private static let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

        init?(_ b: ByteSpan, at offset: Int) {
            guard b.has(7, at: offset), b[offset] == 0xFF, b[offset + 1] & 0xF6 == 0xF0 else { return nil }
            let rateIndex = Int(b[offset + 2] >> 2) & 0xF
            guard rateIndex < Self.rates.count else { return nil }
            sampleRate = Self.rates[rateIndex]
            channels = (Int(b[offset + 2] & 1) << 2) | Int(b[offset + 3] >> 6)
            length = (Int(b[offset + 3] & 3) << 11) | (Int(b[offset + 4]) << 3) | Int(b[offset + 5] >> 5)
            guard length >= 7 else { return nil }
        }
    }

    /// AAC in ADTS frames. The duration counts frames while the budget lasts and extrapolates from
    /// the mean frame length beyond that.
    static func adts(_ source: SniffSource, at start: Int64) -> Sniffed? {
        let first = source.bytes(at: start, count: 7)
        guard let frame = ADTSFrame(first, at: 0) else { return nil }
        let second = source.bytes(at: start + Int64(frame.length), count: 7)
        if second.count == 7 {
            guard ADTSFrame(second, at: 0) != nil else { return nil }
        } else if start + Int64(frame.length) < source.length - 7 {
            return nil
        }
        var result = Sniffed(mimeType: "audio/aac")
        result.metadata.audioCodec = "aac"
        result.metadata.sampleRate = frame.sampleRate
        if frame.channels > 0 { result.metadata.channels = frame.channels }
        guard let size = source.size else { return result }
        var cursor = ByteCursor(source, at: start)
        var frames = 0
        while frames < 100_000, let header = cursor.peek(7), let next = ADTSFrame(header, at: 0) {
            frames += 1
            guard cursor.skip(Int64(next.length)) else { break }
        }
        guard frames > 0 else { return result }
        let walked = cursor.offset - start
        let estimated = walked >= size - start ? Double(frames) : Double(size - start) / (Double(walked) / Double(frames))
        result.metadata.setDuration(estimated * 1024 / Double(frame.sampleRate))
        return result
    }

    /// The length of an ID3v2 tag at `offset`, or nil when there is none.
    static func id3Length(_ bytes: ByteSpan, at offset: Int = 0) -> Int? {
        guard bytes.matches("ID3", at: offset), let flags = bytes.u8(offset + 5) else { return nil }
        var size = 0
        for index in 6..<10 {
            guard let byte = bytes.u8(offset + index), byte < 0x80 else { return nil }
            size = size << 7 | byte
        }
        return 10 + size + (flags & 0x10 != 0 ? 10 : 0)
    }

    /// A file starting with an ID3v2 tag: MP3 usually, but AAC and FLAC are tagged the same way.
    static func id3Tagged(_ source: SniffSource) -> Sniffed? {
        guard let tagLength = id3Length(source.head) else { return nil }
        var start = Int64(tagLength)
        // Some taggers write two tags or pad with zeros; skip a little of either.
        var probe = source.bytes(at: start, count: 16)
        if let second = id3Length(probe) {
            start += Int64(second)
            probe = source.bytes(at: start, count: 16)
        }
        var zeros = 0
        while zeros < 4096, zeros < probe.count, probe[zeros] == 0 {
            zeros += 1
            if zeros == probe.count {
                start += Int64(zeros)
                zeros = 0
                probe = source.bytes(at: start, count: 256)
                if probe.isEmpty { break }
            }
        }
        start += Int64(zeros)
        var result: Sniffed
        if source.bytes(at: start, count: 4).matches("fLaC"), let found = flac(source, at: start) {
            result = found
        } else if let aac = adts(source, at: start) {
            result = aac
        } else if let mp3 = mpegAudio(source, at: start) {
            result = mp3
        } else {
            // A tag followed by something unrecognisable is still most likely an MP3.
            result = Sniffed(mimeType: "audio/mpeg")
            result.inconclusive = true
        }
        // The leading tag's text wins over an ID3v1 tag or Vorbis comments found further on.
        let tag = AudioTags.id3v2(source.bytes(at: 0, count: min(tagLength, AudioTags.readLimit)))
        result.metadata.title = tag.title ?? result.metadata.title
        result.metadata.performer = tag.performer ?? result.metadata.performer
        result.metadata.album = tag.album ?? result.metadata.album
        return result
    }

    // MARK: FLAC

    static func flac(_ source: SniffSource, at start: Int64 = 0) -> Sniffed? {
        let b = source.bytes(at: start, count: 42)
        guard b.matches("fLaC") else { return nil }
        var result = Sniffed(mimeType: "audio/flac")
        result.metadata.audioCodec = "flac"
        if let info = streamInfo(b, at: 8), b.u8(4).map({ $0 & 0x7F }) == 0 { result.metadata.apply(info) }
        result.metadata.apply(AudioTags.flacComments(source, at: start))
        return result
    }

    /// Sample rate, channels and duration from a FLAC STREAMINFO block body at `offset`.
    static func streamInfo(_ b: ByteSpan, at offset: Int) -> (rate: Int, channels: Int, duration: Double?)? {
        guard b.has(18, at: offset) else { return nil }
        let p = offset + 10
        let rate = Int(b[p]) << 12 | Int(b[p + 1]) << 4 | Int(b[p + 2]) >> 4
        let channels = Int(b[p + 2] >> 1) & 7 + 1
        let total = Int(b[p + 3] & 0x0F) << 32 | (b.be32(p + 4) ?? 0)
        guard rate > 0 else { return nil }
        return (rate, channels, total > 0 ? Double(total) / Double(rate) : nil)
    }

    // MARK: RIFF: WAV and AVI

    static func wav(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.matches("RIFF") || head.matches("RF64") || head.matches("RIFX"), head.matches("WAVE", at: 8)
        else { return nil }
        var result = Sniffed(mimeType: "audio/wav")
        let big = head.matches("RIFX")
        var byteRate = 0
        var dataSize: Int64?
        var offset: Int64 = 12
        for _ in 0..<64 {
            let chunk = source.bytes(at: offset, count: 40)
            guard let type = chunk.be32(0).map(UInt32.init), let size32 = big ? chunk.be32(4) : chunk.le32(4) else { break }
            var size = Int64(size32)
            switch type {
            case fourCharCode("ds64"):
                if let data = chunk.le64(16), data < UInt64(Int64.max) { dataSize = Int64(data) }
            case fourCharCode("fmt "):
                let u16 = { (o: Int) in big ? chunk.be16(o) : chunk.le16(o) }
                let u32 = { (o: Int) in big ? chunk.be32(o) : chunk.le32(o) }
                var format = u16(8) ?? 0
                if format == 0xFFFE, let sub = u16(8 + 24) { format = sub }
                result.metadata.channels = u16(10)
                result.metadata.sampleRate = u32(12)
                byteRate = u32(16) ?? 0
                result.metadata.audioCodec = wavCodec(format)
            case fourCharCode("data"):
                let available = source.length - offset - 8
                if size32 == 0xFFFF_FFFF || dataSize == nil { dataSize = min(size, available) }
                if let given = dataSize { dataSize = min(given, available) }
                size = 0
            default:
                break
            }
            if type == fourCharCode("data") { break }
            offset += 8 + size + (size & 1)
        }
        if let dataSize, byteRate > 0 { result.metadata.setDuration(Double(dataSize) / Double(byteRate)) }
        return result
    }

    private static func wavCodec(_ format: Int) -> String {
        switch format {
        case 1: return "pcm"
        case 3: return "pcm_float"
        case 2, 0x11: return "adpcm"
        case 6: return "pcm_alaw"
        case 7: return "pcm_mulaw"
        case 0x31: return "gsm"
        case 0x55: return "mp3"
        case 0xFF, 0x1610: return "aac"
        default: return "0x" + String(format, radix: 16)
        }
    }

    static func avi(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.matches("RIFF"), head.matches("AVI ", at: 8) else { return nil }
        var result = Sniffed(mimeType: "video/x-msvideo")
        if head.matches("LIST", at: 12), head.matches("hdrl", at: 20), head.matches("avih", at: 24),
            let microseconds = head.le32(32), let frames = head.le32(48)
        {
            result.metadata.setSize(head.le32(64), head.le32(68))
            result.metadata.setDuration(Double(frames) * Double(microseconds) / 1_000_000)
        }
        if let strh = head.firstIndex(of: "strhvids", in: 0..<head.count), let handler = head.fourCC(strh + 12) {
            let name = handler.lowercased().trimmingWhiteSpace
            if !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
                result.metadata.videoCodec = name
            }
        }
        return result
    }

    // MARK: AIFF

    static func aiff(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.matches("FORM"), head.matches("AIFF", at: 8) || head.matches("AIFC", at: 8) else { return nil }
        var result = Sniffed(mimeType: "audio/aiff")
        result.metadata.audioCodec = head.matches("AIFF", at: 8) ? "pcm" : nil
        var offset: Int64 = 12
        for _ in 0..<64 {
            let chunk = source.bytes(at: offset, count: 26)
            guard let type = chunk.fourCC(0), let size = chunk.be32(4) else { break }
            if type == "COMM", let channels = chunk.be16(8), let frames = chunk.be32(10),
                let exponent = chunk.be16(16), let mantissa = chunk.be64(18)
            {
                // The sample rate is an 80-bit IEEE extended float.
                let rate = Double(mantissa) * pow2(Int(exponent & 0x7FFF) - 16383 - 63)
                result.metadata.channels = channels
                if rate.isFinite, rate >= 1, rate < 10_000_000 {
                    result.metadata.sampleRate = Int(rate)
                    result.metadata.setDuration(Double(frames) / rate)
                }
                break
            }
            offset += 8 + Int64(size) + Int64(size & 1)
        }
        return result
    }

    private static func pow2(_ exponent: Int) -> Double {
        guard exponent > -1000, exponent < 1000 else { return .nan }
        var value = 1.0
        if exponent >= 0 { for _ in 0..<exponent { value *= 2 } } else { for _ in 0 ..< -exponent { value /= 2 } }
        return value
    }

    // MARK: AMR

    private static let amrNarrowSizes = [13, 14, 16, 18, 20, 21, 27, 32, 6, 1, 1, 1, 1, 1, 1, 1]
    private static let amrWideSizes = [18, 24, 33, 37, 41, 47, 51, 59, 61, 6, 1, 1, 1, 1, 1, 1]

    /// AMR and AMR-WB storage format: a magic line, then frames of 20 ms whose size the first byte
    /// states.
    static func amr(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        let wide: Bool
        let start: Int64
        if head.matches("#!AMR\n") {
            wide = false
            start = 6
        } else if head.matches("#!AMR-WB\n") {
            wide = true
            start = 9
        } else {
            return nil
        }
        var result = Sniffed(mimeType: wide ? "audio/amr-wb" : "audio/amr")
        result.metadata.audioCodec = wide ? "amr_wb" : "amr_nb"
        result.metadata.sampleRate = wide ? 16000 : 8000
        result.metadata.channels = 1
        let sizes = wide ? amrWideSizes : amrNarrowSizes
        var cursor = ByteCursor(source, at: start)
        var frames = 0
        while frames < 1_000_000, let toc = cursor.byte() {
            frames += 1
            guard cursor.skip(Int64(sizes[Int(toc >> 3) & 0x0F] - 1)) else { break }
        }
        if let size = source.size, frames > 0 {
            let walked = cursor.offset - start
            let total = walked >= size - start ? Double(frames) : Double(size - start) * Double(frames) / Double(walked)
            result.metadata.setDuration(total * 0.02)
        }
        return result
    }

    // MARK: CAF

    static func caf(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.matches("caff"), head.be16(4) == 1 else { return nil }
        var result = Sniffed(mimeType: "audio/x-caf")
        var rate = 0.0
        var bytesPerPacket = 0
        var framesPerPacket = 0
        var validFrames: Int64?
        var dataBytes: Int64?
        var offset: Int64 = 8
        for _ in 0..<64 {
            let chunk = source.bytes(at: offset, count: 44)
            guard let type = chunk.fourCC(0), let raw = chunk.be64(4) else { break }
            let size = Int64(bitPattern: raw)
            switch type {
            case "desc":
                if let bits = chunk.be64(12) { rate = Double(bitPattern: bits) }
                result.metadata.audioCodec = cafCodec(chunk.fourCC(20) ?? "")
                bytesPerPacket = chunk.be32(28) ?? 0
                framesPerPacket = chunk.be32(32) ?? 0
                result.metadata.channels = chunk.be32(36)
                if rate.isFinite, rate >= 1, rate < 10_000_000 { result.metadata.sampleRate = Int(rate) }
            case "pakt":
                if let frames = chunk.be64(20), frames < UInt64(Int64.max) { validFrames = Int64(frames) }
            case "data":
                let available = source.length - offset - 12 - 4  // 4 bytes of edit count
                dataBytes = size < 0 ? available : min(size - 4, available)
            default:
                break
            }
            guard size >= 0, size <= source.length else { break }
            offset += 12 + size
        }
        if rate >= 1 {
            if let validFrames {
                result.metadata.setDuration(Double(validFrames) / rate)
            } else if let dataBytes, bytesPerPacket > 0, framesPerPacket > 0 {
                let packets = Double(dataBytes / Int64(bytesPerPacket))
                result.metadata.setDuration(packets * Double(framesPerPacket) / rate)
            }
        }
        return result
    }

    private static func cafCodec(_ format: String) -> String? {
        switch format {
        case "lpcm": return "pcm"
        case "aac ": return "aac"
        case "opus": return "opus"
        case "alac": return "alac"
        case "ima4": return "adpcm_ima"
        case "samr": return "amr_nb"
        case "sawb": return "amr_wb"
        case "ulaw": return "pcm_mulaw"
        case "alaw": return "pcm_alaw"
        case ".mp3": return "mp3"
        case "flac": return "flac"
        default: return format.isEmpty ? nil : format.trimmingWhiteSpace
        }
    }

    // MARK: MIDI

    static func midi(_ source: SniffSource) -> Sniffed? {
        source.head.matches("MThd") && source.head.be32(4) == 6 ? Sniffed(mimeType: "audio/midi") : nil
    }
}

extension MediaMetadata {
    mutating func apply(_ info: (rate: Int, channels: Int, duration: Double?)) {
        sampleRate = info.rate
        channels = info.channels
        setDuration(info.duration)
    }
}
