internal import CTurboJPEG

/// What a JPEG header says, read before any pixel buffer exists.
struct JPEGHeader {
    var width: Int
    var height: Int
    /// A `TJSAMP` value, or -1 when the sampling is unusual.
    var subsampling: Int32
    /// A `TJCS` value.
    var colorspace: Int32

    var isYCbCrOrGray: Bool { colorspace == Int32(TJCS_YCbCr.rawValue) || colorspace == Int32(TJCS_GRAY.rawValue) }
    var isGray: Bool { colorspace == Int32(TJCS_GRAY.rawValue) }
    var isCMYK: Bool { colorspace == Int32(TJCS_CMYK.rawValue) || colorspace == Int32(TJCS_YCCK.rawValue) }
}

/// Packed pixel layouts the wrappers decode to and encode from.
enum PackedFormat {
    case gray, rgb, rgba, cmyk

    var channels: Int {
        switch self {
        case .gray: 1
        case .rgb: 3
        case .rgba, .cmyk: 4
        }
    }

    var tjFormat: Int32 {
        switch self {
        case .gray: Int32(TJPF_GRAY.rawValue)
        case .rgb: Int32(TJPF_RGB.rawValue)
        case .rgba: Int32(TJPF_RGBA.rawValue)
        case .cmyk: Int32(TJPF_CMYK.rawValue)
        }
    }
}

/// Owns one TurboJPEG decompressor handle.
///
/// Never pass `TJFLAG_FASTDCT` here: libjpeg-turbo 2.1.5 corrupts colour when it is combined with a
/// scaled decode to YUV (upstream issue #912), and the accurate DCT costs little at reduced scales.
final class TurboJPEGDecoder {
    private let handle: tjhandle

