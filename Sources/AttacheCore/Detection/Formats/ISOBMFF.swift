import Glibc

/// ISO base media files (`ftyp` first): MP4, M4A, MOV, 3GP/3G2, HEIC/HEIF, AVIF.
///
/// The brands give the family; the `moov` box's track handlers decide audio versus video, because a
/// voice note recorded into an MP4 or 3GP container carries only a sound track. Boxes are read one
/// header at a time, so a large `mdat` before `moov` costs one 16-byte read, not a scan.
enum ISOBMFF {
    static func sniff(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        let brands: Brands
        if head.isFourCC("ftyp", at: 4), let ftypSize = head.be32(0), ftypSize >= 8 {
            brands = Brands(head, ftypSize: ftypSize)
        } else if isLegacyQuickTime(source) {
            brands = Brands(quickTime: ())
        } else {
            return nil
        }
        let family = Self.family(brands)
        var result = Sniffed(mimeType: family.video)

        let walker = Walker(source)
        var tracks: [Track] = []
        var movieDuration: Double?
        var sawMovie = false
        for box in walker.children(0, source.length) {
            switch box.type {
            case fourCharCode("moov"):
                sawMovie = true
                movieDuration = movie(walker, box, tracks: &tracks, tags: &result.metadata)
            case fourCharCode("meta"):
                item(walker, box, into: &result.metadata)
            default:
                break
            }
        }

        let video = tracks.first { $0.handler == fourCharCode("vide") }
        let audio = tracks.first { $0.handler == fourCharCode("soun") }
        if family.isImage {
            result.mimeType = family.video
            let sequence = family.isSequence || brands.major == fourCharCode("avis")
            result.metadata.isAnimated = sequence && video != nil
            if let video, result.metadata.width == nil { result.metadata.setSize(video.width, video.height) }
            if sequence, video != nil { result.metadata.setDuration(movieDuration) }
            return result
        }
        if video != nil {
            result.mimeType = family.video
        } else if audio != nil {
            result.mimeType = family.audio
        } else {
            result.mimeType = family.audioByBrand ? family.audio : family.video
            if !sawMovie { result.inconclusive = true }
        }
        if let video {
            let turned = video.rotation == 90 || video.rotation == 270
            result.metadata.setSize(turned ? video.height : video.width, turned ? video.width : video.height)
            if video.rotation != 0 { result.metadata.rotation = video.rotation }
            result.metadata.videoCodec = video.codec
        }
        if let audio {
            result.metadata.audioCodec = audio.codec
            result.metadata.sampleRate = audio.sampleRate
            // An AMR sample entry's channel count is a fixed 2 by its specification; AMR is always mono.
            result.metadata.channels = audio.codec?.hasPrefix("amr") == true ? 1 : audio.channels
        }
        var trackDuration: Double?
        for track in tracks where track.timescale > 0 {
            let seconds = Double(track.duration) / Double(track.timescale)
            if seconds > trackDuration ?? -1 { trackDuration = seconds }
        }
        if let movieDuration, movieDuration > 0 {
            result.metadata.setDuration(movieDuration)
        } else if let trackDuration, trackDuration > 0 {
            result.metadata.setDuration(trackDuration)
        }
        return result
    }

    /// QuickTime files from before `ftyp` start directly with `moov`, `mdat`, `wide`, `free` or
    /// `skip`; the first two boxes must both be such boxes with sane sizes.
    private static func isLegacyQuickTime(_ source: SniffSource) -> Bool {
        let head = source.head
        guard isTopLevelQuickTimeBox(head, at: 4), let size = head.be32(0), size >= 8 else { return false }
        if head.isFourCC("moov", at: 4) {
            return head.isFourCC("mvhd", at: 12) || head.isFourCC("cmov", at: 12) || head.isFourCC("trak", at: 12)
        }
        guard Int64(size) < source.length else { return false }
        return isTopLevelQuickTimeBox(source.bytes(at: Int64(size), count: 8), at: 4)
    }

    private static func isTopLevelQuickTimeBox(_ b: ByteSpan, at offset: Int) -> Bool {
        guard let code = b.be32(offset).map(UInt32.init) else { return false }
        switch code {
        case fourCharCode("moov"), fourCharCode("mdat"), fourCharCode("wide"), fourCharCode("free"),
            fourCharCode("skip"), fourCharCode("pnot"):
            return true
        default:
            return false
        }
    }

