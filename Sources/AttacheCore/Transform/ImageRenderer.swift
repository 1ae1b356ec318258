internal import CTurboJPEG

/// An image whose header has been read and checked against the limits, pixels not yet decoded.
struct InspectedImage {
    var format: SniffedImageFormat
    /// The whole file, or nothing when it is read from ``file`` a piece at a time.
    var data: [UInt8]
    /// A PNG left on disk for its decoder to read a piece at a time (``ImageFile/openPNG(_:limit:)``).
    var file: OpenImageFile?
    /// The file's size.
    var byteCount: Int { file?.size ?? data.count }
    /// Whether the JPEG has more than one scan (progressive, or sequential in several scans): libjpeg then
    /// keeps every DCT coefficient of the picture, 2 bytes per sample.
    var multiScan: Bool { (markers?.scanCount ?? 1) > 1 }
    /// As stored, before orientation.
    var width: Int
    var height: Int
    /// EXIF orientation, 1 when there is none.
    var orientation: Int
    var hasAlpha: Bool
    var jpeg: JPEGHeader?
    var markers: JPEGMarkers?
    /// The most progressive scans the decoder may go through (already checked by the marker walk).
    var scanLimit = 64
    /// An Adam7-interlaced PNG, which is decoded whole rather than row by row.
    var interlaced = false
    /// A lossless WebP (whose decoder holds the whole picture as ARGB), rather than a lossy one.
    var lossless = false

    /// The size as the image is meant to be seen, after orientation.
    var displayedWidth: Int { orientation >= 5 ? height : width }
    var displayedHeight: Int { orientation >= 5 ? width : height }
}

/// Pixels after decoding, resampling and orientation, ready for an encoder.
enum RenderedImage {
    /// Y, Cb, Cr planes sized for 4:2:0 (or just Y for greyscale), from a JPEG decoded without colour
    /// conversion.
    case planes([Raster], width: Int, height: Int)
    /// Grey, RGB, or straight (not premultiplied) RGBA.
    case packed(Raster)

    var width: Int {
        switch self {
        case .planes(_, let width, _): width
        case .packed(let raster): raster.width
        }
    }

    var height: Int {
        switch self {
        case .planes(_, _, let height): height
        case .packed(let raster): raster.height
        }
    }

    /// Whether the pixels carry alpha (packed RGBA).
    var hasAlpha: Bool {
        if case .packed(let raster) = self { return raster.channels == 4 }
        return false
    }
}

/// The decode → resample → orient part of the Transform stage, shared by photos, stickers and thumbnails.
enum ImageRenderer {
    /// Reads the header of `data` and enforces the pixel and scan limits before anything is allocated.
    ///
    /// `wholeImageByteLimit` bounds the images whose decoder needs the whole picture in memory at once
    /// (see ``wholeImageBytes(_:)``); every other image is decoded a few rows at a time.
    static func inspect(_ data: [UInt8], pixelLimit: Int, scanLimit: Int,
                        wholeImageByteLimit: Int = .max) throws -> InspectedImage {
        guard let format = SniffedImageFormat(data) else {
            throw AttacheError(.unsupportedInput, stage: .transform, "not a JPEG, PNG, WebP, GIF or BMP image")
        }
        var image = InspectedImage(format: format, data: data, width: 0, height: 0, orientation: 1, hasAlpha: false)
        image.scanLimit = scanLimit
        switch format {
        case .jpeg:
            let header = try TurboJPEGDecoder().header(data)
            image.width = header.width
            image.height = header.height
            image.jpeg = header
        case .png:
            let png = try PNGStreamDecoder.layout(data)
            image.width = png.width
            image.height = png.height
            image.hasAlpha = png.hasAlpha
            image.interlaced = png.interlaced
        case .webp:
            let header = try WebPHeader(data)
            guard !header.isAnimated else {
                throw AttacheError(.unsupportedInput, stage: .transform, "animated WebP images are not recompressed")
            }
            image.width = header.width
            image.height = header.height
            image.hasAlpha = header.hasAlpha
            image.lossless = header.isLossless
        case .bmp:
            let header = try BMPDecoder.Header(data)
            image.width = header.width
            image.height = header.height
            image.hasAlpha = header.hasAlpha
        case .gif:
            throw AttacheError(.unsupportedInput, stage: .transform, "GIF images are not recompressed")
        }
        try checkLimits(&image, pixelLimit: pixelLimit, scanLimit: scanLimit, wholeImageByteLimit: wholeImageByteLimit)
        return image
    }

