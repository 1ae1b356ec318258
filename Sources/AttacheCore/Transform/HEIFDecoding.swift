
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

/// The HEIF decoder a command-line program installs at start, for commands (`recompress`) that build their
/// ``Transformer`` without the library's pipeline configuration.
package enum HEIFDecoders {
    private static let installed = LockedValue<(any HEIFDecoding)?>(nil)

    /// The decoder installed, if any.
    package static var current: (any HEIFDecoding)? { installed.withLock { $0 } }

    /// Installs `decoder` for this process.
    package static func install(_ decoder: any HEIFDecoding) {
        installed.withLock { $0 = decoder }
    }
}
