import Glibc

/// What a walk over a JPEG's marker segments found, without decoding any pixels.
///
/// The walk follows the whole stream (segments, entropy-coded data, segments between progressive
/// scans) up to EOI, so it also counts scans and notices data appended after the image (phones append
/// depth maps and second pictures there).
struct JPEGMarkers {
    /// One segment that can be copied as it is: its marker byte and full bytes (marker and length included).
    struct Segment {
        var marker: UInt8
        var range: Range<Int>
    }

    /// The EXIF orientation (1–8), or 1 when absent or unreadable.
    var orientation = 1
    /// The number of SOS markers: 1 for baseline, typically ~10 for progressive.
    var scanCount = 0
    /// Whether an Adobe APP14 segment is present (its CMYK data is stored inverted).
    var hasAdobeMarker = false
    /// Whether anything a stripped copy would drop is present (APPn other than plain JFIF/ICC/Adobe, COM,
    /// bytes after EOI, stray bytes between segments).
    var hasRemovableMetadata = false
    /// The APP2 ICC_PROFILE segments, in order.
    var iccSegments: [Segment] = []
    /// Where EOI ends (or the data ends, for a truncated file).
    var end = 0

    /// Parses `bytes`; returns nil when it does not start like a JPEG.
    init?(_ bytes: [UInt8], scanLimit: Int = .max) {
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
        var i = 2
        let n = bytes.count
        end = n
        walk: while i + 1 < n {
            if bytes[i] != 0xFF {
                // Bytes where a marker should be: libjpeg skips them to the next 0xFF with a warning
                // ("N extraneous bytes before marker"), and so does every viewer.
                // A stripped copy leaves them out.
                i = Self.nextFF(bytes, from: i)
                hasRemovableMetadata = true
                continue
            }
            let marker = bytes[i + 1]
            if marker == 0xFF { i += 1; continue }  // fill bytes
            if marker == 0xD9 {
                end = i + 2
                if end < n { hasRemovableMetadata = true }
                break walk
            }
            if marker == 0x01 || (0xD0...0xD7).contains(marker) { i += 2; continue }
            guard i + 3 < n else { break }
            let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            guard length >= 2, i + 2 + length <= n else { break }
            let body = (i + 4)..<(i + 2 + length)
            let segment = Segment(marker: marker, range: i..<(i + 2 + length))
            switch marker {
            case 0xE0:
                if !Self.isPlainJFIF(bytes, body) { hasRemovableMetadata = true }
            case 0xE1:
                hasRemovableMetadata = true
                if let value = Self.exifOrientation(bytes, body) { orientation = value }
            case 0xE2:
                if Self.hasPrefix(bytes, body, "ICC_PROFILE\0") {
                    iccSegments.append(segment)
                } else {
                    hasRemovableMetadata = true
                }
            case 0xEE:
                if Self.hasPrefix(bytes, body, "Adobe") { hasAdobeMarker = true } else { hasRemovableMetadata = true }
            case 0xE3...0xED, 0xEF, 0xFE:
                hasRemovableMetadata = true
            default:
                break
            }
            i = segment.range.upperBound
            if marker == 0xDA {
                scanCount += 1
                if scanCount > scanLimit { break walk }
                i = Self.endOfEntropyData(bytes, from: i)
            }
        }
    }

