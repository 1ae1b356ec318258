internal import CHEIF

/// Decodes HEIC/HEIF and AVIF photos with libheif, loaded on first use.
///
/// libheif applies the `irot`/`imir` transformations; alpha is composited on white; nothing but pixels
/// leaves (EXIF and XMP are never read). The pixel limit is checked from the header before decoding.
///
/// ```swift
/// var transform = Transformer.Configuration()
/// transform.heifDecoder = LibHEIFDecoder()
/// ```
public struct LibHEIFDecoder: HEIFDecoding {
    /// Creates the decoder (libheif itself is loaded at the first decode).
    public init() {}

    /// libheif's version, or nil when `libheif.so.1` cannot be loaded.
    public static var libraryVersion: String? { attache_heif_version().map { String(cString: $0) } }

    /// Decodes the primary image of `data` into an uncompressed top-down 24-bit BMP (``HEIFDecoding``).
    ///
    /// - Throws: ``AttacheError`` in stage `.transform`: `.corruptInput`, `.limitExceeded` (over
    ///   `pixelLimit`, or out of memory), `.unsupportedInput` (a variant libheif has no decoder for),
    ///   `.nativeLibrary` (`libheif.so.1` cannot be loaded).
    public func decodeToBMP(_ data: [UInt8], pixelLimit: Int) throws -> [UInt8] {
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
                attache_heif_decode_bmp(image, buffer.baseAddress, count, &message, message.count)
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
