import Glibc
internal import CJPEGStream

/// A separable Lanczos-3 resampler for 8-bit rasters of any channel count.
///
/// It runs the vertical pass first, one output row at a time, over whole contiguous source rows, then
/// the horizontal pass on that single Float row. Source rows are converted to Float once, into a ring
/// of `taps` rows, because each one is read by several output rows; they can be fed one at a time
/// (``RowResampler``), so the whole source never has to exist. The extra memory is that ring plus
/// one row. When downscaling, the kernel is stretched by the scale factor so every source pixel
/// contributes (no aliasing); results are clamped, which hides the small overshoot ("ringing") Lanczos
/// produces at hard edges.
enum LanczosResampler {
    /// Precomputed weights for one axis: for output `i`, `taps` weights starting at source `starts[i]`.
    struct Weights {
        var taps: Int
        var starts: [Int]
        var weights: [Float]
    }

    static func lanczos3(_ x: Double) -> Double {
        let ax = abs(x)
        if ax < 1e-9 { return 1 }
        if ax >= 3 { return 0 }
        // sin(πx) = sin(3t) = sin t · (3 − 4 sin² t) with t = πx/3: one sine instead of two, and there are
        // tens of thousands of weights per photo.
        let px = Double.pi * x
        let s = sin(px / 3)
        return 3 * s * (3 - 4 * s * s) * s / (px * px)
    }

    /// The weights for resampling `source` samples to `destination` samples along one axis.
    ///
    /// `tapMultiple` pads the tap count with zero weights to a multiple of it (when the source is long
    /// enough), so the horizontal pass can read whole SIMD vectors without a scalar tail.
    static func weights(from source: Int, to destination: Int, tapMultiple: Int = 1) -> Weights {
        if source == destination {
            return Weights(taps: 1, starts: Array(0..<source), weights: [Float](repeating: 1, count: source))
        }
        let scale = Double(source) / Double(destination)
        let stretch = max(scale, 1)
        let support = 3 * stretch
        let needed = Int(ceil(support * 2)) + 1
        let padded = (needed + tapMultiple - 1) / tapMultiple * tapMultiple
        let taps = padded <= source ? padded : min(source, needed)
        var starts = [Int](repeating: 0, count: destination)
        var weights = [Float](repeating: 0, count: destination * taps)
        var raw = [Double](repeating: 0, count: taps)
        for i in 0..<destination {
            let center = (Double(i) + 0.5) * scale - 0.5
            let low = Int(floor(center - support)) + 1
            let high = Int(ceil(center + support)) - 1
            let start = min(max(low, 0), source - taps)
            for k in 0..<taps { raw[k] = 0 }
            var total = 0.0
            if high >= low {
                for j in low...high {
                    let w = lanczos3((Double(j) - center) / stretch)
                    if w == 0 { continue }
                    // Pixels beyond the edge repeat the edge pixel.
                    let clamped = min(max(j, 0), source - 1)
                    raw[clamped - start] += w
                    total += w
                }
            }
            if total == 0 {
                raw[min(max(Int(center.rounded()), 0), source - 1) - start] = 1
                total = 1
            }
            starts[i] = start
            for k in 0..<taps { weights[i * taps + k] = Float(raw[k] / total) }
        }
        return Weights(taps: taps, starts: starts, weights: weights)
    }

    /// Returns `source` resampled to `width` × `height`.
    static func resample(_ source: Raster, width: Int, height: Int,
                         vectorKernels: Bool = RowResampler.vectorKernels) -> Raster {
        precondition(width > 0 && height > 0)
        if width == source.width && height == source.height { return source }
        let rows = RowResampler(sourceWidth: source.width, sourceHeight: source.height,
                                width: width, height: height, channels: source.channels, vectorKernels: vectorKernels)
        let stride = source.width * source.channels
        source.pixels.withUnsafeBufferPointer { src in
            for y in 0..<source.height { rows.push(src.baseAddress! + y * stride) }
        }
        return rows.finish()
    }

    /// One output row of the vertical pass from the ring (see ``RowResampler``), then the horizontal pass.
    static func emitRow(into o: UnsafeMutablePointer<UInt8>, accumulator a: UnsafeMutablePointer<Float>,
                        ring: UnsafeMutablePointer<Float>, slots: Int, start: Int, weights: UnsafePointer<Float>,
                        count: Int, horizontal: Weights?, width: Int, channels: Int) {
        verticalPass(into: a, ring: ring, slots: slots, start: start, weights: weights, count: count)
        if let h = horizontal {
            h.weights.withUnsafeBufferPointer { hw in
                h.starts.withUnsafeBufferPointer { hs in
                    horizontalPass(from: a, to: o, weights: hw.baseAddress!, starts: hs.baseAddress!,
                                   taps: h.taps, width: width, channels: channels)
                }
            }
        } else {
            for x in 0..<count { o[x] = clampToByte(a[x]) }
        }
    }

