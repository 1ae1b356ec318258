import Glibc

/// Zip and OLE compound files and their children, tar, and gzip (with Telegram's TGS stickers).
enum Containers {
    // MARK: Zip

    /// What the entry names of a zip say it is.
    private struct ZipNames {
        var contentTypes = false
        var word = false
        var excel = false
        var powerPoint = false
        var androidManifest = false
        var dex = false
        var javaManifest = false
        var javaClass = false
        var mimetypeOffset: Int64?
        var count = 0

        mutating func add(_ name: ByteSpan, localHeader: Int64) {
            count += 1
            if name.matches("[Content_Types].xml") && name.count == 19 { contentTypes = true }
            if name.matches("word/") { word = true }
            if name.matches("xl/") { excel = true }
            if name.matches("ppt/") { powerPoint = true }
            if name.matches("AndroidManifest.xml") && name.count == 19 { androidManifest = true }
            if name.matches("classes.dex") { dex = true }
            if name.matches("META-INF/MANIFEST.MF") && name.count == 20 { javaManifest = true }
            if name.count > 6 && name.matches(".class", at: name.count - 6) { javaClass = true }
            if name.matches("mimetype") && name.count == 8 { mimetypeOffset = localHeader }
        }

        var type: String? {
            if contentTypes {
                if word { return MIMETable.docx }
                if excel { return MIMETable.xlsx }
                if powerPoint { return MIMETable.pptx }
            }
            if androidManifest && (dex || javaManifest) { return "application/vnd.android.package-archive" }
            if javaManifest || javaClass { return "application/java-archive" }
            return nil
        }
    }

    static func zip(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.matches("PK"), let kind = head.le16(2), kind == 0x0403 || kind == 0x0605 || kind == 0x0807
        else { return nil }
        var result = Sniffed(mimeType: "application/zip")
        // ODF and EPUB put a stored "mimetype" entry first whose content is the type.
        if let declared = declaredType(source, localHeader: 0) {
            result.mimeType = declared
            return result
        }
        var names = ZipNames()
        let readDirectory = centralDirectory(source, into: &names)
        if !readDirectory { localHeaders(source, into: &names) }
        if let offset = names.mimetypeOffset, let declared = declaredType(source, localHeader: offset) {
            result.mimeType = declared
        } else if let type = names.type {
            result.mimeType = type
        } else if !readDirectory {
            result.inconclusive = true
        }
        return result
    }

    /// The content of a stored `mimetype` entry at `localHeader`, when it names ODF or EPUB.
    private static func declaredType(_ source: SniffSource, localHeader: Int64) -> String? {
        let header = source.bytes(at: localHeader, count: 30 + 8)
        guard header.be32(0) == 0x504B_0304, header.le16(8) == 0,
            header.le16(26) == 8, header.matches("mimetype", at: 30),
            let size = header.le32(18), size > 0, size <= 128, let extra = header.le16(28)
        else { return nil }
        let content = source.bytes(at: localHeader + 38 + Int64(extra), count: size)
        guard content.count == size, content.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        let text = String(decoding: content, as: UTF8.self)
        if text == "application/epub+zip" || text.hasPrefix("application/vnd.oasis.opendocument.") {
            return text
        }
        return nil
    }

    /// Reads entry names from the central directory found through the end record. Returns false when
    /// there is no usable end record (truncated file, prefix only, or a directory that lies).
    private static func centralDirectory(_ source: SniffSource, into names: inout ZipNames) -> Bool {
        guard let size = source.size, size >= 22 else { return false }
        let tailStart = max(0, size - 65_557)
        let tail = source.bytes(at: tailStart, count: Int(size - tailStart))
        var index = tail.count - 22
        var end: Int?
        while index >= 0 {
            if tail[index] == 0x50, tail.be32(index) == 0x504B_0506 {
                end = index
                break
            }
            index -= 1
        }
        guard let end, var directorySize = tail.le32(end + 12).map(Int64.init),
            var directoryOffset = tail.le32(end + 16).map(Int64.init)
        else { return false }
        let endOffset = tailStart + Int64(end)
        if directoryOffset == 0xFFFF_FFFF || directorySize == 0xFFFF_FFFF {
            // Zip64: a locator just before the end record points at the zip64 end record.
            guard tail.be32(end - 20) == 0x504B_0607, let at = tail.le64(end - 12),
                at < UInt64(size)
            else { return false }
            let record = source.bytes(at: Int64(at), count: 56)
            guard record.be32(0) == 0x504B_0606, let s = record.le64(40), let o = record.le64(48),
                s < UInt64(size), o < UInt64(size)
            else { return false }
            directorySize = Int64(s)
            directoryOffset = Int64(o)
        }
        guard directorySize <= endOffset else { return false }
        // Data prepended to the archive (self-extractors) shifts every offset; trust the end record's position.
        let start = endOffset - directorySize
        _ = directoryOffset
        let directory = source.bytes(at: start, count: Int(min(directorySize, 2 << 20)))
        var offset = 0
        while names.count < 20_000, directory.be32(offset) == 0x504B_0102,
            let nameLength = directory.le16(offset + 28), let extra = directory.le16(offset + 30),
            let comment = directory.le16(offset + 32), let local = directory.le32(offset + 42),
            directory.has(nameLength, at: offset + 46)
        {
            names.add(directory.span(offset + 46..<offset + 46 + nameLength), localHeader: Int64(local) + start - directoryOffset)
            offset += 46 + nameLength + extra + comment
        }
        return names.count > 0
    }

