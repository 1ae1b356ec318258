internal import CPNGStream

/// Decodes a PNG a few rows at a time through libpng's row API, as 8-bit sRGB grey, RGB or straight RGBA.
///
/// The conversions are those of libpng's simplified API (``PNGDecoder``, which the tests hold this
/// decoder to), so every bit depth, palette, tRNS and gAMA comes out the same; opaque grey stays one
/// channel. A non-interlaced file never exists decoded: its rows go to `sink` as they come, and libpng
/// itself holds two rows and its zlib window. An Adam7-interlaced file cannot be had row by row (its
/// last pass fills every other row of the whole picture), so it is decoded whole into one buffer first.
final class PNGStreamDecoder {
    /// The size and row format of the decoded image.
    struct Layout {
        var width: Int
        var height: Int
        /// 1 (grey), 3 (RGB) or 4 (RGBA, straight alpha).
        var channels: Int
        var interlaced: Bool
        var hasAlpha: Bool { channels == 4 }
    }

    /// The most bytes libpng held at once while decoding (its row buffers, zlib state, chunk data): what
    /// the tests check to know that no whole picture was allocated on the C side.
    private(set) var peakLibraryBytes = 0
    /// The size of the row buffer this decoder filled (the whole picture for an interlaced file).
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
        try png.withUnsafeBufferPointer { buffer in
            let stream = try Self.open(buffer)
            defer {
                peakLibraryBytes = attache_png_stream_peak_allocated(stream)
                attache_png_stream_destroy(stream)
            }
            let layout = try Self.start(stream)
            try prepare(layout)
            let rowBytes = layout.width * layout.channels
            if layout.interlaced {
                peakRowBytes = rowBytes * layout.height
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
            peakRowBytes = batch * rowBytes
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
        return Layout(width: Int(info.width), height: Int(info.height), channels: Int(info.channels),
                      interlaced: info.interlaced != 0)
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
