/// EBML containers: WebM and Matroska. The `Tracks` element decides audio versus video (a voice
/// note recorded by a browser is `audio/webm` with one Opus track); `Info` gives the duration.
enum EBML {
    private static let segmentID = 0x1853_8067
    private static let seekHeadID = 0x114D_9B74
    private static let infoID = 0x1549_A966
    private static let tracksID = 0x1654_AE6B
    private static let clusterID = 0x1F43_B675

    /// An element header: ID with its length marker kept (as the specification writes IDs), data size
    /// (nil when "unknown"), and the header's length.
    private struct Header {
        var id: Int
        var size: Int64?
        var length: Int
    }

    private static func header(_ b: ByteSpan, at offset: Int) -> Header? {
        guard let first = b.u8(offset).map(UInt8.init), first != 0 else { return nil }
        let idLength = first.leadingZeroBitCount + 1
        guard idLength <= 4, b.has(idLength, at: offset) else { return nil }
        var id = 0
        for index in 0..<idLength { id = id << 8 | Int(b[offset + index]) }
        guard let sizeFirst = b.u8(offset + idLength).map(UInt8.init), sizeFirst != 0 else { return nil }
        let sizeLength = sizeFirst.leadingZeroBitCount + 1
        guard b.has(sizeLength, at: offset + idLength) else { return nil }
        var size = Int64(sizeFirst & UInt8(0xFF >> sizeLength))
        var allOnes = size == Int64(0xFF >> sizeLength)
        for index in 1..<sizeLength {
            let byte = b[offset + idLength + index]
            size = size << 8 | Int64(byte)
            allOnes = allOnes && byte == 0xFF
        }
        return Header(id: id, size: allOnes ? nil : size, length: idLength + sizeLength)
    }

    /// The children of the element whose data is `b[range]`, as (id, data range) pairs, read as
    /// they are iterated (no array is built).
    private struct Children: Sequence, IteratorProtocol {
        let bytes: ByteSpan
        var offset: Int
        let end: Int
        var count = 0

        init(_ bytes: ByteSpan, _ range: Range<Int>) {
            self.bytes = bytes
            offset = range.lowerBound
            end = range.upperBound
        }

        mutating func next() -> (id: Int, data: Range<Int>)? {
            guard offset < end, count < 4096, let h = EBML.header(bytes, at: offset) else { return nil }
            let dataStart = offset + h.length
            let available = Int64(end - dataStart)
            guard available >= 0 else { return nil }
            let size = Int(Swift.min(h.size ?? available, available))
            count += 1
            offset = dataStart + size
            return (id: h.id, data: dataStart..<dataStart + size)
        }
    }

    private static func children(_ b: ByteSpan, _ range: Range<Int>) -> Children { Children(b, range) }

    private static func uint(_ b: ByteSpan, _ range: Range<Int>) -> Int? {
        guard !range.isEmpty, range.count <= 8, b.has(range.count, at: range.lowerBound) else { return nil }
        var value: UInt64 = 0
        for index in range { value = value << 8 | UInt64(b[index]) }
        return value > UInt64(Int.max) ? nil : Int(value)
    }

    private static func float(_ b: ByteSpan, _ range: Range<Int>) -> Double? {
        if range.count == 4, let bits = b.be32(range.lowerBound) { return Double(Float(bitPattern: UInt32(bits))) }
        if range.count == 8, let bits = b.be64(range.lowerBound) { return Double(bitPattern: bits) }
        return nil
    }

    /// The string element's bytes, up to its first NUL.
    private static func string(_ b: ByteSpan, _ range: Range<Int>) -> ByteSpan {
        guard b.has(range.count, at: range.lowerBound) else { return .empty }
        let text = b.span(range)
        return text.span(0..<(text.firstIndex(of: 0, from: 0) ?? text.count))
    }

    /// Whether a string element's bytes are exactly `text`.
    private static func equals(_ bytes: ByteSpan, _ text: StaticString) -> Bool {
        bytes.count == text.utf8CodeUnitCount && bytes.matches(text)
    }