    /// Walks local file headers from the start, for archives without a readable directory. Stops at
    /// an entry whose size is only given after its data.
    private static func localHeaders(_ source: SniffSource, into names: inout ZipNames) {
        var offset: Int64 = 0
        for _ in 0..<256 {
            let header = source.bytes(at: offset, count: 30 + 64)
            guard header.be32(0) == 0x504B_0304, let flags = header.le16(6),
                let compressed = header.le32(18), let nameLength = header.le16(26), let extra = header.le16(28)
            else { return }
            let name = source.bytes(at: offset + 30, count: nameLength)
            names.add(name, localHeader: offset)
            if flags & 0x08 != 0 && compressed == 0 { return }
            offset += 30 + Int64(nameLength) + Int64(extra) + Int64(compressed)
        }
    }

    // MARK: OLE compound files

    static func ole(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.be64(0) == 0xD0CF_11E0_A1B1_1AE1 else { return nil }
        var result = Sniffed(mimeType: "application/x-ole-storage")
        guard let shift = head.le16(30), shift == 9 || shift == 12, var sector = head.le32(48) else {
            result.inconclusive = true
            return result
        }
        let sectorSize = 1 << shift
        // Follow the directory's sector chain through the FAT for a few sectors.
        var visited = 0
        while sector < 0xFFFF_FFFA, visited < 16 {
            visited += 1
            let directory = source.bytes(at: Int64(sector + 1) << Int64(shift), count: sectorSize)
            guard directory.count == sectorSize else { break }
            for entry in stride(from: 0, to: sectorSize, by: 128) {
                guard let nameLength = directory.le16(entry + 64), nameLength >= 2, nameLength <= 64 else { continue }
                if directory.u8(entry + 66) == 5, let type = rootType(directory.span(entry + 80..<entry + 96)) {
                    result.mimeType = type
                    return result
                }
                if let type = streamType(directory.span(entry..<entry + nameLength - 2)) {
                    result.mimeType = type
                    return result
                }
            }
            // FAT lookup: which FAT sector holds this sector's successor (only the header's 109 are read).
            let perSector = sectorSize / 4
            guard let fatSector = head.le32(76 + 4 * (sector / perSector)), sector / perSector < 109 else { break }
            let next = source.bytes(at: Int64(fatSector + 1) << Int64(shift) + Int64(4 * (sector % perSector)), count: 4)
            guard let value = next.le32(0) else { break }
            sector = value
        }
        return result
    }

    private static let ole2Suffix: [UInt8] = [0, 0, 0, 0, 0xC0, 0, 0, 0, 0, 0, 0, 0x46]
    private static let powerPointCLSID: [UInt8] = [0x10, 0x8D, 0x81, 0x64, 0x9B, 0x4F, 0xCF, 0x11, 0x86, 0xEA, 0x00, 0xAA, 0x00, 0xB9, 0x29, 0xE8]

    private static func rootType(_ clsid: ByteSpan) -> String? {
        if clsid.matches(bytes: ole2Suffix, at: 4) {
            switch clsid.le32(0) {
            case 0x0002_0906, 0x0002_0900: return "application/msword"
            case 0x0002_0820, 0x0002_0810: return "application/vnd.ms-excel"
            case 0x0002_0D0B: return "application/vnd.ms-outlook"
            case 0x000C_1084, 0x000C_1086: return "application/x-msi"
            default: return nil
            }
        }
        if clsid.matches(bytes: powerPointCLSID) {
            return "application/vnd.ms-powerpoint"
        }
        return nil
    }