    /// `a = Σ weights[k] · ring row (start + k)`, two rows per sweep so `a` is loaded and stored half as
    /// often; each sweep is a contiguous multiply-add that the compiler vectorises.
    @inline(__always)
    static func verticalPass(into a: UnsafeMutablePointer<Float>, ring: UnsafeMutablePointer<Float>, slots: Int,
                                     start: Int, weights: UnsafePointer<Float>, count: Int) {
        func line(_ k: Int) -> UnsafeMutablePointer<Float> { ring + ((start + k) % slots) * count }
        let first = line(0), w0 = weights[0]
        for x in 0..<count { a[x] = w0 * first[x] }
        var k = 1
        while k + 2 <= slots {
            let l0 = line(k), l1 = line(k + 1), v0 = weights[k], v1 = weights[k + 1]
            for x in 0..<count { a[x] += v0 * l0[x] + v1 * l1[x] }
            k += 2
        }
        if k < slots {
            let l0 = line(k), v0 = weights[k]
            for x in 0..<count { a[x] += v0 * l0[x] }
        }
    }

    /// One output row of the horizontal pass; the one-channel case (JPEG planes, the hot path) gets a
    /// loop of its own so the compiler can keep everything in registers.
    @inline(__always)
    static func horizontalPass(from a: UnsafeMutablePointer<Float>, to o: UnsafeMutablePointer<UInt8>,
                                       weights: UnsafePointer<Float>, starts: UnsafePointer<Int>,
                                       taps: Int, width: Int, channels c: Int) {
        if c == 1, taps % 4 == 0 {
            // Four or eight taps at a time in SIMD lanes (the tap count is padded with zero weights):
            // Float sums are not reassociated by the compiler, so a scalar loop here would not vectorise.
            for x in 0..<width {
                let base = UnsafeRawPointer(a + starts[x])
                let wp = UnsafeRawPointer(weights + x * taps)
                var sum8 = SIMD8<Float>(repeating: 0)
                var k = 0
                while k + 8 <= taps {
                    sum8 += base.loadUnaligned(fromByteOffset: k * 4, as: SIMD8<Float>.self)
                        * wp.loadUnaligned(fromByteOffset: k * 4, as: SIMD8<Float>.self)
                    k += 8
                }
                var sum4 = sum8.lowHalf + sum8.highHalf
                if k < taps {
                    sum4 += base.loadUnaligned(fromByteOffset: k * 4, as: SIMD4<Float>.self)
                        * wp.loadUnaligned(fromByteOffset: k * 4, as: SIMD4<Float>.self)
                }
                o[x] = clampToByte(sum4.sum())
            }
        } else if c == 1 {
            for x in 0..<width {
                let base = a + starts[x]
                let wp = weights + x * taps
                var sum: Float = 0
                for k in 0..<taps { sum += wp[k] * base[k] }
                o[x] = clampToByte(sum)
            }
        } else {
            for x in 0..<width {
                let wp = weights + x * taps
                let pixel = a + starts[x] * c
                for ch in 0..<c {
                    let base = pixel + ch
                    var sum: Float = 0
                    for k in 0..<taps { sum += wp[k] * base[k * c] }
                    o[x * c + ch] = clampToByte(sum)
                }
            }
        }
    }

    @inline(__always)
    static func clampToByte(_ value: Float) -> UInt8 {
        UInt8(min(max(value + 0.5, 0), 255))
    }

    /// The size that fits `width` × `height` inside a square of `maxSide`, keeping the aspect ratio and
    /// never enlarging unless `allowUpscale`.
    static func fittedSize(width: Int, height: Int, maxSide: Int, allowUpscale: Bool = false) -> (Int, Int) {
        let longest = max(width, height)
        guard longest > maxSide || (allowUpscale && longest < maxSide) else { return (width, height) }
        let scale = Double(maxSide) / Double(longest)
        if width >= height {
            return (maxSide, max(1, Int((Double(height) * scale).rounded())))
        }
        return (max(1, Int((Double(width) * scale).rounded())), maxSide)
    }
}

/// Resamples one image (Lanczos-3, as ``LanczosResampler``) whose source rows arrive one at a time, top to
/// bottom, and writes each output row as soon as the source rows it needs are in.
///
/// Only a ring of `taps` source rows (as Float) is kept, so a decoder can feed it straight from its own
/// small row buffer: the source image never has to exist whole.
final class RowResampler {
    let sourceWidth: Int
    let sourceHeight: Int
    let width: Int
    let height: Int
    let channels: Int
    private let vertical: LanczosResampler.Weights
    private let horizontal: LanczosResampler.Weights?
    private let slots: Int
    private let ring: UnsafeMutablePointer<Float>
    private let accumulator: UnsafeMutablePointer<Float>
    /// The ring rows of the output row being written, in order, for the C loop.
    private let rowPointers: UnsafeMutablePointer<UnsafePointer<Float>?>
    private var output: [UInt8]
    private var received = 0
    private var produced = 0
    /// AVX2 loops (when the CPU has them) or the portable Swift ones; tests compare the two.
    private let vector: Bool
    /// Multi-channel rows kept one plane after the other in the ring (vector loops only), so that each
    /// channel goes through the one-channel AVX2 horizontal loop; `planeRow` holds one output row of
    /// planes before it is interleaved.
    private let planar: Bool
    private let planeRow: UnsafeMutablePointer<UInt8>?

