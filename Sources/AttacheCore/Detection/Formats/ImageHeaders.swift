/// Header parsers for still and animated images. Each returns nil when the bytes are not the format,
/// so the caller can try the next one; none of them decodes pixels.
enum ImageHeaders {
    // MARK: JPEG

    static func jpeg(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.count >= 3, head[0] == 0xFF, head[1] == 0xD8, head[2] == 0xFF else { return nil }
        var result = Sniffed(mimeType: "image/jpeg")
        var offset: Int64 = 2
        // Walk the marker segments up to the first frame header; EXIF comes before it.
        for _ in 0..<512 {
            let header = source.bytes(at: offset, count: 4)
            guard header.count >= 2, header[0] == 0xFF else { break }
            let marker = header[1]
            if marker == 0xFF { offset += 1; continue }  // fill byte
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { offset += 2; continue }
            if marker == 0xD9 || marker == 0xDA { break }
            guard let length = header.be16(2), length >= 2 else { break }
            switch marker {
            case 0xC0...0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:
                let frame = source.bytes(at: offset + 4, count: 6)
                result.metadata.setSize(frame.be16(3), frame.be16(1))
                if let components = frame.u8(5) { result.metadata.hasAlpha = components == 4 ? nil : false }
                return result
            case 0xE1:
                let segment = source.bytes(at: offset + 4, count: min(length - 2, 64 << 10))
                if segment.matches("Exif\0\0"), result.metadata.orientation == nil {
                    result.metadata.orientation = TIFFHeader(segment.span(from: 6))?.orientation
                }
            default:
                break
            }
            offset += 2 + Int64(length)
        }
        return result
    }

    // MARK: PNG

    static func png(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.be64(0) == 0x8950_4E47_0D0A_1A0A else { return nil }
        var result = Sniffed(mimeType: "image/png")
        guard head.matches("IHDR", at: 12) else { return result }
        result.metadata.setSize(head.be32(16), head.be32(20))
        if let colorType = head.u8(25) { result.metadata.hasAlpha = colorType == 4 || colorType == 6 }
        result.metadata.isAnimated = false
        // Chunks before the first IDAT say whether it is animated (acTL) or has transparency (tRNS).
        var offset: Int64 = 8
        for _ in 0..<256 {
            let chunk = source.bytes(at: offset, count: 12)
            guard let length = chunk.be32(0), let type = chunk.be32(4).map(UInt32.init) else { break }
            switch type {
            case fourCharCode("IDAT"), fourCharCode("IEND"): return result
            case fourCharCode("acTL"):
                result.mimeType = "image/apng"
                result.metadata.isAnimated = true
                result.metadata.frameCount = chunk.be32(8)
            case fourCharCode("tRNS"):
                result.metadata.hasAlpha = true
            case fourCharCode("eXIf"):
                let exif = source.bytes(at: offset + 8, count: min(length, 64 << 10))
                result.metadata.orientation = TIFFHeader(exif)?.orientation
            default:
                break
            }
            offset += 12 + Int64(length)
        }
        return result
    }

    // MARK: GIF

    static func gif(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.matches("GIF87a") || head.matches("GIF89a") else { return nil }
        var result = Sniffed(mimeType: "image/gif")
        result.metadata.setSize(head.le16(6), head.le16(8))
        guard let flags = head.u8(10) else { return result }
        var cursor = ByteCursor(source, at: 13)
        if flags & 0x80 != 0 { _ = cursor.skip(Int64(3 << ((flags & 7) + 1))) }
        var frames = 0
        var transparent = false
        var complete = false
        // Count image descriptors; each block's sub-blocks are skipped by their length bytes.
        walk: while cursor.offset - 13 < 16 << 20 {
            guard let introducer = cursor.byte() else { break }
            switch introducer {
            case 0x21:
                guard let label = cursor.byte() else { break walk }
                if label == 0xF9, let control = cursor.peek(2), control[0] >= 1, control[1] & 1 != 0 {
                    transparent = true
                }
                guard skipSubBlocks(&cursor) else { break walk }
            case 0x2C:
                guard let descriptor = cursor.read(9) else { break walk }
                frames += 1
                if descriptor[8] & 0x80 != 0 {
                    guard cursor.skip(Int64(3 << ((descriptor[8] & 7) + 1))) else { break walk }
                }
                guard cursor.byte() != nil, skipSubBlocks(&cursor) else { break walk }
            case 0x3B:
                complete = true
                break walk
            default:
                break walk
            }
        }
        result.metadata.isAnimated = frames > 1
        if complete || source.headIsWhole || cursor.offset >= source.length { result.metadata.frameCount = frames }
        if frames > 0 { result.metadata.hasAlpha = transparent }
        return result
    }