    /// Reads the header of the PNG open as `file` and enforces the limits, as ``inspect(_:pixelLimit:scanLimit:wholeImageByteLimit:)``
    /// does for an image in memory; the decode then reads the file a piece at a time.
    static func inspect(png file: OpenImageFile, pixelLimit: Int, wholeImageByteLimit: Int = .max) throws -> InspectedImage {
        let png = try PNGStreamDecoder.layout(file: file)
        var image = InspectedImage(format: .png, data: [], width: png.width, height: png.height, orientation: 1,
                                   hasAlpha: png.hasAlpha)
        image.file = file
        image.interlaced = png.interlaced
        try checkLimits(&image, pixelLimit: pixelLimit, scanLimit: 0, wholeImageByteLimit: wholeImageByteLimit)
        return image
    }

    private static func checkLimits(_ image: inout InspectedImage, pixelLimit: Int, scanLimit: Int,
                                    wholeImageByteLimit: Int) throws {
        let format = image.format
        let data = image.data
        guard image.width > 0, image.height > 0 else {
            throw AttacheError(.corruptInput, stage: .transform, "the image declares no pixels")
        }
        // Checked in 64-bit arithmetic from the header alone: a 50000 × 50000 PNG stops here.
        guard image.width.multipliedReportingOverflow(by: image.height).partialValue <= pixelLimit,
              image.width <= 65_535, image.height <= 65_535
        else {
            throw AttacheError(.limitExceeded, stage: .transform,
                               "the image declares \(image.width)×\(image.height) pixels, over the limit of \(pixelLimit)")
        }
        let whole = wholeImageBytes(image)
        guard whole <= wholeImageByteLimit else {
            throw AttacheError(.limitExceeded, stage: .transform,
                               "the \(image.width)×\(image.height) \(format.rawValue.uppercased()) can only be decoded whole (\(whole) bytes), over the limit of \(wholeImageByteLimit)")
        }
        if format == .jpeg {
            guard let markers = JPEGMarkers(data, scanLimit: scanLimit) else {
                throw AttacheError(.corruptInput, stage: .transform, "the JPEG marker structure is broken")
            }
            guard markers.scanCount <= scanLimit else {
                throw AttacheError(.limitExceeded, stage: .transform,
                                   "the JPEG has more than \(scanLimit) progressive scans")
            }
            image.markers = markers
            image.orientation = markers.orientation
        }
    }

    /// The bytes a decoder must hold at once for a picture it cannot hand over row by row: an
    /// Adam7-interlaced PNG (its last pass fills every other row of the whole picture) at its decoded
    /// size, a lossless WebP (libwebp keeps the whole ARGB picture: LZ77 references reach anywhere above)
    /// at 4 bytes per pixel, the alpha plane of a lossy WebP at 1. Zero for everything that streams.
    static func wholeImageBytes(_ image: InspectedImage) -> Int {
        let pixels = image.width * image.height
        switch image.format {
        case .png: return image.interlaced ? pixels * (image.hasAlpha ? 4 : 3) : 0
        case .webp: return image.lossless ? pixels * 4 : (image.hasAlpha ? pixels : 0)
        case .jpeg, .gif, .bmp: return 0
        }
    }