    init(sourceWidth: Int, sourceHeight: Int, width: Int, height: Int, channels: Int,
         vectorKernels: Bool = RowResampler.vectorKernels) {
        precondition(sourceWidth > 0 && sourceHeight > 0 && width > 0 && height > 0)
        vector = vectorKernels
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.width = width
        self.height = height
        self.channels = channels
        vertical = LanczosResampler.weights(from: sourceHeight, to: height)
        let horizontal = width == sourceWidth
            ? nil : LanczosResampler.weights(from: sourceWidth, to: width, tapMultiple: 4)
        self.horizontal = horizontal
        planar = vectorKernels && (channels == 3 || channels == 4) && (horizontal.map { $0.taps % 4 == 0 } ?? false)
        planeRow = planar ? .allocate(capacity: width * channels) : nil
        slots = vertical.taps
        let rowCount = sourceWidth * channels
        ring = .allocate(capacity: slots * rowCount)
        accumulator = .allocate(capacity: rowCount)
        rowPointers = .allocate(capacity: slots)
        output = [UInt8](repeating: 0, count: width * height * channels)
    }

    deinit {
        ring.deallocate()
        accumulator.deallocate()
        rowPointers.deallocate()
        planeRow?.deallocate()
    }

    /// The bytes this resampler holds: the ring of Float rows, the accumulator and the output image.
    var bufferBytes: Int {
        (slots + 1) * sourceWidth * channels * MemoryLayout<Float>.size + output.count + (planar ? width * channels : 0)
    }

    /// Whether every source row has been pushed (and so every output row written).
    var isComplete: Bool { received == sourceHeight }

    /// Takes the next source row (`sourceWidth × channels` samples) and writes the output rows it completes.
    func push(_ row: UnsafePointer<UInt8>) {
        precondition(received < sourceHeight, "more source rows than the image has")
        let count = sourceWidth * channels
        let floats = ring + (received % slots) * count
        if planar {
            attache_resample_widen_planar(row, floats, sourceWidth, Int32(channels))
        } else if vector {
            attache_resample_widen(row, floats, count)
        } else {
            for x in 0..<count { floats[x] = Float(row[x]) }
        }
        received += 1
        // Starts never decrease, so an output row becomes ready exactly when its last source row arrives,
        // while all of its rows are still in the ring.
        while produced < height, vertical.starts[produced] + slots <= received {
            emit(produced)
            produced += 1
        }
    }

    /// Whether the AVX2 + FMA loops of CJPEGStream run on this CPU (checked once).
    static let vectorKernels = attache_resample_available() != 0

    private func emit(_ y: Int) {
        let count = sourceWidth * channels
        let rowSize = width * channels
        let start = vertical.starts[y]
        output.withUnsafeMutableBufferPointer { out in
            vertical.weights.withUnsafeBufferPointer { vw in
                let o = out.baseAddress! + y * rowSize
                let weights = vw.baseAddress! + y * slots
                guard vector else {
                    LanczosResampler.emitRow(into: o, accumulator: accumulator, ring: ring, slots: slots, start: start,
                                             weights: weights, count: count, horizontal: horizontal, width: width,
                                             channels: channels)
                    return
                }
                for k in 0..<slots { rowPointers[k] = UnsafePointer(ring + ((start + k) % slots) * count) }
                attache_resample_vertical(accumulator, rowPointers, weights, Int32(slots), count)
                if let h = horizontal {
                    h.weights.withUnsafeBufferPointer { hw in
                        h.starts.withUnsafeBufferPointer { hs in
                            if channels == 1, h.taps % 4 == 0 {
                                attache_resample_horizontal1(accumulator, o, hw.baseAddress!, hs.baseAddress!,
                                                             Int32(h.taps), Int32(width))
                            } else if let planeRow {
                                for c in 0..<channels {
                                    attache_resample_horizontal1(accumulator + c * sourceWidth, planeRow + c * width,
                                                                 hw.baseAddress!, hs.baseAddress!, Int32(h.taps),
                                                                 Int32(width))
                                }
                                attache_resample_interleave(planeRow, o, width, Int32(channels))
                            } else {
                                LanczosResampler.horizontalPass(from: accumulator, to: o, weights: hw.baseAddress!,
                                                                starts: hs.baseAddress!, taps: h.taps, width: width,
                                                                channels: channels)
                            }
                        }
                    }
                } else {
                    for x in 0..<count { o[x] = LanczosResampler.clampToByte(accumulator[x]) }
                }
            }
        }
    }

    /// The resampled image; every source row must have been pushed.
    func finish() -> Raster {
        precondition(isComplete && produced == height, "the source image is incomplete")
        return Raster(width: width, height: height, channels: channels, pixels: output)
    }
}
