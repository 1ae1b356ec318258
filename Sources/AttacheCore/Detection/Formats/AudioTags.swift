/// The descriptive tags of an audio file, as music players show them: title, performer, album.
///
/// Read from ID3v2 (2.2, 2.3, 2.4) and ID3v1 tags, Vorbis comments (Ogg Vorbis, Opus, Speex, FLAC in
/// Ogg and native FLAC) and the iTunes item list of an MP4 (`moov/udta/meta/ilst`). Only text frames
/// are read: a tag's pictures and lyrics are skipped by their lengths, and the reads stay within the
/// source's budget. A performer or an album is what makes audio music in the kind rule
/// (docs/DETECTION.md); a title alone does not, since voice recorders name their recordings.
struct AudioTags {
    var title: String?
    var performer: String?
    var album: String?

    /// The longest value kept, in characters: a tag is a label, not a document.
    static let maxLength = 256
    /// The most bytes of a tag read beyond the head.
    static let readLimit = 64 << 10

    var isEmpty: Bool { title == nil && performer == nil && album == nil }

    /// Sets the fields still unknown from `other`.
    mutating func fill(from other: AudioTags) {
        if title == nil { title = other.title }
        if performer == nil { performer = other.performer }
        if album == nil { album = other.album }
    }

    /// A tag value as it may be shown and sent: control characters dropped, surrounding white space
    /// trimmed, at most ``maxLength`` characters; nil when nothing is left.
    static func clean(_ text: String) -> String? {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars where scalar.value >= 0x20 && !(0x7F...0x9F).contains(scalar.value) {
            scalars.append(scalar)
        }
        let trimmed = String(scalars).trimmingWhiteSpace
        guard !trimmed.isEmpty else { return nil }
        return trimmed.count > maxLength ? String(trimmed.prefix(maxLength)) : trimmed
    }

    // MARK: ID3

    /// The text frames of an ID3v2 tag whose bytes (header included) are `tag`.
    static func id3v2(_ tag: ByteSpan) -> AudioTags {
        var tags = AudioTags()
        guard tag.matches("ID3"), let version = tag.u8(3), (2...4).contains(version), let flags = tag.u8(5) else {
            return tags
        }
        // Tag-wide unsynchronisation (2.2, 2.3) changes the frame bytes; such tags are rare and skipped.
        if flags & 0x80 != 0, version < 4 { return tags }
        var offset = 10
        if flags & 0x40 != 0, version >= 3, let extended = version == 4 ? syncSafe(tag, at: 10) : tag.be32(10) {
            offset += version == 4 ? extended : extended + 4
        }
        let headerLength = version == 2 ? 6 : 10
        for _ in 0..<256 {
            guard tag.has(headerLength, at: offset), let first = tag.u8(offset), first != 0 else { break }
            let size: Int
            let id: UInt32
            if version == 2 {
                guard let length = tag.be24(offset + 3) else { break }
                size = length
                id = UInt32(tag.be24(offset) ?? 0) << 8 | 0x20
            } else {
                guard let length = version == 4 ? syncSafe(tag, at: offset + 4) : tag.be32(offset + 4) else { break }
                size = length
                id = UInt32(tag.be32(offset) ?? 0)
            }
            let body = offset + headerLength
            guard size > 0, body < tag.count else { break }
            // Frame flags (2.3/2.4): compressed or encrypted frames are not text we can read.
            let frameFlags = version == 2 ? 0 : tag.be16(offset + 8) ?? 0
            let unreadable = version == 3 ? frameFlags & 0x00C0 != 0 : version == 4 && frameFlags & 0x000E != 0
            if !unreadable {
                let text = { id3Text(tag.span(body..<body + size)) }
                switch id {
                case fourCharCode("TIT2"), fourCharCode("TT2 "): if tags.title == nil { tags.title = text() }
                case fourCharCode("TPE1"), fourCharCode("TP1 "): if tags.performer == nil { tags.performer = text() }
                case fourCharCode("TALB"), fourCharCode("TAL "): if tags.album == nil { tags.album = text() }
                case fourCharCode("TPE2"), fourCharCode("TP2 "):
                    // The album artist stands in for a missing performer.
                    if tags.performer == nil, let albumArtist = text() { tags.performer = albumArtist }
                default: break
                }
            }
            offset = body + size
        }
        return tags
    }

    /// An ID3v1 tag: the last 128 bytes of the file, `TAG` then 30-byte Latin-1 title, artist, album.
    static func id3v1(_ source: SniffSource) -> AudioTags {
        var tags = AudioTags()
        guard let size = source.size, size >= 128 else { return tags }
        let tag = source.bytes(at: size - 128, count: 128)
        guard tag.count == 128, tag.matches("TAG") else { return tags }
        func field(_ offset: Int) -> String? {
            var end = offset
            while end < offset + 30, tag[end] != 0 { end += 1 }
            return clean(latin1(tag.span(offset..<end)))
        }
        tags.title = field(3)
        tags.performer = field(33)
        tags.album = field(63)
        return tags
    }

    /// A 28-bit integer stored 7 bits to a byte.
    private static func syncSafe(_ b: ByteSpan, at offset: Int) -> Int? {
        guard b.has(4, at: offset) else { return nil }
        var value = 0
        for index in 0..<4 {
            let byte = Int(b[offset + index])
            guard byte < 0x80 else { return nil }
            value = value << 7 | byte
        }
        return value
    }