    /// The bytes a transform of `image` to `width` × `height` (displayed) holds at once, estimated from the
    /// header before anything is decoded: the file when it is held in memory (a PNG read from disk holds
    /// 64 KiB of it), what the decoder keeps whole (``wholeImageBytes(_:)``; libjpeg's coefficients of a
    /// progressive JPEG, 2 bytes per sample; a JPEG decoded whole at its DCT-scaled size when it cannot
    /// stream: CMYK, RGB-coded, or to packed pixels for WebP and stickers; a WebP's reduced picture),
    /// the decoder's rows and the resampled output.
    static func memoryEstimate(_ image: InspectedImage, width: Int, height: Int, planar: Bool,
                               oversampling: Double) -> Int {
        let swaps = image.orientation >= 5
        let storedWidth = swaps ? height : width, storedHeight = swaps ? width : height
        // The resampled output, its encoder's copy, and a few dozen rows of the decoder and resampler
        // (4 bytes per pixel at most).
        var bytes = storedWidth * storedHeight * 4 * 2 + image.width * 4 * 48
        bytes += image.file == nil ? image.byteCount : 64 << 10
        bytes += wholeImageBytes(image)
        switch image.format {
        case .jpeg:
            guard let header = image.jpeg else { break }
            // Horizontal and vertical sampling of the luma (the chroma is 1 × 1) for each TJSAMP.
            let (h, v): (Int, Int) = switch header.subsampling {
            case 1: (2, 1)  // 4:2:2
            case 2: (2, 2)  // 4:2:0
            case 4: (1, 2)  // 4:4:0
            case 5: (4, 1)  // 4:1:1
            default: (1, 1)
            }
            let components = header.isGray ? 1 : (header.isCMYK ? 4 : 3)
            if image.multiScan {
                let paddedWidth = (image.width + 8 * h - 1) / (8 * h) * (8 * h)
                let paddedHeight = (image.height + 8 * v - 1) / (8 * v) * (8 * v)
                bytes += paddedWidth * paddedHeight * 2 * (h * v + (components - 1)) / (h * v)
            }
            if !(planar && header.isYCbCrOrGray && header.subsampling >= 0) {
                let over = max(oversampling, 1)
                let factor = TurboJPEGDecoder.scalingFactor(
                    width: header.width, height: header.height,
                    minWidth: min(header.width, Int((Double(storedWidth) * over).rounded(.up))),
                    minHeight: min(header.height, Int((Double(storedHeight) * over).rounded(.up))))
                let scaled = TurboJPEGDecoder.scaled(header.width, factor) * TurboJPEGDecoder.scaled(header.height, factor)
                // The decoded picture, CMYK converted to RGB beside it, and the resampler's first pass.
                bytes += scaled * (header.isCMYK ? 4 + 3 : components) + storedWidth * TurboJPEGDecoder.scaled(header.height, factor) * 4
            }
        case .webp:
            let over = max(oversampling, 2)
            let decodedWidth = min(image.width, Int((Double(storedWidth) * over).rounded(.up)))
            let decodedHeight = min(image.height, Int((Double(storedHeight) * over).rounded(.up)))
            bytes += decodedWidth * decodedHeight * 4 * 2
        case .png, .bmp, .gif:
            break
        }
        return bytes
    }

    /// Refuses a transform whose ``memoryEstimate(_:width:height:planar:oversampling:)`` is over `budget`
    /// bytes, before anything is decoded, as the pixel limit refuses a decompression bomb.
    ///
    /// - Throws: `.limitExceeded` naming the estimate and the budget.
    static func checkMemoryBudget(_ image: InspectedImage, width: Int, height: Int, planar: Bool,
                                  oversampling: Double, budget: Int) throws {
        let need = memoryEstimate(image, width: width, height: height, planar: planar, oversampling: oversampling)
        guard need > budget else { return }
        let kind = image.format == .jpeg && image.multiScan ? "progressive JPEG" : image.format.rawValue.uppercased()
        throw AttacheError(.limitExceeded, stage: .transform,
                           "the \(image.width)×\(image.height) \(kind) needs about \(Self.mebibytes(need)) to transform, over the memory budget of \(Self.mebibytes(budget))")
    }

    /// `n` bytes as whole MiB (rounded up) and exactly: "37 MiB (38 797 312 bytes)".
    static func mebibytes(_ n: Int) -> String {
        "\((n + (1 << 20) - 1) >> 20) MiB (\(n) bytes)"
    }