    static func sniff(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.be32(0) == 0x1A45_DFA3, let ebml = header(head, at: 0) else { return nil }
        let ebmlEnd = min(head.count, ebml.length + Int(min(ebml.size ?? 0, 4096)))
        var docType = ByteSpan.empty
        for child in children(head, ebml.length..<ebmlEnd) where child.id == 0x4282 {
            docType = string(head, child.data)
        }
        let webm = equals(docType, "webm")
        guard webm || equals(docType, "matroska") || docType.isEmpty else { return nil }
        var result = Sniffed(mimeType: webm ? "video/webm" : "video/matroska")

        // Walk the Segment's top-level elements by header reads until Info and Tracks are found.
        var offset = Int64(ebmlEnd)
        let segmentHeader = source.bytes(at: offset, count: 12)
        guard let segment = header(segmentHeader, at: 0), segment.id == segmentID else {
            result.inconclusive = true
            return result
        }
        let segmentStart = offset + Int64(segment.length)
        offset = segmentStart
        var info: ByteSpan?
        var tracks: ByteSpan?
        var seekTracks: Int64?
        var seekInfo: Int64?
        var steps = 0
        while info == nil || tracks == nil, steps < 256 {
            steps += 1
            let bytes = source.bytes(at: offset, count: 12)
            guard let element = header(bytes, at: 0) else { break }
            let dataStart = offset + Int64(element.length)
            if element.id == clusterID || element.size == nil {
                // Media data: look for what is still missing through the SeekHead, once.
                if tracks == nil, let seek = seekTracks, seek < source.length - segmentStart {
                    offset = segmentStart + seek
                    seekTracks = nil
                    continue
                }
                if info == nil, let seek = seekInfo, seek < source.length - segmentStart {
                    offset = segmentStart + seek
                    seekInfo = nil
                    continue
                }
                break
            }
            let size = element.size ?? 0
            switch element.id {
            case infoID:
                info = source.bytes(at: dataStart, count: Int(min(size, 64 << 10)))
            case tracksID:
                tracks = source.bytes(at: dataStart, count: Int(min(size, 512 << 10)))
            case seekHeadID:
                let seekHead = source.bytes(at: dataStart, count: Int(min(size, 16 << 10)))
                for seek in children(seekHead, 0..<seekHead.count) where seek.id == 0x4DBB {
                    var id = 0
                    var position: Int?
                    for field in children(seekHead, seek.data) {
                        if field.id == 0x53AB { id = uint(seekHead, field.data) ?? 0 }
                        if field.id == 0x53AC { position = uint(seekHead, field.data) }
                    }
                    if let position, id == tracksID { seekTracks = Int64(position) }
                    if let position, id == infoID { seekInfo = Int64(position) }
                }
            default:
                break
            }
            guard size <= source.length - dataStart else { break }
            offset = dataStart + size
        }

        if let info {
            var scale = 1_000_000
            var duration: Double?
            for child in children(info, 0..<info.count) {
                if child.id == 0x2AD7B1, let value = uint(info, child.data), value > 0 { scale = value }
                if child.id == 0x4489 { duration = float(info, child.data) }
            }
            if let duration { result.metadata.setDuration(duration * Double(scale) / 1e9) }
        }
        guard let tracks else {
            result.inconclusive = true
            return result
        }
        var hasVideo = false
        var hasAudio = false
        for entry in children(tracks, 0..<tracks.count) where entry.id == 0xAE {
            var type = 0
            var codec = ByteSpan.empty
            var width: Int?
            var height: Int?
            var alpha = false
            var rate: Double?
            var channels: Int?
            for field in children(tracks, entry.data) {
                switch field.id {
                case 0x83: type = uint(tracks, field.data) ?? 0
                case 0x86: codec = string(tracks, field.data)
                case 0xE0:
                    for video in children(tracks, field.data) {
                        if video.id == 0xB0 { width = uint(tracks, video.data) }
                        if video.id == 0xBA { height = uint(tracks, video.data) }
                        if video.id == 0x53C0 { alpha = uint(tracks, video.data) == 1 }
                    }
                case 0xE1:
                    for audio in children(tracks, field.data) {
                        if audio.id == 0xB5 { rate = float(tracks, audio.data) }
                        if audio.id == 0x9F { channels = uint(tracks, audio.data) }
                    }
                default:
                    break
                }
            }
            if type == 1, !hasVideo {
                hasVideo = true
                result.metadata.videoCodec = codecName(codec)
                result.metadata.setSize(width, height)
                result.metadata.hasAlpha = alpha
            } else if type == 2, !hasAudio {
                hasAudio = true
                result.metadata.audioCodec = codecName(codec)
                if let rate, rate >= 1, rate < 10_000_000 { result.metadata.sampleRate = Int(rate) }
                result.metadata.channels = channels
            }
        }
        if !hasVideo && hasAudio { result.mimeType = webm ? "audio/webm" : "audio/matroska" }
        return result
    }

    private static let codecNames: [(id: StaticString, name: String)] = [
        ("V_VP8", "vp8"), ("V_VP9", "vp9"), ("V_AV1", "av1"), ("V_MPEG4/ISO/AVC", "h264"),
        ("V_MPEGH/ISO/HEVC", "hevc"), ("V_THEORA", "theora"), ("V_MPEG4/ISO/ASP", "mpeg4"),
        ("V_MPEG4/ISO/SP", "mpeg4"), ("A_OPUS", "opus"), ("A_VORBIS", "vorbis"), ("A_FLAC", "flac"),
        ("A_MPEG/L3", "mp3"), ("A_AC3", "ac3"), ("A_EAC3", "eac3"),
    ]

    /// FFmpeg's name for a Matroska codec ID, compared in place (no text is built for known IDs).
    private static func codecName(_ id: ByteSpan) -> String {
        for (known, name) in codecNames where equals(id, known) { return name }
        if id.matches("A_AAC") { return "aac" }
        if id.matches("A_PCM") { return "pcm" }
        return String(decoding: id, as: UTF8.self).lowercased()
    }
}