    /// Returns `bytes` with every segment that ``hasRemovableMetadata`` counts left out; the image data,
    /// tables, JFIF, ICC and Adobe segments are copied byte for byte.
    static func stripped(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8]
        out.reserveCapacity(bytes.count)
        var i = 2
        let n = bytes.count
        while i + 1 < n {
            if bytes[i] != 0xFF {
                i = nextFF(bytes, from: i)  // stray bytes between segments are left out
                continue
            }
            let marker = bytes[i + 1]
            if marker == 0xFF { i += 1; continue }
            if marker == 0xD9 { out += [0xFF, 0xD9]; return out }
            if marker == 0x01 || (0xD0...0xD7).contains(marker) {
                out += bytes[i..<(i + 2)]
                i += 2
                continue
            }
            guard i + 3 < n else { break }
            let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            guard length >= 2, i + 2 + length <= n else { break }
            let body = (i + 4)..<(i + 2 + length)
            let keep: Bool
            switch marker {
            case 0xE0: keep = isPlainJFIF(bytes, body)
            case 0xE2: keep = hasPrefix(bytes, body, "ICC_PROFILE\0")
            case 0xEE: keep = hasPrefix(bytes, body, "Adobe")
            case 0xE1, 0xE3...0xED, 0xEF, 0xFE: keep = false
            default: keep = true
            }
            let segmentEnd = i + 2 + length
            if keep { out += bytes[i..<segmentEnd] }
            i = segmentEnd
            if marker == 0xDA {
                let dataStart = i
                i = endOfEntropyData(bytes, from: i)
                out += bytes[dataStart..<min(i, n)]
            }
        }
        // A truncated stream: keep what there was and close it, as the decoder would.
        out += [0xFF, 0xD9]
        return out
    }

    /// Inserts `segments` (complete marker segments) after the SOI and any APP0 of a JPEG made by the
    /// encoder, which is where readers look for an ICC profile.
    static func inserting(_ segments: [[UInt8]], into jpeg: [UInt8]) -> [UInt8] {
        guard !segments.isEmpty, jpeg.count > 4 else { return jpeg }
        var at = 2
        if jpeg[2] == 0xFF, jpeg[3] == 0xE0, jpeg.count > 6 {
            at = 4 + (Int(jpeg[4]) << 8 | Int(jpeg[5]))
        }
        var out = Array(jpeg[..<at])
        for segment in segments { out += segment }
        out += jpeg[at...]
        return out
    }

    /// Builds an APP1 EXIF segment that holds only an orientation tag (used by tests and tools).
    static func exifSegment(orientation: Int) -> [UInt8] {
        let tiff: [UInt8] = [
            0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08,  // big-endian TIFF, IFD0 at 8
            0x00, 0x01,  // one entry
            0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, UInt8(orientation), 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00,  // no next IFD
        ]
        let body = Array("Exif\0\0".utf8) + tiff
        let length = body.count + 2
        return [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + body
    }

    /// Skips entropy-coded data from `start` and returns the index of the next real marker (or the end):
    /// FF00 is a stuffed byte and FFD0–FFD7 are restart markers, both part of the data. Uses `memchr`
    /// because this runs over the whole file, megabytes for a photo.
    static func endOfEntropyData(_ bytes: [UInt8], from start: Int) -> Int {
        bytes.withUnsafeBufferPointer { buffer in
            let n = buffer.count
            var i = start
            while i + 1 < n {
                guard let found = memchr(buffer.baseAddress! + i, 0xFF, n - i) else { return n }
                i = buffer.baseAddress!.distance(to: found.assumingMemoryBound(to: UInt8.self))
                guard i + 1 < n else { return n }
                let next = buffer[i + 1]
                if next == 0xFF { i += 1; continue }
                if next == 0 || (0xD0...0xD7).contains(next) { i += 2; continue }
                return i
            }
            return n
        }
    }

    /// The index of the next 0xFF at or after `start`, or the end.
    static func nextFF(_ bytes: [UInt8], from start: Int) -> Int {
        var i = start
        while i < bytes.count, bytes[i] != 0xFF { i += 1 }
        return i
    }

    private static func hasPrefix(_ bytes: [UInt8], _ body: Range<Int>, _ prefix: String) -> Bool {
        let p = Array(prefix.utf8)
        guard body.count >= p.count else { return false }
        return bytes[body.lowerBound..<(body.lowerBound + p.count)].elementsEqual(p)
    }

    /// A JFIF APP0 without an embedded thumbnail carries only a version and a pixel density.
    private static func isPlainJFIF(_ bytes: [UInt8], _ body: Range<Int>) -> Bool {
        guard hasPrefix(bytes, body, "JFIF\0"), body.count >= 14 else { return false }
        return bytes[body.lowerBound + 12] == 0 && bytes[body.lowerBound + 13] == 0
    }

    /// Reads tag 0x0112 from IFD0 of an APP1 EXIF body; nil when absent or malformed.
    private static func exifOrientation(_ bytes: [UInt8], _ body: Range<Int>) -> Int? {
        guard hasPrefix(bytes, body, "Exif\0\0") else { return nil }
        let t = body.lowerBound + 6
        let tiffEnd = body.upperBound
        guard tiffEnd - t >= 8 else { return nil }
        let bigEndian: Bool
        switch (bytes[t], bytes[t + 1]) {
        case (0x4D, 0x4D): bigEndian = true
        case (0x49, 0x49): bigEndian = false
        default: return nil
        }
        func u16(_ at: Int) -> Int? {
            guard at >= t, at + 2 <= tiffEnd else { return nil }
            return bigEndian ? Int(bytes[at]) << 8 | Int(bytes[at + 1]) : Int(bytes[at + 1]) << 8 | Int(bytes[at])
        }
        func u32(_ at: Int) -> Int? {
            guard let a = u16(at), let b = u16(at + 2) else { return nil }
            return bigEndian ? a << 16 | b : b << 16 | a
        }
        guard u16(t + 2) == 42, let ifd = u32(t + 4), let count = u16(t + ifd) else { return nil }
        for entry in 0..<min(count, 512) {
            let e = t + ifd + 2 + entry * 12
            guard let tag = u16(e) else { return nil }
            if tag == 0x0112 {
                guard u16(e + 2) == 3, let value = u16(e + 8), (1...8).contains(value) else { return nil }
                return value
            }
        }
        return nil
    }
}
