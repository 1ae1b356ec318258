import Glibc

/// Ogg containers: the codec of each logical stream, and the duration from the last page.
extension AudioHeaders {
    /// An Ogg stream: the beginning-of-stream pages name each logical stream's codec; the last page's
    /// granule position gives the duration.
    static func ogg(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.matches("OggS"), head.u8(4) == 0 else { return nil }
        var result = Sniffed(mimeType: "application/ogg")
        var offset = 0
        var audioSerial: Int?
        var audioRate = 0
        var preSkip = 0
        var hasVideo = false
        // Beginning-of-stream pages all come first, one per logical stream.
        for _ in 0..<16 {
            guard head.matches("OggS", at: offset), let type = head.u8(offset + 5), type & 0x02 != 0,
                let serial = head.le32(offset + 14), let segments = head.u8(offset + 26)
            else { break }
            var bodyLength = 0
            for index in 0..<segments { bodyLength += head.u8(offset + 27 + index) ?? 0 }
            let body = offset + 27 + segments
            if head.matches("OpusHead", at: body), audioSerial == nil {
                audioSerial = serial
                audioRate = 48000
                preSkip = head.le16(body + 10) ?? 0
                result.metadata.audioCodec = "opus"
                result.metadata.channels = head.u8(body + 9)
                result.metadata.sampleRate = 48000
            } else if head.matches("\u{01}vorbis", at: body), audioSerial == nil {
                audioSerial = serial
                audioRate = head.le32(body + 12) ?? 0
                result.metadata.audioCodec = "vorbis"
                result.metadata.channels = head.u8(body + 11)
                result.metadata.sampleRate = audioRate
            } else if head.matches("\u{7F}FLAC", at: body), audioSerial == nil {
                audioSerial = serial
                result.metadata.audioCodec = "flac"
                if let info = streamInfo(head, at: body + 17) {
                    audioRate = info.rate
                    result.metadata.sampleRate = info.rate
                    result.metadata.channels = info.channels
                }
            } else if head.matches("Speex   ", at: body), audioSerial == nil {
                audioSerial = serial
                audioRate = head.le32(body + 36) ?? 0
                result.metadata.audioCodec = "speex"
                result.metadata.sampleRate = audioRate
                result.metadata.channels = head.le32(body + 48)
            } else if head.u8(body) == 0x80, head.matches("theora", at: body + 1) {
                hasVideo = true
                result.metadata.videoCodec = "theora"
                result.metadata.setSize(head.be24(body + 14), head.be24(body + 17))
            } else if head.matches("\u{01}video", at: body) || (head.u8(body) == 0x80 && head.matches("daala", at: body + 1)) {
                hasVideo = true
            }
            offset = body + bodyLength
        }
        if let audioSerial { result.metadata.apply(commentHeader(source, from: offset, serial: audioSerial)) }
        if hasVideo {
            result.mimeType = "video/ogg"
        } else if audioSerial != nil {
            result.mimeType = "audio/ogg"
        }
        if let audioSerial, audioRate > 0, let size = source.size,
            let granule = lastGranule(source, serial: audioSerial, size: size)
        {
            result.metadata.setDuration(Double(max(0, granule - Int64(preSkip))) / Double(audioRate))
        }
        return result
    }

    /// The tags of the comment header of stream `serial`, on one of the pages that follow the
    /// beginning-of-stream pages at `offset`: `OpusTags`, `\u{03}vorbis`, a FLAC `VORBIS_COMMENT` block
    /// (type 4) or Speex's bare comment packet. Only the header's first page is read.
    private static func commentHeader(_ source: SniffSource, from start: Int, serial: Int) -> AudioTags {
        var offset = Int64(start)
        for _ in 0..<8 {
            let header = source.bytes(at: offset, count: 27 + 255)
            guard header.matches("OggS"), let segments = header.u8(26), header.has(27 + segments, at: 0) else { break }
            var bodyLength = 0
            for index in 0..<segments { bodyLength += header.u8(27 + index) ?? 0 }
            let bodyStart = offset + 27 + Int64(segments)
            if header.le32(14) == serial {
                let body = source.bytes(at: bodyStart, count: min(bodyLength, AudioTags.readLimit))
                if body.matches("OpusTags") { return AudioTags.vorbisComments(body, at: 8) }
                if body.matches("\u{03}vorbis") { return AudioTags.vorbisComments(body, at: 7) }
                if body.u8(0).map({ $0 & 0x7F }) == 4 { return AudioTags.vorbisComments(body, at: 4) }
                return AudioTags.vorbisComments(body, at: 0)
            }
            offset = bodyStart + Int64(bodyLength)
        }
        return AudioTags()
    }

    /// The granule position of the last page of stream `serial`, from the last 64 KiB.
    private static func lastGranule(_ source: SniffSource, serial: Int, size: Int64) -> Int64? {
        let start = max(0, size - 65536)
        let tail = source.bytes(at: start, count: Int(size - start))
        var index = tail.count - 27
        while index >= 0 {
            if tail[index] == 0x4F, tail.matches("OggS", at: index), tail.le32(index + 14) == serial,
                let granule = tail.le64(index + 6), granule != UInt64.max, granule < UInt64(Int64.max)
            {
                return Int64(granule)
            }
            index -= 1
        }
        return nil
    }
}
