internal import CHEIF

/// Decodes HEIC/HEIF and AVIF photos with libheif, loaded on first use.
///
/// Orientation (`irot`/`imir`) is applied; alpha is composited on white; nothing but pixels leaves (EXIF
/// and XMP are never read). The pixel limit is checked from the header before decoding. HEVC pictures are
/// decoded by FFmpeg's libavcodec (`libavcodec.so.59`, loaded at run time) when it is installed, by
/// libheif's own libde265 otherwise.
///
/// Memory: the rows go to the caller (the resampler) as they are made; no BMP or other copy of the
/// picture is made here. A grid of HEVC tiles (iPhones write 512 × 512 tiles), the common case, is
/// decoded here a row of tiles at a time with libavcodec, converted from YCbCr with libheif's own
/// arithmetic (the same pixels libheif gives), and its orientation left to the caller, who applies it
/// after downscaling: libheif 1.15 can only hand over a grid whole, pasted together as planar RGB
/// (36 MB at 12 MP), and has no call for one tile (1.19 has).
/// Anything else (one picture, alpha, AVIF, `clap`, libavcodec missing) is decoded whole by libheif as
/// planar RGB. Measured on a 12 MP photo to 1280 px (2026-11-30, medians of 7; docs/BENCHMARKS.md, HEIC):
///
/// | step | decoder memory, grid | one picture |
/// |---|---:|---:|
/// | before: libheif's whole RGB picture, then a whole BMP | 74.9 MB | 110.4 MB |
/// | rows straight to the resampler | 47.2 MB | 86.3 MB |
/// | libheif asked for YCbCr (dropped: it assembles a grid as RGB anyway) | 54.2 MB | 89.6 MB |
/// | the grid a row of tiles at a time, here | 7.3 MB | — |
///
/// The tiles' decode took 0.91–0.98 s of CPU where libheif's whole grid took 1.12–1.17 s. Working set
/// of `attache recompress` (peak RSS less `attache detect`'s; debug build): 36.7 MB for the grid, 114 MB
/// for the one-picture file, which issue 52 measured at 127 MB before (release).
///
/// ```swift
/// var transform = Transformer.Configuration()
/// transform.heifDecoder = LibHEIFDecoder()
/// ```
package struct LibHEIFDecoder: HEIFDecoding {
    /// libheif's decoder to use by its `id_name` (tests compare "libde265" with "attache-avcodec"); nil:
    /// the one libheif prefers.
    let decoderID: String?
    /// Whether libheif decodes every picture whole, grids too (the reference the tests compare the
    /// tile-by-tile decode with).
    let libheifDecodes: Bool

    /// Creates the decoder (libheif itself is loaded at the first decode).
    package init() {
        decoderID = nil
        libheifDecodes = false
    }

    init(decoderID: String?, libheifDecodes: Bool = false) {
        self.decoderID = decoderID
        self.libheifDecodes = libheifDecodes
    }

    /// libheif's version, or nil when `libheif.so.1` cannot be loaded.
    package static var libraryVersion: String? { attache_heif_version().map { String(cString: $0) } }

    /// The `id_name` of the HEVC decoder libheif picks: "attache-avcodec" (FFmpeg's libavcodec) or
    /// "libde265"; nil when libheif cannot be loaded.
    static var hevcDecoderID: String? { attache_heif_hevc_decoder().map { String(cString: $0) } }

    /// How many pictures libavcodec has decoded on the calling thread.
    static var avcodecPicturesOnThisThread: UInt { UInt(attache_heif_avcodec_pictures()) }

    /// How many grids have been decoded tile by tile on the calling thread (rather than by libheif).
    static var tiledGridsOnThisThread: UInt { UInt(attache_heif_tiled_grids()) }

    /// Decodes the primary image of `data` a row at a time (``HEIFDecoding``).
    ///
    /// - Throws: ``AttacheCore/AttacheError`` in stage `.transform`: `.corruptInput`, `.limitExceeded` (over
    ///   `pixelLimit`, or out of memory), `.unsupportedInput` (a variant libheif has no decoder for),
    ///   `.nativeLibrary` (`libheif.so.1` cannot be loaded); and whatever `prepare` throws.
    package func decodeRows(_ data: [UInt8], pixelLimit: Int, prepare: (HEIFLayout) throws -> Void,
                            row: (UnsafePointer<UInt8>) -> Void) throws {
        var message = [CChar](repeating: 0, count: 256)
        // libheif reads `data` without a copy: it stays pinned until the handle is closed.
        let status: Int32 = try data.withUnsafeBufferPointer { bytes in
            var image: OpaquePointer?
            var width: Int32 = 0, height: Int32 = 0, orientation: Int32 = 1
            let opened = attache_heif_open(bytes.baseAddress, bytes.count, Int64(pixelLimit), &image, &width, &height,
                                           &message, message.count)
            guard opened == 0, let image else { throw Self.error(opened, message) }
            defer { attache_heif_close(image) }
            let planned = Self.withCString(decoderID) { name in
                attache_heif_plan(image, name, libheifDecodes ? 1 : 0, &width, &height, &orientation, &message,
                                  message.count)
            }
            guard planned == 0 else { throw Self.error(planned, message) }
            try prepare(HEIFLayout(width: Int(width), height: Int(height), orientation: Int(orientation)))
            return withoutActuallyEscaping(row) { row in
                var sink = row
                return withUnsafeMutablePointer(to: &sink) { context in
                    attache_heif_decode_rows(image, { context, pixels in
                        context!.assumingMemoryBound(to: ((UnsafePointer<UInt8>) -> Void).self).pointee(pixels!)
                    }, context, &message, message.count)
                }
            }
        }
        guard status == 0 else { throw Self.error(status, message) }
    }

    /// `body` with `text` as a C string, or with NULL when it is nil.
    private static func withCString<Result>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
        guard let text else { return body(nil) }
        return text.withCString { body($0) }
    }

    private static func error(_ status: Int32, _ message: [CChar]) -> AttacheError {
        let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let code: AttacheError.Code =
            switch status {
            case 2: .limitExceeded
            case 3: .nativeLibrary
            case 4: .unsupportedInput
            case 5: .limitExceeded
            default: .corruptInput
            }
        return AttacheError(code, stage: .transform, "cannot decode the HEIF image: \(text)",
                            cause: NativeError(library: "libheif", code: Int(status), text: text))
    }
}
