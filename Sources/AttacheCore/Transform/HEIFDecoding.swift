/// Decodes HEIC/HEIF and AVIF photos for the Transform stage.
///
/// The decoder (libheif, in the `Attache` library: ``Transformer/Configuration/heifDecoder``) lives outside
/// this module, which links no shared codec library: libheif is loaded on first use (`dlopen`), so
/// nothing that never meets a HEIF photo maps it and its decoders.
package protocol HEIFDecoding: Sendable {
    /// Decodes the primary image of the HEIF or AVIF file `data`, any alpha composited on white, and hands
    /// its rows to `row`, top to bottom.
    ///
    /// `prepare` receives the layout of the rows once the header has been read and checked against
    /// `pixelLimit`, before any pixel is decoded: their size, and the orientation (`irot`, `imir`) still
    /// to be applied to them, which the caller applies after downscaling. Each row is `width × 3` bytes of
    /// R, G, B, valid during the call. No RGB copy of the whole picture is made.
    ///
    /// - Throws: ``AttacheError`` in stage `.transform`: `.corruptInput`, `.limitExceeded` (over
    ///   `pixelLimit`, checked before decoding), `.unsupportedInput`, `.nativeLibrary` (libheif missing);
    ///   and whatever `prepare` throws.
    func decodeRows(_ data: [UInt8], pixelLimit: Int, prepare: (HEIFLayout) throws -> Void,
                    row: (UnsafePointer<UInt8>) -> Void) throws
}

/// How a HEIF decoder hands over the rows of a picture.
package struct HEIFLayout: Sendable, Equatable {
    /// The size of the rows as they come (before ``orientation``).
    package var width: Int
    package var height: Int
    /// The EXIF orientation (1–8) that turns the rows upright: 1 when the decoder has already applied the
    /// file's transformations.
    package var orientation: Int

    /// Creates a layout.
    package init(width: Int, height: Int, orientation: Int) {
        self.width = width
        self.height = height
        self.orientation = orientation
    }

    /// The size as displayed, after ``orientation``.
    package var displayedWidth: Int { orientation >= 5 ? height : width }
    package var displayedHeight: Int { orientation >= 5 ? width : height }
}

extension HEIFDecoding {
    /// The upright picture ``decodeRows(_:pixelLimit:prepare:row:)`` decodes, as an uncompressed top-down
    /// 24-bit BMP: lossless and metadata-free, for the paths that take a whole picture (stickers).
    ///
    /// - Throws: ``AttacheError`` as ``decodeRows(_:pixelLimit:prepare:row:)`` does.
    package func decodeToBMP(_ data: [UInt8], pixelLimit: Int) throws -> [UInt8] {
        var raster = Raster(width: 0, height: 0, channels: 3, pixels: [])
        var orientation = 1, y = 0
        try decodeRows(data, pixelLimit: pixelLimit, prepare: { layout in
            raster = Raster(width: layout.width, height: layout.height, channels: 3)
            orientation = layout.orientation
        }, row: { row in
            guard y < raster.height else { return }
            let rowBytes = raster.width * 3
            raster.pixels.withUnsafeMutableBufferPointer { pixels in
                (pixels.baseAddress! + y * rowBytes).update(from: row, count: rowBytes)
            }
            y += 1
        })
        raster = raster.applyingOrientation(orientation)
        let rowBytes = (raster.width * 3 + 3) & ~3
        var bmp = BMPDecoder.header(width: raster.width, height: raster.height)
        bmp += [UInt8](repeating: 0, count: rowBytes * raster.height)
        bmp.withUnsafeMutableBufferPointer { out in
            for y in 0..<raster.height {
                for x in 0..<raster.width {
                    let p = (y * raster.width + x) * 3, o = 54 + y * rowBytes + x * 3
                    out[o] = raster.pixels[p + 2]
                    out[o + 1] = raster.pixels[p + 1]
                    out[o + 2] = raster.pixels[p]
                }
            }
        }
        return bmp
    }
}
