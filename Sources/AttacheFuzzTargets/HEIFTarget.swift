import Attache
import AttacheCore

/// `LibHEIFDecoder` over one input as a HEIC, HEIF or AVIF file: libheif's parser and decoders, and
/// Attache's own C code beside them (the grid's box walk, the tile-by-tile HEVC decode through
/// libavcodec, the YCbCr conversion). Recompressed once as a photo, through the row resampler and the
/// orientation applied after it, and once decoded whole as a sticker is.
///
/// The image target's pixel cap (2^18) and 64-pixel side keep every input fast; the decoder checks the
/// cap from the header, as it checks the real one.
///
/// Invariant besides "no crash": a recompressed photo fits in the requested side.
public enum HEIFTarget {
    static let decoder = LibHEIFDecoder()

    /// Runs the target over one input.
    public static func run(_ bytes: [UInt8]) {
        if let photo = try? ImageTarget.recompressor.recompressHEIF(bytes, decoder: decoder, thumbnailSides: [16]) {
            let result = photo.result
            invariant((1...64).contains(result.outputWidth) && (1...64).contains(result.outputHeight),
                      "a HEIF photo came out \(result.outputWidth) × \(result.outputHeight) for a 64-pixel side")
        }
        _ = try? decoder.decodeToBMP(bytes, pixelLimit: 1 << 18)
    }

    /// The displayed size of the picture `bytes` decodes to, or nil when it does not decode.
    public static func decodedSize(_ bytes: [UInt8]) -> (width: Int, height: Int)? {
        guard let bmp = try? decoder.decodeToBMP(bytes, pixelLimit: 1 << 18), bmp.count >= 26 else { return nil }
        let width = Int(bmp[18]) | Int(bmp[19]) << 8 | Int(bmp[20]) << 16 | Int(bmp[21]) << 24
        let height = Int(Int32(bitPattern: UInt32(bmp[22]) | UInt32(bmp[23]) << 8 | UInt32(bmp[24]) << 16
            | UInt32(bmp[25]) << 24))
        return (width, abs(height))
    }
}
