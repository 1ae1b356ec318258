internal import CJPEGStream

/// Owns one libjpeg decompressor that hands out a JPEG's raw Y/Cb/Cr (or grey) rows a few at a time, at a
/// DCT-scaled size, with the accurate integer IDCT.
///
/// This is what TurboJPEG's planar decode does inside, minus the whole planes: the rows go straight into
/// a ``RowResampler`` per plane, so a 12 MP photo never occupies the 10 MB its 3/4-scale planes would.
/// Only YCbCr and greyscale files are streamed; ``decode(_:scaleNumerator:maxScans:prepare:sink:)``
/// returns false for the rest (CMYK, YCCK, RGB-coded), which the TurboJPEG path handles.
final class JPEGStreamDecoder {
    /// The scaled size and the meaningful size of each plane.
    struct Layout {
        var width: Int
        var height: Int
        /// One entry per plane: Y, Cb, Cr, or just Y for greyscale.
        var planes: [(width: Int, height: Int, rowsPerRead: Int)]
    }

    private let stream: OpaquePointer

    init() throws {
        guard let stream = attache_jpeg_stream_create() else {
            throw AttacheError(.nativeLibrary, stage: .transform, "cannot create a JPEG decoder",
                               cause: NativeError(library: "libjpeg", code: -1, text: "out of memory"))
        }
        self.stream = stream
    }

    deinit { attache_jpeg_stream_destroy(stream) }

    /// Decodes `jpeg` at `scaleNumerator`/8 of its full size: calls `prepare` with the layout once the
    /// header is read (a progressive file is decoded into libjpeg's coefficient buffer first), then
    /// `sink(plane, row)` for every row of every plane in order (padding rows beyond a plane's height are
    /// not passed), then checks the rest of the file up to EOI.
    ///
    /// - Returns: false, without calling anything, when the colour space is not one this decoder streams.
    /// - Throws: `.corruptInput` for broken or truncated data (a cut-off photo is refused rather than sent
    ///   with its missing part filled with grey), `.limitExceeded` past `maxScans` progressive scans, and
    ///   whatever `prepare` throws. A decoder decodes one image.
    func decode(_ jpeg: [UInt8], scaleNumerator: Int, maxScans: Int, prepare: (Layout) throws -> Void,
                sink: (Int, UnsafePointer<UInt8>) -> Void) throws -> Bool {
        // libjpeg reads straight from the array's storage, so everything happens inside this one scope.
        try jpeg.withUnsafeBufferPointer { buffer in
            var info = attache_jpeg_stream_info()
            let status = attache_jpeg_stream_start(stream, buffer.baseAddress, buffer.count, Int32(scaleNumerator),
                                                   Int32(clamping: maxScans), &info)
            if status == Int32(ATTACHE_JPEG_UNSUPPORTED) { return false }
            try check(status, scanLimit: maxScans)
            let planes = Self.planes(info)
            try prepare(Layout(width: Int(info.width), height: Int(info.height), planes: planes))
            var delivered = [Int](repeating: 0, count: planes.count)
            while delivered[0] < planes[0].height {
                try check(attache_jpeg_stream_read(stream), scanLimit: maxScans)
                for (index, plane) in planes.enumerated() {
                    let useful = max(0, min(plane.rowsPerRead, plane.height - delivered[index]))
                    for row in 0..<useful {
                        sink(index, attache_jpeg_stream_row(stream, Int32(index), Int32(row)))
                    }
                    delivered[index] += useful
                }
            }
            try check(attache_jpeg_stream_finish(stream), scanLimit: maxScans)
            return true
        }
    }

    private static func planes(_ info: attache_jpeg_stream_info) -> [(width: Int, height: Int, rowsPerRead: Int)] {
        let widths = info.plane_width, heights = info.plane_height, rows = info.rows_per_read
        let all = [(Int(widths.0), Int(heights.0), Int(rows.0)),
                   (Int(widths.1), Int(heights.1), Int(rows.1)),
                   (Int(widths.2), Int(heights.2), Int(rows.2))]
        return all.prefix(Int(info.components)).map { (width: $0.0, height: $0.1, rowsPerRead: $0.2) }
    }

    /// Accepts OK; warnings other than the end of the data were already let through by the C side.
    private func check(_ status: Int32, scanLimit: Int) throws {
        switch status {
        case Int32(ATTACHE_JPEG_OK):
            return
        case Int32(ATTACHE_JPEG_TRUNCATED):
            throw failure("the JPEG image is truncated", code: .corruptInput)
        case Int32(ATTACHE_JPEG_TOO_MANY_SCANS):
            throw failure("the JPEG has more than \(scanLimit) progressive scans", code: .limitExceeded)
        default:
            throw failure("cannot decode the JPEG image", code: .corruptInput)
        }
    }

    private func failure(_ message: String, code: AttacheError.Code) -> AttacheError {
        let text = String(cString: attache_jpeg_stream_message(stream))
        return AttacheError(code, stage: .transform, text.isEmpty ? message : "\(message): \(text)",
                            cause: NativeError(library: "libjpeg", code: Int(attache_jpeg_stream_message_code(stream)),
                                               text: text))
    }
}
