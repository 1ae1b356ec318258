/// PNG chunk surgery: the same picture without its metadata, for sending a PNG as it is.
package enum PNGChunks {
    /// Chunks that say how the pixels look, kept; everything else (tEXt, zTXt, iTXt, eXIf, tIME, pHYs,
    /// private chunks) is metadata and dropped.
    static let kept: Set<String> = ["IHDR", "PLTE", "IDAT", "IEND", "gAMA", "cHRM", "sRGB", "iCCP", "sBIT"]

    /// `png` with only the chunks in ``kept``, or nil when it should not be sent as it is: malformed,
    /// animated (APNG), or with transparency (colour types 4 and 6, or a `tRNS` chunk) — a photo with
    /// alpha is composited on white like every other image.
    package static func opaqueStripped(_ png: [UInt8]) -> [UInt8]? {
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard png.count >= 8 + 12 + 13, png.starts(with: signature) else { return nil }
        var out = signature
        out.reserveCapacity(png.count)
        var offset = 8
        var sawIHDR = false
        while offset + 12 <= png.count {
            let length = Int(png[offset]) << 24 | Int(png[offset + 1]) << 16 | Int(png[offset + 2]) << 8 | Int(png[offset + 3])
            guard length <= png.count - offset - 12 else { return nil }
            let type = String(decoding: png[(offset + 4)..<(offset + 8)], as: UTF8.self)
            let end = offset + 12 + length
            switch type {
            case "IHDR":
                guard length == 13, !sawIHDR else { return nil }
                sawIHDR = true
                let colourType = png[offset + 8 + 9]
                if colourType == 4 || colourType == 6 { return nil }
            case "tRNS", "acTL", "fcTL", "fdAT":
                return nil
            default:
                guard sawIHDR else { return nil }
            }
            if kept.contains(type) { out += png[offset..<end] }
            offset = end
            if type == "IEND" { return out }
        }
        return nil
    }
}