    private static func skipSubBlocks(_ cursor: inout ByteCursor) -> Bool {
        while let length = cursor.byte() {
            if length == 0 { return true }
            guard cursor.skip(Int64(length)) else { return false }
        }
        return false
    }

    // MARK: WebP

    /// A RIFF/WEBP file: the first chunk says lossy (VP8), lossless (VP8L) or extended (VP8X).
    static func webp(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.matches("RIFF"), head.matches("WEBP", at: 8) else { return nil }
        var result = Sniffed(mimeType: "image/webp")
        result.metadata.isAnimated = false
        switch head.be32(12).map(UInt32.init) ?? 0 {
        case fourCharCode("VP8 "):
            if head.be24(23) == 0x9D012A {
                result.metadata.setSize(head.le16(26).map { $0 & 0x3FFF }, head.le16(28).map { $0 & 0x3FFF })
            }
            result.metadata.hasAlpha = false
        case fourCharCode("VP8L"):
            if head.u8(20) == 0x2F, let bits = head.le32(21) {
                result.metadata.setSize((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
                result.metadata.hasAlpha = (bits >> 28) & 1 == 1
            }
        case fourCharCode("VP8X"):
            guard let flags = head.u8(20) else { break }
            result.metadata.setSize(head.le24(24).map { $0 + 1 }, head.le24(27).map { $0 + 1 })
            result.metadata.hasAlpha = flags & 0x10 != 0
            let animated = flags & 0x02 != 0
            result.metadata.isAnimated = animated
            // Walk the chunks for frames (ANMF), an ALPH chunk, and EXIF orientation.
            var offset: Int64 = 12
            var frames = 0
            var complete = false
            for _ in 0..<10_000 {
                let chunk = source.bytes(at: offset, count: 8)
                guard let type = chunk.be32(0).map(UInt32.init), let size = chunk.le32(4) else {
                    complete = offset >= source.length
                    break
                }
                if type == fourCharCode("ANMF") { frames += 1 }
                if type == fourCharCode("ALPH") { result.metadata.hasAlpha = true }
                if type == fourCharCode("EXIF") {
                    var exif = source.bytes(at: offset + 8, count: min(size, 64 << 10))
                    if exif.matches("Exif\0\0") { exif = exif.span(from: 6) }
                    result.metadata.orientation = TIFFHeader(exif)?.orientation
                }
                offset += 8 + Int64(size) + Int64(size & 1)
            }
            if animated && complete { result.metadata.frameCount = frames }
        default:
            break
        }
        return result
    }

    // MARK: BMP, ICO, PSD, TIFF, JPEG XL, JPEG 2000

    static func bmp(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.matches("BM"), let dibSize = head.le32(14),
            dibSize == 12 || dibSize == 16 || dibSize == 40 || dibSize == 52 || dibSize == 56 || dibSize == 64
                || dibSize == 108 || dibSize == 124
        else { return nil }
        var result = Sniffed(mimeType: "image/bmp")
        if dibSize == 12 {
            result.metadata.setSize(head.le16(18), head.le16(20))
        } else if let w = head.le32(18), let h = head.le32(22) {
            // Height is signed: negative means the rows are stored top-down.
            let height = Int(Int32(truncatingIfNeeded: h))
            result.metadata.setSize(Int(Int32(truncatingIfNeeded: w)), abs(height))
            if let bits = head.le16(28) {
                let alphaMask = dibSize >= 56 ? head.le32(54) ?? 0 : 0
                result.metadata.hasAlpha = bits == 32 && alphaMask != 0
            }
        }
        return result
    }

    static func ico(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.be32(0) == 0x0000_0100, let count = head.le16(4), count > 0,
            head.u8(9) == 0, let planes = head.le16(10), planes <= 1,
            let firstOffset = head.le32(18), firstOffset >= 6 + 16 * count
        else { return nil }
        var result = Sniffed(mimeType: "image/vnd.microsoft.icon")
        var best = 0
        for index in 0..<min(count, 64) {
            let entry = 6 + 16 * index
            guard let w = head.u8(entry), let h = head.u8(entry + 1) else { break }
            let width = w == 0 ? 256 : w
            let height = h == 0 ? 256 : h
            if width * height > best {
                best = width * height
                result.metadata.setSize(width, height)
            }
        }
        return result
    }

    static func psd(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.matches("8BPS"), let version = head.be16(4), version == 1 || version == 2 else { return nil }
        var result = Sniffed(mimeType: "image/vnd.adobe.photoshop")
        result.metadata.setSize(head.be32(18), head.be32(14))
        return result
    }

    static func tiff(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.be32(0) == 0x4949_2A00 || head.be32(0) == 0x4D4D_002A
        else { return nil }
        var result = Sniffed(mimeType: "image/tiff")
        // The first IFD may be anywhere; read the header and that IFD (at most 64 KiB in all).
        let little = head[0] == 0x49
        if let ifd = little ? head.le32(4) : head.be32(4), ifd >= 8 {
            var bytes = Array(head.prefix(8))
            let entries = source.bytes(at: Int64(ifd), count: 2 + 12 * 256)
            if !entries.isEmpty {
                // Rebase: put the IFD right after the header and point the header at it.
                bytes.replaceSubrange(4..<8, with: little ? [8, 0, 0, 0] : [0, 0, 0, 8])
                bytes += entries
                if let header = TIFFHeader(ByteSpan(bytes)) {
                    result.metadata.setSize(header.width, header.height)
                    result.metadata.orientation = header.orientation
                }
            }
        }
        return result
    }

    static func jpegXL(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        if head.be16(0) == 0xFF0A && head.count > 2 { return Sniffed(mimeType: "image/jxl") }
        guard head.be32(0) == 0x0000_000C, head.be32(8) == 0x0D0A_870A else { return nil }
        if head.be32(4) == 0x4A58_4C20 { return Sniffed(mimeType: "image/jxl") }
        if head.be32(4) == 0x6A50_2020 { return Sniffed(mimeType: "image/jp2") }
        return nil
    }
}

/// The few TIFF/EXIF tags detection needs from the first IFD: size and orientation.
///
/// Values whose offsets point outside the bytes are ignored. Only values stored inline in the IFD
/// entry are read, which is where TIFF puts single SHORT and LONG values.
struct TIFFHeader {
    var width: Int?
    var height: Int?
    var orientation: Int?

    init?(_ bytes: ByteSpan) {
        let little: Bool
        if bytes.be32(0) == 0x4949_2A00 {
            little = true
        } else if bytes.be32(0) == 0x4D4D_002A {
            little = false
        } else {
            return nil
        }
        let u16 = { (offset: Int) -> Int? in little ? bytes.le16(offset) : bytes.be16(offset) }
        let u32 = { (offset: Int) -> Int? in little ? bytes.le32(offset) : bytes.be32(offset) }
        guard let ifd = u32(4), let count = u16(ifd) else { return nil }
        for index in 0..<min(count, 512) {
            let entry = ifd + 2 + 12 * index
            guard let tag = u16(entry), let type = u16(entry + 2) else { break }
            // SHORT values sit in the first two bytes of the value field; LONG in all four.
            let value = type == 3 ? u16(entry + 8) : type == 4 ? u32(entry + 8) : nil
            switch tag {
            case 0x0100: width = value
            case 0x0101: height = value
            case 0x0112: if let value, (1...8).contains(value) { orientation = value }
            default: break
            }
        }
    }
}