    init() throws {
        guard let handle = tjInitDecompress() else {
            throw AttacheError(.nativeLibrary, stage: .transform, "cannot create a JPEG decoder",
                               cause: NativeError(library: "turbojpeg", code: -1, text: String(cString: tjGetErrorStr2(nil))))
        }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    func header(_ jpeg: [UInt8]) throws -> JPEGHeader {
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
        let status = jpeg.withUnsafeBufferPointer {
            tjDecompressHeader3(handle, $0.baseAddress, UInt(jpeg.count), &width, &height, &subsampling, &colorspace)
        }
        // A warning (an unknown JFIF version, stray bytes before a marker) leaves a complete header:
        // libjpeg-turbo's own tools go on, and so does this.
        guard status == 0 || tjGetErrorCode(handle) == Int32(TJERR_WARNING.rawValue) else {
            throw failure("cannot read the JPEG header")
        }
        guard width > 0, height > 0 else {
            throw AttacheError(.corruptInput, stage: .transform, "the JPEG header declares an empty image")
        }
        return JPEGHeader(width: Int(width), height: Int(height), subsampling: subsampling, colorspace: colorspace)
    }

    /// The scaled size the decoder produces for a scaling factor `num`/`denom`.
    static func scaled(_ dimension: Int, _ factor: (num: Int, denom: Int)) -> Int {
        Int(attache_tj_scaled(Int32(dimension), tjscalingfactor(num: Int32(factor.num), denom: Int32(factor.denom))))
    }

    /// The smallest reduction whose output is still at least `minWidth` × `minHeight`.
    ///
    /// Only 1/8, 1/4, 1/2, 3/4 and 1 are considered: measured on a 12 MP photo to 1280 px, the 3/8 and
    /// 5/8 reductions (odd-sized IDCTs) cost 0.025 and 0.010 SSIM against a full-decode Lanczos reference,
    /// while 1/2 costs 0.005 and 3/4 nothing measurable, for the same Huffman-decoding time.
    static func scalingFactor(width: Int, height: Int, minWidth: Int, minHeight: Int) -> (num: Int, denom: Int) {
        var count: Int32 = 0
        guard let list = tjGetScalingFactors(&count) else { return (1, 1) }
        var best = (num: 1, denom: 1)
        var bestWidth = width
        for i in 0..<Int(count) {
            let f = (num: Int(list[i].num), denom: Int(list[i].denom))
            guard f.num <= f.denom, [1, 2, 4, 6, 8].contains(f.num * 8 / f.denom), (f.num * 8) % f.denom == 0 else { continue }
            let w = scaled(width, f), h = scaled(height, f)
            if w >= minWidth, h >= minHeight, w < bestWidth {
                best = f
                bestWidth = w
            }
        }
        return best
    }

    /// Decodes to separate Y, Cb, Cr planes (or just Y for greyscale) at a DCT-scaled size, skipping
    /// colour conversion entirely.
    func decodePlanes(_ jpeg: [UInt8], header: JPEGHeader, scaledWidth: Int, scaledHeight: Int, flags: Int32) throws -> [Raster] {
        let planeCount = header.isGray ? 1 : 3
        var planes: [Raster] = (0..<planeCount).map { id in
            let w = Int(tjPlaneWidth(Int32(id), Int32(scaledWidth), header.subsampling))
            let h = Int(tjPlaneHeight(Int32(id), Int32(scaledHeight), header.subsampling))
            return Raster(width: max(w, 1), height: max(h, 1), channels: 1)
        }
        var strides = planes.map { Int32($0.width) }
        let status: Int32 = jpeg.withUnsafeBufferPointer { src in
            withPlanePointers(&planes) { pointers in
                tjDecompressToYUVPlanes(handle, src.baseAddress, UInt(jpeg.count), pointers,
                                        Int32(scaledWidth), &strides, Int32(scaledHeight), flags)
            }
        }
        try check(status, "cannot decode the JPEG image")
        return planes
    }

    /// Decodes to packed pixels at a DCT-scaled size.
    func decodePacked(_ jpeg: [UInt8], scaledWidth: Int, scaledHeight: Int, format: PackedFormat, flags: Int32) throws -> Raster {
        var raster = Raster(width: scaledWidth, height: scaledHeight, channels: format.channels)
        let status = jpeg.withUnsafeBufferPointer { src in
            raster.pixels.withUnsafeMutableBufferPointer { dst in
                tjDecompress2(handle, src.baseAddress, UInt(jpeg.count), dst.baseAddress,
                              Int32(scaledWidth), 0, Int32(scaledHeight), format.tjFormat, flags)
            }
        }
        try check(status, "cannot decode the JPEG image")
        return raster
    }

    /// Accepts warnings (libjpeg's "corrupt data: extraneous bytes", "unknown JFIF revision" and the
    /// like, common in camera files: the picture is still complete), as libjpeg-turbo's own tools do
    /// without `-stoponwarning`, and turns fatal errors into `corruptInput`. A truncated
    /// file is also only a warning to libjpeg, which fills the missing part with grey: that is refused,
    /// so that a cut-off photo is reported instead of sent as a half-grey picture. TurboJPEG 2.x has no
    /// code for the warning, only libjpeg's message (JWRN_JPEG_EOF).
    private func check(_ status: Int32, _ message: String) throws {
        guard status != 0 else { return }
        if tjGetErrorCode(handle) == Int32(TJERR_WARNING.rawValue) {
            let text = String(cString: tjGetErrorStr2(handle))
            guard text.contains("Premature end of JPEG file") else { return }
            throw failure("the JPEG image is truncated")
        }
        throw failure(message)
    }

    private func failure(_ message: String) -> AttacheError {
        let text = String(cString: tjGetErrorStr2(handle))
        return AttacheError(.corruptInput, stage: .transform, "\(message): \(text)",
                            cause: NativeError(library: "turbojpeg", code: Int(tjGetErrorCode(handle)), text: text))
    }
}

/// Owns one TurboJPEG compressor handle.
final class TurboJPEGEncoder {
    private let handle: tjhandle