    /// The `ftyp` brands, read in place from the head: the major brand, then the compatible ones.
    private struct Brands {
        let major: UInt32
        private let head: ByteSpan
        private let compatible: Range<Int>

        init(_ head: ByteSpan, ftypSize: Int) {
            self.head = head
            major = head.be32(8).map(UInt32.init) ?? 0
            // At most 64 brands, as many as fit in the box and the head.
            let end = min(ftypSize, head.count, 16 + 4 * 63)
            compatible = 16..<max(16, end - (end - 16) % 4)
        }

        init(quickTime: Void) {
            head = .empty
            major = fourCharCode("qt  ")
            compatible = 0..<0
        }

        /// The major brand, then each compatible brand.
        func forEach(_ body: (UInt32) -> Bool) {
            guard body(major) else { return }
            for offset in stride(from: compatible.lowerBound, to: compatible.upperBound, by: 4) {
                guard let brand = head.be32(offset) else { return }
                if !body(UInt32(brand)) { return }
            }
        }

        /// Whether any brand (major or compatible) satisfies `test`.
        func contains(where test: (UInt32) -> Bool) -> Bool {
            var found = false
            forEach { brand in
                found = test(brand)
                return !found
            }
            return found
        }
    }

    private struct Family {
        var video: String
        var audio: String
        var audioByBrand = false
        var isImage = false
        var isSequence = false
    }

    /// The image type an image brand stands for, and whether it is a sequence.
    private static func imageType(_ brand: UInt32) -> (type: String, sequence: Bool)? {
        switch brand {
        case fourCharCode("avif"), fourCharCode("avis"): return ("image/avif", false)
        case fourCharCode("heic"), fourCharCode("heix"), fourCharCode("heim"), fourCharCode("heis"): return ("image/heic", false)
        case fourCharCode("hevc"), fourCharCode("hevx"): return ("image/heic-sequence", true)
        case fourCharCode("mif1"): return ("image/heif", false)
        case fourCharCode("msf1"): return ("image/heif-sequence", true)
        default: return nil
        }
    }

    /// Whether the first `count` characters of `brand` are those of `prefix`.
    private static func brand(_ brand: UInt32, hasPrefix prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        var shift = 24
        for index in 0..<count {
            if UInt8(truncatingIfNeeded: brand >> UInt32(shift)) != prefix.utf8Start[index] { return false }
            shift -= 8
        }
        return true
    }

    private static func family(_ brands: Brands) -> Family {
        let major = brands.major
        // The major brand decides; a generic image brand defers to a more specific compatible one.
        if let image = imageType(major) {
            if major == fourCharCode("mif1") || major == fourCharCode("msf1") {
                var specific: (type: String, sequence: Bool)?
                var first = true
                brands.forEach { brand in
                    defer { first = false }
                    guard !first, brand != fourCharCode("mif1"), brand != fourCharCode("msf1") else { return true }
                    specific = imageType(brand)
                    return specific == nil
                }
                if let specific {
                    return Family(video: specific.type, audio: specific.type, isImage: true, isSequence: specific.sequence)
                }
            }
            return Family(video: image.type, audio: image.type, isImage: true, isSequence: image.sequence)
        }
        if brand(major, hasPrefix: "M4A") || brand(major, hasPrefix: "M4B") || brand(major, hasPrefix: "M4P") {
            return Family(video: "video/mp4", audio: "audio/mp4", audioByBrand: true)
        }
        if major == fourCharCode("qt  ") { return Family(video: "video/quicktime", audio: "audio/mp4") }
        if brand(major, hasPrefix: "3g2") || brand(major, hasPrefix: "kddi") {
            return Family(video: "video/3gpp2", audio: "audio/3gpp2")
        }
        if brand(major, hasPrefix: "3g") { return Family(video: "video/3gpp", audio: "audio/3gpp") }
        if brand(major, hasPrefix: "mif")
            || brands.contains(where: { $0 == fourCharCode("mif1") })
                && !brands.contains(where: { brand($0, hasPrefix: "mp4") || brand($0, hasPrefix: "iso") })
        {
            return Family(video: "image/heif", audio: "image/heif", isImage: true)
        }
        return Family(video: "video/mp4", audio: "audio/mp4")
    }

