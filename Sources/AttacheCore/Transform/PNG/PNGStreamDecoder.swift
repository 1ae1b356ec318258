internal import CPNGStream

/// Decodes a PNG a few rows at a time through libpng's row API, as 8-bit sRGB grey, RGB or straight RGBA.
///
/// The conversions are those of libpng's simplified API (``PNGDecoder``, which the tests hold this
/// decoder to), so every bit depth, palette, tRNS and gAMA comes out the same; opaque grey stays one
/// channel. A non-interlaced file never exists decoded: its rows go to `sink` as they come, and libpng
/// itself holds two rows and its zlib window. An Adam7-interlaced file cannot be had row by row (its
/// last pass fills every other row of the whole picture), so it is decoded whole into one buffer first.
///
/// The fast path: an 8-bit grey, grey + alpha, RGB or RGBA file whose samples libpng would hand over as
/// they are (no tRNS, no gamma correction, not interlaced) has its image data inflated in one call by
/// libdeflate (twice zlib's speed; it cannot inflate piecemeal) when the inflated data plus the gathered
/// compressed data fit in `inflateByteLimit`, then unfiltered row by row in place (SSE2) and handed over
/// from that buffer. Anything amiss there (a bad CRC, a damaged zlib stream, short data) sends the file
/// through libpng's rows from the start, which refuse or tolerate it as before; above the limit (a
/// 100 MP picture) libpng's rows are used directly, holding a few rows.
final class PNGStreamDecoder {
    /// The size and row format of the decoded image.
    struct Layout {
        var width: Int
        var height: Int
        /// 1 (grey), 3 (RGB) or 4 (RGBA, straight alpha).
        var channels: Int
        var interlaced: Bool
        var hasAlpha: Bool { channels == 4 }
        /// The fast path's sizes, nil when libpng must convert the samples.
        var wholeInflate: WholeInflate?
    }

    /// The fast path's buffers and pixel size (see the type's documentation).
    struct WholeInflate {
        /// Bytes per pixel in the file: 1, 2 (grey + alpha, delivered as RGBA), 3 or 4.
        var fileChannels: Int
        /// height × (1 + width × fileChannels): the inflated data, a filter byte before each row.
        var filteredBytes: Int
        /// The compressed data gathered from several IDAT chunks (0 for one chunk, read in place).
        var gatheredBytes: Int
        /// What the fast path holds at once besides the file.
        var bytes: Int { filteredBytes + gatheredBytes }
    }

    /// The most bytes the fast path may hold at once; 0 keeps every file on libpng's rows.
    let inflateByteLimit: Int

    /// Whether the last ``decode(_:prepare:sink:)`` went through the fast path to the end.
    private(set) var inflatedWhole = false

    /// A decoder whose fast path holds at most `inflateByteLimit` bytes.
    init(inflateByteLimit: Int = 0) {
        self.inflateByteLimit = inflateByteLimit
    }

    /// The most bytes libpng held at once while decoding (its row buffers, zlib state, chunk data): what
    /// the tests check to know that no whole picture was allocated on the C side.
    private(set) var peakLibraryBytes = 0
    /// The size of the row buffer this decoder filled (the whole picture for an interlaced file, the
    /// inflated data and the gathered compressed data on the fast path).
    private(set) var peakRowBytes = 0

    /// Reads the header (the chunks before the image data) of `png`.
    ///
    /// - Throws: `.corruptInput` when libpng refuses it.
    static func layout(_ png: [UInt8]) throws -> Layout {
        try png.withUnsafeBufferPointer { buffer in
            let stream = try Self.open(buffer)
            defer { attache_png_stream_destroy(stream) }
            return try start(stream)
        }
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
        peakLibraryBytes = 0
        peakRowBytes = 0
        inflatedWhole = false
        try png.withUnsafeBufferPointer { buffer in
            let stream = try Self.open(buffer)
            defer {
                peakLibraryBytes = max(peakLibraryBytes, attache_png_stream_peak_allocated(stream))
                attache_png_stream_destroy(stream)
            }
            let layout = try Self.start(stream)
            try prepare(layout)
            guard let whole = layout.wholeInflate, whole.bytes <= inflateByteLimit else {
                return try decodeRows(stream, layout: layout, sink: sink)
            }
            if try inflateWhole(stream, layout: layout, whole: whole, sink: sink) {
                inflatedWhole = true
                return
            }
            // The fast path gave up before delivering a row: libpng's rows from the start.
            let again = try Self.open(buffer)
            defer {
                peakLibraryBytes = max(peakLibraryBytes, attache_png_stream_peak_allocated(again))
                attache_png_stream_destroy(again)
            }
            _ = try Self.start(again)
            try decodeRows(again, layout: layout, sink: sink)
        }
    }

    /// libpng's rows (the whole picture first for an interlaced file).
    private func decodeRows(_ stream: OpaquePointer, layout: Layout, sink: (UnsafePointer<UInt8>) -> Void) throws {
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
            for row in 0..<count { sink(rows + row * rowBytes) }
            done += count
        }
    }

    /// The fast path: false when the data did not inflate (nothing was delivered then).
    private func inflateWhole(_ stream: OpaquePointer, layout: Layout, whole: WholeInflate,
                              sink: (UnsafePointer<UInt8>) -> Void) throws -> Bool {
        let filtered = UnsafeMutablePointer<UInt8>.allocate(capacity: whole.filteredBytes)
        defer { filtered.deallocate() }
        peakRowBytes = max(peakRowBytes, whole.bytes)
        guard attache_png_stream_inflate(stream, filtered, whole.filteredBytes) == Int32(ATTACHE_PNG_OK) else {
            return false
        }
        let bpp = whole.fileChannels
        let size = layout.width * bpp
        // The row above the first is all zero; grey + alpha is widened to RGBA in a row of its own.
        let zero = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
        zero.initialize(repeating: 0, count: size)
        defer { zero.deallocate() }
        let widened = bpp == 2 ? UnsafeMutablePointer<UInt8>.allocate(capacity: layout.width * 4) : nil
        defer { widened?.deallocate() }
        var previous = UnsafePointer(zero)
        for y in 0..<layout.height {
            let row = filtered + y * (size + 1)
            let samples = row + 1
            let status = attache_png_unfilter_row(samples, previous, size, Int32(bpp), Int32(row.pointee))
            guard status == Int32(ATTACHE_PNG_OK) else {
                // libpng's words for the same file, which it refuses at the same row.
                throw AttacheError(.corruptInput, stage: .transform, "cannot read the PNG image: bad adaptive filter value",
                                   cause: NativeError(library: "png", code: Int(status), text: "bad adaptive filter value"))
            }
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
            previous = UnsafePointer(samples)
        }
        return true
    }

    private static func open(_ buffer: UnsafeBufferPointer<UInt8>) throws -> OpaquePointer {
        guard let stream = attache_png_stream_create(buffer.baseAddress, buffer.count) else {
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
        if info.whole_inflate != 0 {
            layout.wholeInflate = WholeInflate(fileChannels: Int(info.file_channels), filteredBytes: info.filtered_bytes,
                                               gatheredBytes: info.gathered_bytes)
        }
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