    /// Decodes `image` at the cheapest DCT scale that still covers the target, resamples it with Lanczos-3
    /// to `width` × `height` (displayed orientation) and applies the EXIF orientation.
    ///
    /// - Parameters:
    ///   - oversampling: how much larger than the target the DCT-scaled decode must be (1 = cheapest).
    ///   - planar: a YCbCr JPEG may come back as `.planes` (the cheapest path to a JPEG).
    ///   - keepAlpha: images with alpha come back as RGBA; otherwise alpha is composited onto white.
    ///   - probe: when given, records how much memory the decode held (for tests).
    static func render(_ image: InspectedImage, width: Int, height: Int, planar: Bool, keepAlpha: Bool,
                       oversampling: Double = 1, probe: RenderProbe? = nil) throws -> RenderedImage {
        // The size to produce before orientation turns it.
        let swaps = image.orientation >= 5
        let storedWidth = swaps ? height : width
        let storedHeight = swaps ? width : height

        switch image.format {
        case .jpeg:
            let header = image.jpeg!
            let decoder = try TurboJPEGDecoder()
            let factor = TurboJPEGDecoder.scalingFactor(
                width: header.width, height: header.height,
                minWidth: min(header.width, Int((Double(storedWidth) * max(oversampling, 1)).rounded(.up))),
                minHeight: min(header.height, Int((Double(storedHeight) * max(oversampling, 1)).rounded(.up))))
            let scaledWidth = TurboJPEGDecoder.scaled(header.width, factor)
            let scaledHeight = TurboJPEGDecoder.scaled(header.height, factor)
            let flags = TJFLAG_LIMITSCANS | TJFLAG_ACCURATEDCT
            if planar, header.isYCbCrOrGray, header.subsampling >= 0 {
                let chromaWidth = (storedWidth + 1) / 2, chromaHeight = (storedHeight + 1) / 2
                if let planes = try streamPlanes(image, scaleNumerator: factor.num * 8 / factor.denom,
                                                 scaledWidth: scaledWidth, scaledHeight: scaledHeight,
                                                 targets: [(storedWidth, storedHeight), (chromaWidth, chromaHeight),
                                                           (chromaWidth, chromaHeight)]) {
                    return .planes(planes.map { $0.applyingOrientation(image.orientation) }, width: width, height: height)
                }
                let planes = try decoder.decodePlanes(image.data, header: header, scaledWidth: scaledWidth,
                                                      scaledHeight: scaledHeight, flags: flags)
                let out = planes.enumerated().map { index, plane in
                    let resized = index == 0
                        ? LanczosResampler.resample(plane, width: storedWidth, height: storedHeight)
                        : LanczosResampler.resample(plane, width: chromaWidth, height: chromaHeight)
                    return resized.applyingOrientation(image.orientation)
                }
                return .planes(out, width: width, height: height)
            }
            var raster: Raster
            if header.isCMYK {
                let cmyk = try decoder.decodePacked(image.data, scaledWidth: scaledWidth, scaledHeight: scaledHeight,
                                                    format: .cmyk, flags: flags)
                raster = convertCMYK(cmyk, inverted: image.markers?.hasAdobeMarker ?? true)
            } else {
                raster = try decoder.decodePacked(image.data, scaledWidth: scaledWidth, scaledHeight: scaledHeight,
                                                  format: header.isGray ? .gray : .rgb, flags: flags)
            }
            raster = LanczosResampler.resample(raster, width: storedWidth, height: storedHeight)
            return .packed(raster.applyingOrientation(image.orientation))

        case .png:
            return .packed(try streamPNG(image, width: storedWidth, height: storedHeight,
                                         keepAlpha: keepAlpha && image.hasAlpha, probe: probe))

        case .webp:
            // Larger than twice the target: libwebp scales while decoding (an area average over the rows
            // as they come), so only the reduced picture is ever held; Lanczos-3 finishes from there, as
            // after a JPEG's DCT scaling.
            let factor = max(oversampling, 2)
            var decodeWidth = image.width, decodeHeight = image.height
            if Double(image.width) > Double(storedWidth) * factor, Double(image.height) > Double(storedHeight) * factor {
                decodeWidth = min(image.width, Int((Double(storedWidth) * factor).rounded(.up)))
                decodeHeight = min(image.height, Int((Double(storedHeight) * factor).rounded(.up)))
            }
            let raster = try WebPDecoder.decode(image.data, header: WebPHeader(image.data), width: decodeWidth,
                                                height: decodeHeight, alpha: image.hasAlpha)
            probe?.record(decodedWidth: decodeWidth, decodedHeight: decodeHeight,
                          bytes: raster.pixels.count + wholeImageBytes(image))
            return .packed(finishPacked(raster, width: storedWidth, height: storedHeight,
                                        orientation: image.orientation, keepAlpha: keepAlpha && image.hasAlpha))

        case .bmp:
            return .packed(try streamBMP(image, width: storedWidth, height: storedHeight,
                                         keepAlpha: keepAlpha && image.hasAlpha, probe: probe))

        case .gif:
            throw AttacheError(.unsupportedInput, stage: .transform, "GIF images are not recompressed")
        }
    }

    /// Decodes a YCbCr or grey JPEG a few rows at a time straight into one ``RowResampler`` per plane,
    /// resampling plane `i` to `targets[i]`; nil when the stream decoder does not take this file.
    ///
    /// Only the resamplers' rings and outputs and libjpeg's row buffers exist at once, not the decoded planes.
    static func streamPlanes(_ image: InspectedImage, scaleNumerator: Int, scaledWidth: Int, scaledHeight: Int,
                             targets: [(Int, Int)]) throws -> [Raster]? {
        let decoder = try JPEGStreamDecoder()
        var resamplers: [RowResampler] = []
        let streamed = try decoder.decode(image.data, scaleNumerator: scaleNumerator, maxScans: image.scanLimit,
                                          prepare: { layout in
            // The sizes were planned from TurboJPEG's reading of the header; both libraries must agree.
            guard layout.width == scaledWidth, layout.height == scaledHeight, layout.planes.count <= targets.count
            else {
                throw AttacheError(.corruptInput, stage: .transform,
                                   "the JPEG decodes to \(layout.width)×\(layout.height), not the \(scaledWidth)×\(scaledHeight) its header declares")
            }
            resamplers = layout.planes.enumerated().map { index, plane in
                RowResampler(sourceWidth: max(plane.width, 1), sourceHeight: max(plane.height, 1),
                             width: targets[index].0, height: targets[index].1, channels: 1)
            }
        }, sink: { plane, row in
            resamplers[plane].push(row)
        })
        guard streamed else { return nil }
        guard resamplers.allSatisfy(\.isComplete) else {
            throw AttacheError(.corruptInput, stage: .transform, "the JPEG image ended early")
        }
        return resamplers.map { $0.finish() }
    }

