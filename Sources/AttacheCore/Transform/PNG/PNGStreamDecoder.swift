internal import CPNGStream

/// Decodes a PNG a few rows at a time through libpng's row API, as 8-bit sRGB grey, RGB or straight RGBA.
///
/// The conversions are those of libpng's simplified API (``PNGDecoder``, which the tests hold this
/// decoder to), so every bit depth, palette, tRNS and gAMA comes out the same; opaque grey stays one
/// channel. A non-interlaced file never exists decoded: its rows go to `sink` as they come, and libpng
/// itself holds two rows and its zlib window. An Adam7-interlaced file cannot be had row by row (its
/// last pass fills every other row of the whole picture), so it is decoded whole into one buffer first.
///
/// The direct path: an 8-bit grey, grey + alpha, RGB or RGBA file whose samples libpng would hand over
/// as they are (no tRNS, no gamma correction, not interlaced) skips libpng's row machinery. zlib inflates
/// its image data a band of rows at a time (about 64 KiB), each row is unfiltered (SSE2) as soon as it
/// is out and handed over from the band; only the band, the row above it and zlib's window are held.
/// Anything amiss there (a bad CRC, a damaged zlib stream, a bad filter type) hands the file to libpng's
/// rows from the start, which refuse or tolerate it as they do any other file; the rows already handed
/// over are the same bytes libpng makes, so libpng's go to `sink` from the first one not yet delivered.
final class PNGStreamDecoder {
    /// The size and row format of the decoded image.
    struct Layout {
        var width: Int
        var height: Int
        /// 1 (grey), 3 (RGB) or 4 (RGBA, straight alpha).
        var channels: Int
        var interlaced: Bool
        var hasAlpha: Bool { channels == 4 }
        /// Bytes per pixel in the file when the direct path may take it (1, 2 for grey + alpha, which is
        /// delivered as RGBA, 3 or 4); nil when libpng must convert the samples.
        var directChannels: Int?
    }

    /// The bytes of inflated rows the direct path asks zlib for at once (at least one row).
    static let directBandBytes = 64 << 10

    /// Whether the direct path is taken when a file allows it (false keeps every file on libpng's rows).
    let direct: Bool

    /// Whether the last ``decode(_:prepare:sink:)`` went through the direct path to the end.
    private(set) var decodedDirectly = false
    /// How many rows the direct path handed over in the last decode before it gave up (0 when it did not).
    private(set) var directRowsBeforeFallback = 0

    /// A decoder that takes the direct path where it can (`direct`), libpng's rows otherwise.
    init(direct: Bool = true) {
        self.direct = direct
    }

    /// The most bytes libpng held at once while decoding (its row buffers, zlib state, chunk data): what
    /// the tests check to know that no whole picture was allocated on the C side.
    private(set) var peakLibraryBytes = 0
    /// The size of the row buffer this decoder filled (the whole picture for an interlaced file, the
    /// band and the widened row on the direct path).
    private(set) var peakRowBytes = 0

    /// Where a decoder reads the file from: memory, or an open file read a piece at a time.
    private enum Source {
        case memory(UnsafeBufferPointer<UInt8>)
        case file(OpenImageFile)
    }

    /// Reads the header (the chunks before the image data) of `png`.
    ///
    /// - Throws: `.corruptInput` when libpng refuses it.
    static func layout(_ png: [UInt8]) throws -> Layout {
        try png.withUnsafeBufferPointer { try layout(.memory($0)) }
    }

    /// Reads the header of the PNG open as `file`.
    static func layout(file: OpenImageFile) throws -> Layout {
        try layout(.file(file))
    }

    private static func layout(_ source: Source) throws -> Layout {
        let stream = try open(source)
        defer { attache_png_stream_destroy(stream) }
        return try start(stream)
    }

    /// Decodes `png`: `prepare` gets the layout before any pixel is decoded (and may throw to stop there),
    /// then `sink` gets each row, top to bottom (`width × channels` bytes, valid during the call).
    ///
    /// An interlaced file takes `width × height × channels` bytes here: its caller checks that against
    /// its limits from the header (``ImageRenderer/wholeImageBytes(_:)``).
    ///
    /// - Throws: `.corruptInput` for broken or truncated data, and what `prepare` throws.
    func decode(_ png: [UInt8], prepare: (Layout) throws -> Void,
                sink: (UnsafePointer<UInt8>) -> Void) throws {
        try png.withUnsafeBufferPointer { try decode(.memory($0), prepare: prepare, sink: sink) }
    }

    /// Decodes the PNG open as `file` as ``decode(_:prepare:sink:)`` does one in memory, reading it a
    /// piece at a time (64 KiB on the direct path): the file is never held whole.
    func decode(file: OpenImageFile, prepare: (Layout) throws -> Void,
                sink: (UnsafePointer<UInt8>) -> Void) throws {
        try decode(.file(file), prepare: prepare, sink: sink)
    }

