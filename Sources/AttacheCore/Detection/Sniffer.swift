/// What the content says, before the extension and the declared kind are considered.
struct Sniffed {
    var mimeType: String
    var metadata = MediaMetadata()
    /// The container could not be read far enough to name its child type (a zip without a readable
    /// central directory, an MP4 without `moov`); a more specific extension may then be trusted.
    var inconclusive = false
}

/// The content-sniffing tree: one cheap dispatch on the first byte to the family parsers, then the
/// checks that need more than a prefix match, then text, then nothing.
enum Sniffer {
    static func sniff(_ source: SniffSource) -> Sniffed {
        let head = source.head
        guard let first = head.first else {
            return Sniffed(mimeType: source.size == 0 ? "application/x-empty" : "application/octet-stream")
        }
        if let found = byFirstByte(first, source) { return found }
        if let found = ISOBMFF.sniff(source) { return found }
        if let found = Containers.tar(source) { return found }
        if let found = transportStream(head) { return found }
        if let found = pdfAfterJunk(head) { return found }
        if let found = TextSniffer.sniff(source) { return found }
        if head.matches("MZ") { return Sniffed(mimeType: "application/x-dosexec") }
        return Sniffed(mimeType: "application/octet-stream")
    }

    private static func byFirstByte(_ first: UInt8, _ source: SniffSource) -> Sniffed? {
        let h = source.head
        switch first {
        case 0xFF:
            if let found = ImageHeaders.jpeg(source) ?? ImageHeaders.jpegXL(source) { return found }
            if h.be16(0) == 0xFFFE, let text = TextSniffer.sniff(source) { return text }
            return AudioHeaders.adts(source, at: 0) ?? AudioHeaders.mpegAudio(source, at: 0)
        case 0x89: return ImageHeaders.png(source)
        case 0x47:  // G
            return ImageHeaders.gif(source)
        case 0x52:  // R
            if h.matches("Rar!\u{1A}\u{07}\u{00}") || h.matches("Rar!\u{1A}\u{07}\u{01}\u{00}") {
                return Sniffed(mimeType: "application/vnd.rar")
            }
            return ImageHeaders.webp(source) ?? AudioHeaders.wav(source) ?? AudioHeaders.avi(source)
        case 0x49:  // I
            return ImageHeaders.tiff(source) ?? AudioHeaders.id3Tagged(source)
        case 0x4D:  // M
            if let found = ImageHeaders.tiff(source) ?? AudioHeaders.midi(source) { return found }
            if h.matches("MZ"), let lfanew = h.le32(0x3C), lfanew >= 0x40, lfanew < 1 << 20,
                source.bytes(at: Int64(lfanew), count: 4).matches("PE\0\0")
            {
                return Sniffed(mimeType: "application/vnd.microsoft.portable-executable")
            }
            return nil
        case 0x42:  // B
            if h.matches("BZh"), let level = h.u8(3), (0x31...0x39).contains(level),
                (h.be32(4) == 0x3141_5926 && h.be16(8) == 0x5359) || (h.be32(4) == 0x1772_4538 && h.be16(8) == 0x5090)
            {
                return Sniffed(mimeType: "application/x-bzip2")
            }
            return ImageHeaders.bmp(source)
        case 0x00:
            if let found = ImageHeaders.ico(source) ?? ImageHeaders.jpegXL(source) { return found }
            if h.matches("\0asm") { return Sniffed(mimeType: "application/wasm") }
            if h.be32(0) == 0x0001_0000 && h.u8(4) == 0 && h.count >= 12 { return Sniffed(mimeType: "font/ttf") }
            if h.be32(0) == 0x0000_01BA || h.be32(0) == 0x0000_01B3 { return Sniffed(mimeType: "video/mpeg") }
            return nil
        case 0x1A: return EBML.sniff(source)
        case 0x4F:  // O
            if h.matches("OTTO") { return Sniffed(mimeType: "font/otf") }
            return AudioHeaders.ogg(source)
        case 0x66:  // f
            return AudioHeaders.flac(source)
        case 0x23:  // #
            return AudioHeaders.amr(source)
        case 0x63:  // c
            return AudioHeaders.caf(source)
        case 0x25:  // %
            if h.matches("%PDF-") { return Sniffed(mimeType: "application/pdf") }
            if h.matches("%!PS") { return Sniffed(mimeType: "application/postscript") }
            return nil
        case 0x7B:  // {
            return h.matches("{\\rtf") ? Sniffed(mimeType: "application/rtf") : nil
        case 0x50:  // P
            return Containers.zip(source)
        case 0xD0: return Containers.ole(source)
        case 0x37:
            return h.be32(0) == 0x377A_BCAF && h.be16(4) == 0x271C ? Sniffed(mimeType: "application/x-7z-compressed") : nil
        case 0x1F: return Containers.gzip(source)
        case 0xFD:
            return h.be32(0) == 0xFD37_7A58 && h.be16(4) == 0x5A00 ? Sniffed(mimeType: "application/x-xz") : nil
        case 0x28:
            return h.be32(0) == 0x28B5_2FFD ? Sniffed(mimeType: "application/zstd") : nil
        case 0x04:
            return h.be32(0) == 0x0422_4D18 ? Sniffed(mimeType: "application/x-lz4") : nil
        case 0x7F: return elf(h)
        case 0xFE, 0xCE, 0xCF, 0xCA: return machO(h)
        case 0x53:  // S
            return h.matches("SQLite format 3\0") ? Sniffed(mimeType: "application/vnd.sqlite3") : nil
        case 0x46:  // F
            if h.matches("FLV\u{01}") { return Sniffed(mimeType: "video/x-flv") }
            return AudioHeaders.aiff(source)
        case 0x30:
            let asf = h.be64(0) == 0x3026_B275_8E66_CF11 && h.be64(8) == 0xA6D9_00AA_0062_CE6C
            return asf ? Sniffed(mimeType: "video/x-ms-asf") : nil
        case 0x77:  // w
            if h.matches("wOFF") { return Sniffed(mimeType: "font/woff") }
            if h.matches("wOF2") { return Sniffed(mimeType: "font/woff2") }
            return nil
        case 0x38:  // 8
            return ImageHeaders.psd(source)
        case 0x21:  // !
            if h.matches("!<arch>\n") {
                return Sniffed(mimeType: h.matches("debian", at: 8) ? "application/vnd.debian.binary-package" : "application/x-archive")
            }
            return nil
        case 0xED:
            return h.be32(0) == 0xEDAB_EEDB ? Sniffed(mimeType: "application/x-rpm") : nil
        case 0x4C:  // L
            return h.matches("LZIP") ? Sniffed(mimeType: "application/x-lzip") : nil
        default:
            return nil
        }
    }