    /// The type a directory entry's name (UTF-16LE, without its terminating NUL) implies. Only the
    /// low byte of each code unit is compared, as the names sought are ASCII.
    private static func streamType(_ name: ByteSpan) -> String? {
        func named(_ text: StaticString, prefix: Bool = false) -> Bool {
            let length = text.utf8CodeUnitCount
            guard prefix ? name.count >= 2 * length : name.count == 2 * length else { return false }
            for index in 0..<length where name[2 * index] != text.utf8Start[index] { return false }
            return true
        }
        if named("WordDocument") { return "application/msword" }
        if named("Workbook") || named("Book") { return "application/vnd.ms-excel" }
        if named("PowerPoint Document") { return "application/vnd.ms-powerpoint" }
        if named("__properties_version1.0") || named("__substg1.0_", prefix: true) { return "application/vnd.ms-outlook" }
        return nil
    }

    // MARK: tar

    static func tar(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.count >= 512 else { return nil }
        if head.matches("ustar", at: 257) { return Sniffed(mimeType: "application/x-tar") }
        // Pre-POSIX archives: only the header checksum identifies them.
        guard head[0] != 0, let stored = octal(head, 148..<156) else { return nil }
        var sum = 0
        for index in 0..<512 { sum += (148..<156).contains(index) ? 0x20 : Int(head[index]) }
        return sum == stored ? Sniffed(mimeType: "application/x-tar") : nil
    }

    private static func octal(_ b: ByteSpan, _ range: Range<Int>) -> Int? {
        var value = 0
        var digits = 0
        for index in range {
            let byte = b[index]
            if byte >= 0x30 && byte <= 0x37 {
                value = value * 8 + Int(byte - 0x30)
                digits += 1
            } else if byte == 0 || byte == 0x20 {
                if digits > 0 { break }
            } else {
                return nil
            }
        }
        return digits > 0 ? value : nil
    }

    // MARK: gzip and TGS

    /// gzip; a TGS sticker when the compressed payload is Lottie JSON.
    static func gzip(_ source: SniffSource) -> Sniffed? {
        let head = source.head
        guard head.be24(0) == 0x1F8B08, let flags = head.u8(3), flags & 0xE0 == 0 else { return nil }
        var result = Sniffed(mimeType: "application/gzip")
        var offset = 10
        if flags & 0x04 != 0 { offset += 2 + (head.le16(10) ?? 0) }
        // Zero-terminated name (0x08) and comment (0x10).
        for flag in 3...4 where flags & (1 << flag) != 0 {
            offset = (head.firstIndex(of: 0, from: offset) ?? head.count) + 1
        }
        if flags & 0x02 != 0 { offset += 2 }
        guard offset < head.count else { return result }
        // What zlib decoded before any error: a corrupt stream still shows its first keys.
        let text = (try? Inflater.inflate(head, from: offset, limit: 256))?.bytes ?? []
        if let lottie = Lottie(ByteSpan(text)) {
            result.mimeType = "application/x-tgsticker"
            result.metadata.setSize(lottie.width, lottie.height)
            result.metadata.isAnimated = true
            if let frames = lottie.frames, let rate = lottie.frameRate, rate > 0 {
                result.metadata.setDuration(Double(frames) / rate)
            }
        }
        return result
    }

    /// The first keys of a Lottie animation: `{"tgs":1,"v":"5.5.2","fr":60,"ip":0,"op":180,"w":512,…`.
    struct Lottie {
        var width: Int?
        var height: Int?
        var frameRate: Double?
        var frames: Int?

        init?(_ bytes: ByteSpan) {
            var index = 0
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D { index += 1 }
            guard bytes.u8(index) == 0x7B else { return nil }
            /// The number after `"key":` among the first bytes, read without building strings.
            func number(_ key: StaticString) -> Double? {
                guard let at = bytes.firstIndex(of: key, in: index..<bytes.count) else { return nil }
                var end = at + key.utf8CodeUnitCount
                let start = end
                while end < bytes.count, (0x30...0x39).contains(bytes[end]) || bytes[end] == 0x2E || bytes[end] == 0x2D {
                    end += 1
                }
                guard end > start, end - start < 24 else { return nil }
                return Double(String(decoding: bytes[start..<end], as: UTF8.self))
            }
            let hasTGS = bytes.firstIndex(of: "\"tgs\":", in: index..<bytes.count) != nil
            let hasVersion = bytes.firstIndex(of: "\"v\":\"", in: index..<bytes.count) != nil
            frameRate = number("\"fr\":")
            guard hasTGS || (hasVersion && frameRate != nil && bytes.firstIndex(of: "\"ip\":", in: index..<bytes.count) != nil)
            else { return nil }
            let side = { (value: Double?) -> Int? in value.flatMap { $0 >= 0 && $0 < 1e9 ? Int($0) : nil } }
            width = side(number("\"w\":"))
            height = side(number("\"h\":"))
            if let start = number("\"ip\":"), let end = number("\"op\":"), end > start, end - start < 1e7 {
                frames = Int(end - start)
            }
        }
    }
}
