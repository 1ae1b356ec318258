/// Telegram's stripped thumbnail (`photoStrippedSize`, size type `i`): a tiny baseline JPEG without its
/// header. Every such JPEG is made with the same settings (quality 20, 4:2:0, the standard Huffman
/// tables), so all headers are one template but for the height and width bytes; the receiver puts the
/// template back, writes the two sizes into it and appends the scan data and an EOI marker.
///
/// The stripped form is `0x01`, height, width (one byte each: sides up to 255), then the JPEG's
/// entropy-coded data after its SOS header, without the final EOI.
package enum StrippedThumbnail {
    /// The longest side Telegram uses for these previews.
    package static let side = 40
    /// The JPEG quality whose quantisation tables the template holds.
    static let quality = 20
    /// The stripped bytes of a baseline three-component JPEG: its scan data after the SOS header, behind
    /// `0x01`, height and width; nil when it is not such a JPEG or a side is over 255.
    ///
    /// Only the scan data travels, so the JPEG must have been made with the template's tables (quality
    /// 20, standard Huffman tables, 4:2:0), as ``make(rgb:)`` does; the tests rebuild it with Telegram's
    /// published template and decode it.
    package static func strip(_ jpeg: [UInt8]) -> [UInt8]? {
        guard jpeg.count >= 4, jpeg[0] == 0xFF, jpeg[1] == 0xD8, jpeg[jpeg.count - 2] == 0xFF,
            jpeg[jpeg.count - 1] == 0xD9
        else { return nil }
        var index = 2
        var size: (width: Int, height: Int)?
        while index + 4 <= jpeg.count, jpeg[index] == 0xFF {
            let marker = jpeg[index + 1]
            let length = Int(jpeg[index + 2]) << 8 | Int(jpeg[index + 3])
            guard length >= 2, index + 2 + length <= jpeg.count else { return nil }
            switch marker {
            case 0xC0:
                // SOF0: precision, height, width, three components, the first 2×2 and the others 1×1.
                guard length == 17, jpeg[index + 9] == 3, jpeg[index + 11] == 0x22, jpeg[index + 14] == 0x11,
                    jpeg[index + 17] == 0x11
                else { return nil }
                size = (Int(jpeg[index + 7]) << 8 | Int(jpeg[index + 8]), Int(jpeg[index + 5]) << 8 | Int(jpeg[index + 6]))
            case 0xC1...0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:
                return nil  // not baseline
            case 0xDA:
                guard let size, (1...255).contains(size.width), (1...255).contains(size.height) else { return nil }
                let scan = index + 2 + length
                return [1, UInt8(size.height), UInt8(size.width)] + jpeg[scan..<(jpeg.count - 2)]
            default:
                break
            }
            index += 2 + length
        }
        return nil
    }

    /// Encodes packed RGB pixels (sides up to 255) as the JPEG Telegram's template describes and returns
    /// its stripped bytes; nil when a side is over 255.
    /// - Throws: ``AttacheError`` from the JPEG encoder.
    static func make(rgb raster: Raster) throws -> [UInt8]? {
        precondition(raster.channels == 3, "a stripped thumbnail is made from RGB")
        let jpeg = try TurboJPEGEncoder().encode(packed: raster, quality: quality, progressive: false)
        return strip(jpeg)
    }
}