    /// Decodes a PNG row by row into a resampler (an interlaced one whole first; see ``PNGStreamDecoder``).
    static func streamPNG(_ image: InspectedImage, width: Int, height: Int, keepAlpha: Bool,
                          probe: RenderProbe?) throws -> Raster {
        let decoder = PNGStreamDecoder()
        var rows: PackedRowResampler?
        let prepare = { (layout: PNGStreamDecoder.Layout) throws in
            guard layout.width == image.width, layout.height == image.height else {
                throw AttacheError(.corruptInput, stage: .transform, "the PNG header changed between two reads")
            }
            rows = PackedRowResampler(sourceWidth: layout.width, sourceHeight: layout.height,
                                      channels: layout.channels, width: width, height: height)
        }
        if let file = image.file {
            try decoder.decode(file: file, prepare: prepare, sink: { rows!.push($0) })
        } else {
            try decoder.decode(image.data, prepare: prepare, sink: { rows!.push($0) })
        }
        guard let rows, rows.isComplete else {
            throw AttacheError(.corruptInput, stage: .transform, "the PNG image ended early")
        }
        probe?.record(decodedWidth: image.width, decodedHeight: image.height,
                      bytes: decoder.peakLibraryBytes + decoder.peakRowBytes + rows.bufferBytes)
        return rows.finish(keepAlpha: keepAlpha, orientation: image.orientation)
    }

    /// Feeds a BMP's rows straight from the file into a resampler (bottom-up files from the end).
    static func streamBMP(_ image: InspectedImage, width: Int, height: Int, keepAlpha: Bool,
                          probe: RenderProbe?) throws -> Raster {
        let header = try BMPDecoder.Header(image.data)
        let channels = header.hasAlpha ? 4 : 3
        let rows = PackedRowResampler(sourceWidth: header.width, sourceHeight: header.height, channels: channels,
                                      width: width, height: height)
        try BMPDecoder.forEachRow(image.data, header: header) { row in rows.push(row) }
        probe?.record(decodedWidth: header.width, decodedHeight: header.height,
                      bytes: header.width * channels + rows.bufferBytes)
        return rows.finish(keepAlpha: keepAlpha, orientation: image.orientation)
    }

    /// Resamples packed pixels, premultiplying alpha around the resampling so transparent colour does
    /// not bleed into visible edges, then drops alpha onto white unless it is kept.
    static func finishPacked(_ input: Raster, width: Int, height: Int, orientation: Int, keepAlpha: Bool) -> Raster {
        var raster = input
        if raster.channels == 4 {
            raster.premultiplyAlpha()
            raster = LanczosResampler.resample(raster, width: width, height: height)
            raster.unpremultiplyAlpha()
            if !keepAlpha { raster = raster.compositedOnWhite() }
        } else {
            raster = LanczosResampler.resample(raster, width: width, height: height)
        }
        return raster.applyingOrientation(orientation)
    }

    /// Converts decoded CMYK to RGB.
    ///
    /// TurboJPEG 2.1.5 hands back the stored ink values without converting them. Files with an Adobe
    /// APP14 marker (Photoshop, ImageMagick, nearly every CMYK JPEG) store them inverted (255 = no ink).
    /// A naive conversion without an ICC transform: channel = (1 − C)(1 − K).
    static func convertCMYK(_ cmyk: Raster, inverted: Bool) -> Raster {
        var out = [UInt8](repeating: 0, count: cmyk.width * cmyk.height * 3)
        cmyk.pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for i in 0..<(cmyk.width * cmyk.height) {
                    var k = UInt32(src[i * 4 + 3])
                    if !inverted { k = 255 - k }
                    for c in 0..<3 {
                        var v = UInt32(src[i * 4 + c])
                        if !inverted { v = 255 - v }
                        dst[i * 3 + c] = UInt8((v * k + 127) / 255)
                    }
                }
            }
        }
        return Raster(width: cmyk.width, height: cmyk.height, channels: 3, pixels: out)
    }
}
