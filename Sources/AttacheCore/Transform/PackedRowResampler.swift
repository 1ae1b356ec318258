/// Resamples grey, RGB or straight-alpha RGBA rows as a decoder hands them over, so the decoded picture
/// never has to exist whole.
///
/// Alpha is premultiplied on the way in (one row at a time, in a scratch row) so that the colour of
/// invisible pixels does not bleed into visible edges, and undone in ``finish(keepAlpha:orientation:)``,
/// which also composites onto white unless alpha is kept: the same steps, in the same order, as
/// ``ImageRenderer/finishPacked(_:width:height:orientation:keepAlpha:)`` on a whole raster.
final class PackedRowResampler {
    private let resampler: RowResampler
    private let scratch: UnsafeMutablePointer<UInt8>?
    private let rowBytes: Int
    let channels: Int

    init(sourceWidth: Int, sourceHeight: Int, channels: Int, width: Int, height: Int) {
        resampler = RowResampler(sourceWidth: sourceWidth, sourceHeight: sourceHeight, width: width, height: height,
                                 channels: channels)
        self.channels = channels
        rowBytes = sourceWidth * channels
        scratch = channels == 4 ? .allocate(capacity: rowBytes) : nil
    }

    deinit { scratch?.deallocate() }

    /// Whether every source row has been pushed.
    var isComplete: Bool { resampler.isComplete }

    /// The bytes held: the resampler's ring and output, and the scratch row.
    var bufferBytes: Int { resampler.bufferBytes + (scratch == nil ? 0 : rowBytes) }

    /// Takes the next source row, top to bottom.
    func push(_ row: UnsafePointer<UInt8>) {
        guard let scratch else {
            resampler.push(row)
            return
        }
        scratch.update(from: row, count: rowBytes)
        var i = 0
        while i < rowBytes {
            let a = UInt32(scratch[i + 3])
            if a != 255 {
                scratch[i] = UInt8((UInt32(scratch[i]) * a + 127) / 255)
                scratch[i + 1] = UInt8((UInt32(scratch[i + 1]) * a + 127) / 255)
                scratch[i + 2] = UInt8((UInt32(scratch[i + 2]) * a + 127) / 255)
            }
            i += 4
        }
        resampler.push(scratch)
    }

    /// The resampled picture, alpha undone (and dropped onto white unless `keepAlpha`), turned upright.
    func finish(keepAlpha: Bool, orientation: Int) -> Raster {
        var raster = resampler.finish()
        if raster.channels == 4 {
            raster.unpremultiplyAlpha()
            if !keepAlpha { raster = raster.compositedOnWhite() }
        }
        return raster.applyingOrientation(orientation)
    }
}

/// What one render held in memory, for tests: the decoded size and the most bytes of decoded pixels
/// (decoder buffers, rows waiting in the resampler, the output) held at once.
final class RenderProbe {
    private(set) var decodedWidth = 0
    private(set) var decodedHeight = 0
    private(set) var peakBytes = 0

    init() {}

    func record(decodedWidth: Int, decodedHeight: Int, bytes: Int) {
        self.decodedWidth = decodedWidth
        self.decodedHeight = decodedHeight
        peakBytes = max(peakBytes, bytes)
    }
}
