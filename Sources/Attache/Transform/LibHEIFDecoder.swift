internal import CHEIF

/// Decodes HEIC/HEIF and AVIF photos with libheif, loaded on first use.
///
/// libheif applies the `irot`/`imir` transformations; alpha is composited on white; nothing but pixels
/// leaves (EXIF and XMP are never read). The pixel limit is checked from the header before decoding.
/// HEVC pictures are decoded by FFmpeg's libavcodec (`libavcodec.so.59`, loaded at run time as a libheif
/// decoder plugin) when it is installed, by libheif's own libde265 otherwise.
///
/// ```swift
/// var transform = Transformer.Configuration()
/// transform.heifDecoder = LibHEIFDecoder()
/// ```
package struct LibHEIFDecoder: HEIFDecoding {
    /// libheif's decoder to use by its `id_name` (tests compare "libde265" with "attache-avcodec"); nil:
    /// the one libheif prefers.
    let decoderID: String?

    /// Creates the decoder (libheif itself is loaded at the first decode).
    package init() { decoderID = nil }

    init(decoderID: String?) { self.decoderID = decoderID }

    /// libheif's version, or nil when `libheif.so.1` cannot be loaded.
    package static var libraryVersion: String? { attache_heif_version().map { String(cString: $0) } }

    /// The `id_name` of the HEVC decoder libheif picks: "attache-avcodec" (FFmpeg's libavcodec) or
    /// "libde265"; nil when libheif cannot be loaded.
    static var hevcDecoderID: String? { attache_heif_hevc_decoder().map { String(cString: $0) } }

    /// How many pictures libavcodec has decoded on the calling thread.
    static var avcodecPicturesOnThisThread: UInt { UInt(attache_heif_avcodec_pictures()) }

    /// Decodes the primary image of `data` into an uncompressed top-down 24-bit BMP (``HEIFDecoding``).
    ///
    /// - Throws: ``AttacheCore/AttacheError`` in stage `.transform`: `.corruptInput`, `.limitExceeded` (over
    ///   `pixelLimit`, or out of memory), `.unsupportedInput` (a variant libheif has no decoder for),
    ///   `.nativeLibrary` (`libheif.so.1` cannot be loaded).
    package func decodeToBMP(_ data: [UInt8], pixelLimit: Int) throws -> [UInt8] {
        var message = [CChar](repeating: 0, count: 256)
        var width: Int32 = 0
        var height: Int32 = 0
        var image: OpaquePointer?
        let opened = data.withUnsafeBufferPointer { bytes in
            attache_heif_open(bytes.baseAddress, bytes.count, Int64(pixelLimit), &image, &width, &height, &message,
                              message.count)
        }
        guard opened == 0, let image else { throw Self.error(opened, message) }
        defer { attache_heif_close(image) }
        let count = attache_heif_bmp_size(width, height)
        var status: Int32 = 0
        let bmp = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            // `data` is still alive here: libheif reads it without a copy.
            status = data.withUnsafeBufferPointer { _ in
                if let decoderID {
                    attache_heif_decode_bmp_using(image, decoderID, buffer.baseAddress, count, &message, message.count)
                } else {
                    attache_heif_decode_bmp(image, buffer.baseAddress, count, &message, message.count)
                }
            }
            initialized = status == 0 ? count : 0
        }
        guard status == 0 else { throw Self.error(status, message) }
        return bmp
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