    /// Reads `mvhd`, `mvex/mehd` and each `trak`; returns the movie duration in seconds.
    private static func movie(_ walker: Walker, _ moov: Box, tracks: inout [Track], tags: inout MediaMetadata) -> Double? {
        var timescale = 0
        var duration: Int64 = 0
        for box in walker.children(moov.payload, moov.end) {
            switch box.type {
            case fourCharCode("mvhd"):
                let b = walker.read(box, count: 32)
                (timescale, duration) = timing(b)
            case fourCharCode("mvex"):
                for child in walker.children(box.payload, box.end) where child.type == fourCharCode("mehd") && duration == 0 {
                    let b = walker.read(child, count: 12)
                    duration = Int64(b.u8(0) == 1 ? Int64(clamping: b.be64(4) ?? 0) : Int64(b.be32(4) ?? 0))
                }
            case fourCharCode("trak"):
                if tracks.count < 32 { tracks.append(track(walker, box)) }
            case fourCharCode("udta"):
                for child in walker.children(box.payload, box.end) where child.type == fourCharCode("meta") {
                    tags.apply(itemList(walker, child))
                }
            case fourCharCode("meta"):
                tags.apply(itemList(walker, box))
            default:
                break
            }
        }
        guard timescale > 0, duration > 0 else { return nil }
        return Double(duration) / Double(timescale)
    }

    /// Timescale and duration from an `mvhd` or `mdhd` payload (version 0 or 1).
    private static func timing(_ b: ByteSpan) -> (Int, Int64) {
        if b.u8(0) == 1 {
            return (b.be32(20) ?? 0, Int64(clamping: b.be64(24) ?? 0))
        }
        let duration = b.be32(16) ?? 0
        return (b.be32(12) ?? 0, duration == 0xFFFF_FFFF ? 0 : Int64(duration))
    }

    private static func track(_ walker: Walker, _ trak: Box) -> Track {
        var track = Track()
        for box in walker.children(trak.payload, trak.end) {
            if box.type == fourCharCode("tkhd") {
                let b = walker.read(box, count: 96)
                let base = b.u8(0) == 1 ? 52 : 40
                if let w = b.be32(base + 36), let h = b.be32(base + 40) {
                    track.width = w >> 16
                    track.height = h >> 16
                }
                if let a = b.be32(base), let bb = b.be32(base + 4), let c = b.be32(base + 12), let d = b.be32(base + 16) {
                    let fixed = { (v: Int) in Int(Int32(truncatingIfNeeded: v)) >> 16 }
                    switch (fixed(a), fixed(bb), fixed(c), fixed(d)) {
                    case (0, 1, -1, 0): track.rotation = 90
                    case (-1, 0, 0, -1): track.rotation = 180
                    case (0, -1, 1, 0): track.rotation = 270
                    default: break
                    }
                }
            } else if box.type == fourCharCode("mdia") {
                for child in walker.children(box.payload, box.end) {
                    switch child.type {
                    case fourCharCode("mdhd"):
                        let b = walker.read(child, count: 32)
                        (track.timescale, track.duration) = timing(b)
                    case fourCharCode("hdlr"):
                        track.handler = walker.read(child, count: 12).be32(8).map(UInt32.init) ?? 0
                    case fourCharCode("minf"):
                        sampleDescription(walker, child, into: &track)
                    default:
                        break
                    }
                }
            }
        }
        return track
    }