    private static func elf(_ h: ByteSpan) -> Sniffed? {
        guard h.matches("\u{7F}ELF"), let data = h.u8(5) else { return nil }
        let type = data == 2 ? h.be16(16) : h.le16(16)
        switch type {
        case 1: return Sniffed(mimeType: "application/x-object")
        case 2: return Sniffed(mimeType: "application/x-executable")
        case 3: return Sniffed(mimeType: "application/x-sharedlib")
        case 4: return Sniffed(mimeType: "application/x-coredump")
        default: return Sniffed(mimeType: "application/x-elf")
        }
    }

    private static func machO(_ h: ByteSpan) -> Sniffed? {
        switch h.be32(0) {
        case 0xFEED_FACE, 0xFEED_FACF, 0xCEFA_EDFE, 0xCFFA_EDFE: return Sniffed(mimeType: "application/x-mach-binary")
        default: break
        }
        guard h.be32(0) == 0xCAFE_BABE, let count = h.be32(4) else { return nil }
        // Universal binaries and Java class files share a magic: a class file's next word is its
        // version (45 or more), a universal binary's is a small architecture count.
        if count > 0 && count < 30 { return Sniffed(mimeType: "application/x-mach-binary") }
        if let major = h.be16(6), major >= 45 { return Sniffed(mimeType: "application/java-vm") }
        return nil
    }

    /// MPEG transport streams: a 0x47 sync byte every 188 bytes (or 192 with a timecode prefix).
    private static func transportStream(_ h: ByteSpan) -> Sniffed? {
        for variant in 0..<2 {
            let offset = variant * 4
            let stride = 188 + variant * 4
            var packets = 0
            var position = offset
            while position < h.count, h[position] == 0x47 {
                packets += 1
                position += stride
            }
            if packets >= 3 || (packets >= 1 && position >= h.count && h.count >= stride) {
                return Sniffed(mimeType: "video/mp2t")
            }
        }
        return nil
    }

    /// `%PDF-` after junk: readers accept the header anywhere in the first 1024 bytes.
    private static func pdfAfterJunk(_ h: ByteSpan) -> Sniffed? {
        guard let at = h.firstIndex(of: "%PDF-", in: 0..<min(h.count, 1024 + 5)),
            let major = h.u8(at + 5), (0x31...0x32).contains(major), h.u8(at + 6) == 0x2E
        else { return nil }
        return Sniffed(mimeType: "application/pdf")
    }
}