    private func decode(_ source: Source, prepare: (Layout) throws -> Void,
                        sink: (UnsafePointer<UInt8>) -> Void) throws {
        peakLibraryBytes = 0
        peakRowBytes = 0
        decodedDirectly = false
        directRowsBeforeFallback = 0
        let stream = try Self.open(source)
        defer {
            peakLibraryBytes = max(peakLibraryBytes, attache_png_stream_peak_allocated(stream))
            attache_png_stream_destroy(stream)
        }
        let layout = try Self.start(stream)
        try prepare(layout)
        guard direct, let directChannels = layout.directChannels else {
            return try decodeRows(stream, layout: layout, skipping: 0, sink: sink)
        }
        let delivered = decodeDirectly(stream, layout: layout, fileChannels: directChannels, sink: sink)
        if delivered == layout.height {
            decodedDirectly = true
            return
        }
        // The direct path gave up: libpng's rows from the start, minus those already handed over.
        directRowsBeforeFallback = delivered
        let again = try Self.open(source)
        defer {
            peakLibraryBytes = max(peakLibraryBytes, attache_png_stream_peak_allocated(again))
            attache_png_stream_destroy(again)
        }
        let relayout = try Self.start(again)
        guard relayout.width == layout.width, relayout.height == layout.height, relayout.channels == layout.channels else {
            throw AttacheError(.corruptInput, stage: .transform, "the PNG header changed between two reads")
        }
        try decodeRows(again, layout: layout, skipping: delivered, sink: sink)
    }

    /// libpng's rows (the whole picture first for an interlaced file); the first `skipping` rows are
    /// decoded but not handed over.
    private func decodeRows(_ stream: OpaquePointer, layout: Layout, skipping: Int,
                            sink: (UnsafePointer<UInt8>) -> Void) throws {
        let rowBytes = layout.width * layout.channels
        if layout.interlaced {
            peakRowBytes = max(peakRowBytes, rowBytes * layout.height)
            var pixels = [UInt8](repeating: 0, count: rowBytes * layout.height)
            try pixels.withUnsafeMutableBufferPointer { whole in
                try Self.check(attache_png_stream_read_image(stream, whole.baseAddress, rowBytes), stream)
                for y in 0..<layout.height { sink(whole.baseAddress! + y * rowBytes) }
            }
            return
        }
        // A few rows per call: one libpng call per row costs a setjmp each, which is nothing, but the
        // batch keeps the C ↔ Swift crossings down on narrow images.
        let batch = max(1, min(layout.height, 16_384 / max(rowBytes, 1)))
        peakRowBytes = max(peakRowBytes, batch * rowBytes)
        let rows = UnsafeMutablePointer<UInt8>.allocate(capacity: batch * rowBytes)
        defer { rows.deallocate() }
        var done = 0
        while done < layout.height {
            let count = min(batch, layout.height - done)
            try Self.check(attache_png_stream_read_rows(stream, rows, Int32(count), rowBytes), stream)
            for row in 0..<count where done + row >= skipping { sink(rows + row * rowBytes) }
            done += count
        }
    }

    /// The direct path: the number of rows handed over, `layout.height` when it went to the end.
    private func decodeDirectly(_ stream: OpaquePointer, layout: Layout, fileChannels bpp: Int,
                                sink: (UnsafePointer<UInt8>) -> Void) -> Int {
        let stride = 1 + layout.width * bpp
        let bandRows = max(1, min(layout.height, Self.directBandBytes / stride))
        let band = UnsafeMutablePointer<UInt8>.allocate(capacity: bandRows * stride)
        defer { band.deallocate() }
        // Grey + alpha is widened to RGBA in a row of its own.
        let widened = bpp == 2 ? UnsafeMutablePointer<UInt8>.allocate(capacity: layout.width * 4) : nil
        defer { widened?.deallocate() }
        peakRowBytes = max(peakRowBytes, bandRows * stride + (bpp == 2 ? layout.width * 4 : 0))
        var done = 0
        while done < layout.height {
            let count = min(bandRows, layout.height - done)
            guard attache_png_stream_direct_rows(stream, band, Int32(count)) == Int32(ATTACHE_PNG_OK) else {
                return done
            }
            for index in 0..<count {
                let samples = UnsafePointer(band + index * stride + 1)
                if let widened {
                    for x in 0..<layout.width {
                        let grey = samples[2 * x], alpha = samples[2 * x + 1]
                        widened[4 * x] = grey
                        widened[4 * x + 1] = grey
                        widened[4 * x + 2] = grey
                        widened[4 * x + 3] = alpha
                    }
                    sink(widened)
                } else {
                    sink(samples)
                }
            }
            done += count
        }
        return done
    }

    private static func open(_ source: Source) throws -> OpaquePointer {
        let created = switch source {
        case .memory(let buffer): attache_png_stream_create(buffer.baseAddress, buffer.count)
        case .file(let file): attache_png_stream_create_file(file.fd, file.size)
        }
        guard let stream = created else {
            throw AttacheError(.nativeLibrary, stage: .transform, "cannot create a PNG decoder",
                               cause: NativeError(library: "png", code: -1, text: "out of memory"))
        }
        return stream
    }

    private static func start(_ stream: OpaquePointer) throws -> Layout {
        var info = attache_png_stream_info()
        try check(attache_png_stream_start(stream, &info), stream, reading: "header")
        var layout = Layout(width: Int(info.width), height: Int(info.height), channels: Int(info.channels),
                            interlaced: info.interlaced != 0)
        if info.direct != 0 { layout.directChannels = Int(info.file_channels) }
        return layout
    }

    private static func check(_ status: Int32, _ stream: OpaquePointer, reading part: String = "image") throws {
        guard status != Int32(ATTACHE_PNG_OK) else { return }
        let text = String(cString: attache_png_stream_message(stream))
        let message = status == Int32(ATTACHE_PNG_TRUNCATED)
            ? "the PNG image is truncated" : "cannot read the PNG \(part): \(text)"
        throw AttacheError(.corruptInput, stage: .transform, message,
                           cause: NativeError(library: "png", code: Int(status), text: text))
    }
}