    /// The first string of an ID3 text frame: an encoding byte, then Latin-1, UTF-16 with a BOM,
    /// UTF-16BE or UTF-8, ending at a terminator or the frame's end.
    private static func id3Text(_ frame: ByteSpan) -> String? {
        guard let encoding = frame.u8(0) else { return nil }
        let body = frame.span(from: 1)
        switch encoding {
        case 0: return clean(latin1(body.prefix { $0 != 0 }))
        case 3: return clean(String(decoding: body.prefix { $0 != 0 }, as: UTF8.self))
        case 1, 2:
            var bigEndian = encoding == 2
            var start = 0
            if encoding == 1, let bom = body.be16(0) {
                if bom == 0xFFFE { start = 2 } else if bom == 0xFEFF { start = 2; bigEndian = true }
            }
            var units: [UInt16] = []
            var index = start
            while index + 1 < body.count {
                let unit = bigEndian ? UInt16(body[index]) << 8 | UInt16(body[index + 1])
                    : UInt16(body[index + 1]) << 8 | UInt16(body[index])
                if unit == 0 { break }
                units.append(unit)
                index += 2
            }
            return clean(String(decoding: units, as: UTF16.self))
        default: return nil
        }
    }

    private static func latin1(_ bytes: some Sequence<UInt8>) -> String {
        var scalars = String.UnicodeScalarView()
        for byte in bytes { scalars.append(Unicode.Scalar(byte)) }
        return String(scalars)
    }

    // MARK: Vorbis comments

    /// A Vorbis comment block at `offset`: a vendor string, a count, then `KEY=value` strings, every
    /// length 32-bit little-endian. A block cut short (a comment packet continued on the next Ogg page)
    /// gives what it holds.
    static func vorbisComments(_ b: ByteSpan, at offset: Int) -> AudioTags {
        var tags = AudioTags()
        guard let vendor = b.le32(offset), vendor <= b.count else { return tags }
        var cursor = offset + 4 + vendor
        guard let count = b.le32(cursor) else { return tags }
        cursor += 4
        for _ in 0..<min(count, 1024) {
            guard let length = b.le32(cursor), length <= b.count else { break }
            let entry = b.span(cursor + 4..<cursor + 4 + length)
            cursor += 4 + length
            guard let equals = entry.firstIndex(of: UInt8(ascii: "="), from: 0), equals > 0, equals <= 16 else { continue }
            let key = String(decoding: entry.span(0..<equals), as: UTF8.self).uppercased()
            let value = { clean(String(decoding: entry.span(from: equals + 1), as: UTF8.self)) }
            switch key {
            case "TITLE": if tags.title == nil { tags.title = value() }
            case "ARTIST", "PERFORMER": if tags.performer == nil { tags.performer = value() }
            case "ALBUMARTIST", "ALBUM ARTIST": if tags.performer == nil { tags.performer = value() }
            case "ALBUM": if tags.album == nil { tags.album = value() }
            default: break
            }
            if entry.count < length { break }
        }
        return tags
    }

    /// The Vorbis comment block of a native FLAC stream whose `fLaC` marker is at `start`: metadata
    /// blocks are walked by their headers until the last one.
    static func flacComments(_ source: SniffSource, at start: Int64) -> AudioTags {
        var offset = start + 4
        for _ in 0..<32 {
            let header = source.bytes(at: offset, count: 4)
            guard header.count == 4, let length = header.be24(1) else { break }
            if header[0] & 0x7F == 4 {
                let block = source.bytes(at: offset + 4, count: min(length, readLimit))
                return vorbisComments(block, at: 0)
            }
            if header[0] & 0x80 != 0 { break }
            offset += 4 + Int64(length)
        }
        return AudioTags()
    }

    // MARK: MP4 item list

    /// The iTunes-style items of an `ilst` box body: `©nam`, `©ART`, `aART`, `©alb`, each holding a
    /// `data` box whose value is UTF-8 after 8 bytes of type and locale.
    static func itemList(_ b: ByteSpan) -> AudioTags {
        var tags = AudioTags()
        var offset = 0
        for _ in 0..<256 {
            guard let size = b.be32(offset), size >= 8, let type = b.be32(offset + 4) else { break }
            let item = b.span(offset + 8..<offset + size)
            if item.isFourCC("data", at: 4), let dataSize = item.be32(0), dataSize >= 16, item.be32(8) == 1 {
                let value = { clean(String(decoding: item.span(16..<dataSize), as: UTF8.self)) }
                switch UInt32(type) {
                case 0xA96E_616D: if tags.title == nil { tags.title = value() }  // ©nam
                case 0xA941_5254: if tags.performer == nil { tags.performer = value() }  // ©ART
                case fourCharCode("aART"): if tags.performer == nil { tags.performer = value() }
                case 0xA961_6C62: if tags.album == nil { tags.album = value() }  // ©alb
                default: break
                }
            }
            guard size <= b.count - offset else { break }
            offset += size
        }
        return tags
    }
}

extension MediaMetadata {
    /// Sets the descriptive tags still unknown from `tags`.
    mutating func apply(_ tags: AudioTags) {
        if title == nil { title = tags.title }
        if performer == nil { performer = tags.performer }
        if album == nil { album = tags.album }
    }
}
