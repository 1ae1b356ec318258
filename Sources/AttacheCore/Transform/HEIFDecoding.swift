
/// Decodes HEIC/HEIF and AVIF photos for the Transform stage.
///
/// The decoder (libheif, in the `Attache` library: ``Transformer/Configuration/heifDecoder``) lives outside
/// this module, which links no shared codec library: libheif is loaded on first use (`dlopen`), so
/// nothing that never meets a HEIF photo maps it and its decoders.
package protocol HEIFDecoding: Sendable {
    /// Decodes the primary image of the HEIF or AVIF file `data` with its orientation (`irot`, `imir`)
    /// applied and any alpha composited on white, as an uncompressed top-down 24-bit BMP: lossless and
    /// metadata-free, ready for the photo path.
    ///
    /// - Throws: ``AttacheError`` in stage `.transform`: `.corruptInput`, `.limitExceeded` (over
    ///   `pixelLimit`, checked before decoding), `.unsupportedInput`, `.nativeLibrary` (libheif missing).
    func decodeToBMP(_ data: [UInt8], pixelLimit: Int) throws -> [UInt8]
}