    private static func sampleDescription(_ walker: Walker, _ minf: Box, into track: inout Track) {
        guard let stbl = walker.children(minf.payload, minf.end).first("stbl"),
            let stsd = walker.children(stbl.payload, stbl.end).first("stsd")
        else { return }
        let b = walker.read(stsd, count: 64)
        // Full box header (4) and entry count (4), then the first sample entry.
        guard let format = b.be32(12).map(UInt32.init) else { return }
        track.codec = codecName(format)
        if track.handler == fourCharCode("soun") {
            // Sound sample entry: 8 reserved/reference bytes, 8 version/vendor bytes, then channels.
            track.channels = b.be16(32)
            if let rate = b.be32(40) { track.sampleRate = rate >> 16 > 0 ? rate >> 16 : nil }
            if format == fourCharCode("mp4a"), let size = b.be32(8) {
                // The entry's child boxes follow its 28-byte body; `esds` has the real channel count.
                let entry = walker.source.bytes(at: stsd.payload + 8, count: min(size, 4096))
                var offset = 36
                while let childSize = entry.be32(offset), childSize >= 8, let type = entry.be32(offset + 4) {
                    if type == Int(fourCharCode("esds")), entry.has(childSize, at: offset),
                        let channels = esdsChannels(entry.span(offset + 8..<offset + childSize))
                    {
                        track.channels = channels
                    }
                    offset += childSize
                }
            }
        } else if track.width == nil || track.width == 0 {
            track.width = b.be16(40)
            track.height = b.be16(42)
        }
    }

    private static func codecName(_ format: UInt32) -> String {
        switch format {
        case fourCharCode("avc1"), fourCharCode("avc3"): return "h264"
        case fourCharCode("hvc1"), fourCharCode("hev1"): return "hevc"
        case fourCharCode("av01"): return "av1"
        case fourCharCode("vp09"): return "vp9"
        case fourCharCode("vp08"): return "vp8"
        case fourCharCode("mp4v"): return "mpeg4"
        case fourCharCode("s263"), fourCharCode("h263"): return "h263"
        case fourCharCode("mp4a"): return "aac"
        case fourCharCode("Opus"): return "opus"
        case fourCharCode("fLaC"): return "flac"
        case fourCharCode("alac"): return "alac"
        case fourCharCode("samr"): return "amr_nb"
        case fourCharCode("sawb"): return "amr_wb"
        case fourCharCode("ac-3"): return "ac3"
        case fourCharCode("ec-3"): return "eac3"
        case fourCharCode(".mp3"): return "mp3"
        case fourCharCode("sowt"), fourCharCode("twos"), fourCharCode("lpcm"), fourCharCode("ipcm"): return "pcm"
        case fourCharCode("jpeg"), fourCharCode("mjpa"), fourCharCode("mjpb"): return "mjpeg"
        case fourCharCode("apcn"), fourCharCode("apch"), fourCharCode("apcs"), fourCharCode("apco"), fourCharCode("ap4h"):
            return "prores"
        default:
            let text = withUnsafeBytes(of: format.bigEndian) { String(decoding: $0, as: UTF8.self) }
            return text.trimmingWhiteSpace.lowercased()
        }
    }

    /// The iTunes-style tags of a movie's `meta` box (in `moov/udta` or `moov`): its `ilst` child.
    private static func itemList(_ walker: Walker, _ meta: Box) -> AudioTags {
        // ISO `meta` is a full box (4 bytes of version and flags before its children); QuickTime's is not.
        let peek = walker.source.bytes(at: meta.payload, count: 12)
        let start = peek.isFourCC("hdlr", at: 8) ? meta.payload + 4 : meta.payload
        guard let ilst = walker.children(start, meta.end).first("ilst") else { return AudioTags() }
        return AudioTags.itemList(walker.read(ilst, count: AudioTags.readLimit))
    }