    init() throws {
        guard let handle = tjInitCompress() else {
            throw AttacheError(.nativeLibrary, stage: .transform, "cannot create a JPEG encoder",
                               cause: NativeError(library: "turbojpeg", code: -1, text: String(cString: tjGetErrorStr2(nil))))
        }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// Encodes Y/Cb/Cr planes (three planes sized for 4:2:0, or one plane for greyscale).
    func encode(planes: [Raster], width: Int, height: Int, quality: Int, progressive: Bool) throws -> [UInt8] {
        let subsampling = planes.count == 1 ? Int32(TJSAMP_GRAY.rawValue) : Int32(TJSAMP_420.rawValue)
        // TurboJPEG reads each plane at its padded size (tjPlaneWidth × tjPlaneHeight: for 4:2:0 the Y
        // plane's width and height rounded up to even), whatever the strides say. An odd-sized Y plane
        // would have it read up to a row past the pixels, and encode those heap bytes into the padding
        // of the JPEG that is sent.
        var planes = planes.enumerated().map { id, plane in
            plane.padded(width: Int(tjPlaneWidth(Int32(id), Int32(width), subsampling)),
                         height: Int(tjPlaneHeight(Int32(id), Int32(height), subsampling)))
        }
        var strides = planes.map { Int32($0.width) }
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        let planeCount = planes.count
        let status = withPlanePointers(&planes) { pointers in
            pointers.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: planeCount) { constPointers in
                tjCompressFromYUVPlanes(handle, constPointers, Int32(width), &strides, Int32(height), subsampling,
                                        &buffer, &size, Int32(quality), progressive ? TJFLAG_PROGRESSIVE : 0)
            }
        }
        defer { tjFree(buffer) }
        guard status == 0, let buffer else { throw failure() }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(size)))
    }

    /// Encodes packed grey, RGB or RGBA pixels with 4:2:0 chroma subsampling, or CMYK (stored as
    /// YCCK with an Adobe marker, as Photoshop does) when `format` is `.cmyk`.
    func encode(packed raster: Raster, quality: Int, progressive: Bool, format: PackedFormat? = nil) throws -> [UInt8] {
        let format = format ?? (raster.channels == 1 ? .gray : (raster.channels == 3 ? .rgb : .rgba))
        precondition(format.channels == raster.channels)
        let subsampling: Int32 = switch format {
        case .gray: Int32(TJSAMP_GRAY.rawValue)
        case .cmyk: Int32(TJSAMP_444.rawValue)
        case .rgb, .rgba: Int32(TJSAMP_420.rawValue)
        }
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        let status = raster.pixels.withUnsafeBufferPointer { src in
            tjCompress2(handle, src.baseAddress, Int32(raster.width), 0, Int32(raster.height), format.tjFormat,
                        &buffer, &size, subsampling, Int32(quality), progressive ? TJFLAG_PROGRESSIVE : 0)
        }
        defer { tjFree(buffer) }
        guard status == 0, let buffer else { throw failure() }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(size)))
    }

    private func failure() -> AttacheError {
        let text = String(cString: tjGetErrorStr2(handle))
        return AttacheError(.nativeLibrary, stage: .transform, "cannot encode the JPEG image: \(text)",
                            cause: NativeError(library: "turbojpeg", code: Int(tjGetErrorCode(handle)), text: text))
    }
}

/// Calls `body` with a C array of pointers to each plane's pixels (at most three), valid only during
/// the call. The pixel arrays are moved out of `planes` for the call so that no two accesses overlap.
private func withPlanePointers<R>(_ planes: inout [Raster], _ body: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>) -> R) -> R {
    precondition(planes.count <= 3)
    var storage: [[UInt8]] = planes.map(\.pixels) + Array(repeating: [], count: 3 - planes.count)
    for i in planes.indices { planes[i].pixels = [] }
    defer { for i in planes.indices { planes[i].pixels = storage[i] } }
    var first = storage[0], second = storage[1], third = storage[2]
    storage = []
    defer { storage = [first, second, third] }
    let pointers = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 3)
    defer { pointers.deallocate() }
    return first.withUnsafeMutableBufferPointer { a in
        second.withUnsafeMutableBufferPointer { b in
            third.withUnsafeMutableBufferPointer { c in
                pointers[0] = a.baseAddress
                pointers[1] = b.baseAddress
                pointers[2] = c.baseAddress
                return body(pointers)
            }
        }
    }
}