    /// HEIF item properties: the primary item's (`pitm`) `ispe` is the image size and its `irot` the
    /// rotation, found through the `ipma` associations; an `auxC` alpha plane means transparency.
    /// Without associations the largest `ispe` is taken (tiles and thumbnails are smaller).
    private static func item(_ walker: Walker, _ meta: Box, into metadata: inout MediaMetadata) {
        // ISO `meta` is a full box (4 bytes of version and flags before its children); QuickTime's is not.
        let peek = walker.source.bytes(at: meta.payload, count: 12)
        let start = peek.isFourCC("hdlr", at: 8) ? meta.payload + 4 : meta.payload
        let children = walker.children(start, meta.end)
        var primary: Int?
        if let pitm = children.first("pitm") {
            let b = walker.read(pitm, count: 8)
            primary = b.u8(0) == 0 ? b.be16(4) : b.be32(4)
        }
        guard let iprp = children.first("iprp") else { return }
        let iprpChildren = walker.children(iprp.payload, iprp.end)
        guard let ipco = iprpChildren.first("ipco") else { return }
        let properties = walker.children(ipco.payload, ipco.end)
        var associated: Set<Int>?
        if let primary, let ipma = iprpChildren.first("ipma") {
            associated = associations(walker.read(ipma, count: 64 << 10), item: primary)
        }
        var bestArea = 0
        for (index, property) in properties.enumerated() {
            let belongs = associated?.contains(index + 1) ?? true
            switch property.type {
            case fourCharCode("ispe") where belongs:
                let b = walker.read(property, count: 12)
                // Both sides are 32-bit values from the file: their product can exceed Int.
                if let w = b.be32(4), let h = b.be32(8), case let area = w.multipliedReportingOverflow(by: h),
                    !area.overflow, area.partialValue > bestArea
                {
                    bestArea = area.partialValue
                    metadata.setSize(w, h)
                }
            case fourCharCode("irot") where belongs:
                if let angle = walker.read(property, count: 1).u8(0) {
                    // Counter-clockwise quarter turns, as EXIF orientation values.
                    metadata.orientation = [1, 8, 3, 6][angle & 3]
                }
            case fourCharCode("auxC"):
                let b = walker.read(property, count: 64)
                if b.firstIndex(of: "alpha", in: 0..<b.count) != nil { metadata.hasAlpha = true }
            default:
                break
            }
        }
        if metadata.hasAlpha == nil, bestArea > 0 { metadata.hasAlpha = false }
    }

    /// The 1-based property indices `ipma` associates with `item`.
    private static func associations(_ b: ByteSpan, item: Int) -> Set<Int>? {
        guard let version = b.u8(0), let flags = b.be24(1), let count = b.be32(4) else { return nil }
        var offset = 8
        for _ in 0..<min(count, 65536) {
            guard let id = version < 1 ? b.be16(offset) : b.be32(offset) else { return nil }
            offset += version < 1 ? 2 : 4
            guard let n = b.u8(offset) else { return nil }
            offset += 1
            var indices: Set<Int> = []
            for _ in 0..<n {
                if flags & 1 != 0 {
                    guard let value = b.be16(offset) else { return nil }
                    indices.insert(value & 0x7FFF)
                    offset += 2
                } else {
                    guard let value = b.u8(offset) else { return nil }
                    indices.insert(value & 0x7F)
                    offset += 1
                }
            }
            if id == item { return indices }
        }
        return nil
    }

    /// The channel count from an `esds` AudioSpecificConfig, which ISO files must use instead of the
    /// sample entry's fixed value of 2.
    static func esdsChannels(_ b: ByteSpan) -> Int? {
        // Descriptors: tag byte, then a length of up to four 7-bit groups.
        func descriptor(_ offset: Int) -> (tag: Int, body: Int, length: Int)? {
            guard let tag = b.u8(offset) else { return nil }
            var length = 0
            var position = offset + 1
            for _ in 0..<4 {
                guard let byte = b.u8(position) else { return nil }
                position += 1
                length = length << 7 | (byte & 0x7F)
                if byte & 0x80 == 0 { break }
            }
            return (tag, position, length)
        }
        guard let es = descriptor(4), es.tag == 3, let flags = b.u8(es.body + 2) else { return nil }
        var offset = es.body + 3
        if flags & 0x80 != 0 { offset += 2 }
        if flags & 0x40 != 0 { offset += 1 + (b.u8(offset) ?? 0) }
        if flags & 0x20 != 0 { offset += 2 }
        guard let config = descriptor(offset), config.tag == 4,
            let specific = descriptor(config.body + 13), specific.tag == 5,
            let high = b.u8(specific.body), let low = b.u8(specific.body + 1)
        else { return nil }
        // 5 bits object type, 4 bits frequency index (15: 24 explicit bits follow), 4 bits channels.
        let frequencyIndex = (high & 0x07) << 1 | low >> 7
        if frequencyIndex == 15 {
            guard let bits = b.be32(specific.body + 1) else { return nil }
            return (bits >> 3) & 0x0F
        }
        let channels = (low >> 3) & 0x0F
        return channels > 0 ? channels : nil
    }
}
