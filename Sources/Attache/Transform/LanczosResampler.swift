import Foundation

/// A separable Lanczos-3 resampler for 8-bit rasters of any channel count.
///
/// It runs the vertical pass first, one output row at a time, over whole contiguous source rows (the
/// inner loop is a multiply-add across `width × channels` samples that the compiler vectorises), then
/// the horizontal pass on that single Float row. Only one row of intermediate Floats is kept, so the
/// memory cost is the source plus the destination. When downscaling, the kernel is stretched by the
/// scale factor so every source pixel contributes (no aliasing); results are clamped, which hides the
/// small overshoot ("ringing") Lanczos produces at hard edges.
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
        let px = Double.pi * x
        return 3 * sin(px) * sin(px / 3) / (px * px)
    }

    static func weights(from source: Int, to destination: Int) -> Weights {
        let scale = Double(source) / Double(destination)
        let stretch = max(scale, 1)
        let support = 3 * stretch
        let taps = min(source, Int(ceil(support * 2)) + 1)
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
    static func resample(_ source: Raster, width: Int, height: Int) -> Raster {
        precondition(width > 0 && height > 0)
        if width == source.width && height == source.height { return source }
        let c = source.channels
        let srcRow = source.width * c
        let dstRow = width * c
        let vertical = height == source.height ? nil : weights(from: source.height, to: height)
        let horizontal = width == source.width ? nil : weights(from: source.width, to: width)
        var out = [UInt8](repeating: 0, count: dstRow * height)
        var row = [Float](repeating: 0, count: srcRow)

        source.pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                row.withUnsafeMutableBufferPointer { acc in
                    let s = src.baseAddress!
                    let a = acc.baseAddress!
                    for y in 0..<height {
                        // Vertical pass into `acc`.
                        if let v = vertical {
                            for x in 0..<srcRow { a[x] = 0 }
                            let start = v.starts[y]
                            for k in 0..<v.taps {
                                let w = v.weights[y * v.taps + k]
                                if w == 0 { continue }
                                let line = s + (start + k) * srcRow
                                // Contiguous multiply-add over a whole row: vectorised by the compiler.
                                for x in 0..<srcRow { a[x] += w * Float(line[x]) }
                            }
                        } else {
                            let line = s + y * srcRow
                            for x in 0..<srcRow { a[x] = Float(line[x]) }
                        }
                        // Horizontal pass from `acc` into the output row.
                        let o = dst.baseAddress! + y * dstRow
                        if let h = horizontal {
                            h.weights.withUnsafeBufferPointer { hw in
                                h.starts.withUnsafeBufferPointer { hs in
                                    horizontalPass(from: a, to: o, weights: hw.baseAddress!, starts: hs.baseAddress!,
                                                   taps: h.taps, width: width, channels: c)
                                }
                            }
                        } else {
                            for x in 0..<dstRow { o[x] = clampToByte(a[x]) }
                        }
                    }
                }
            }
        }
        return Raster(width: width, height: height, channels: c, pixels: out)
    }

    /// One output row of the horizontal pass; the one-channel case (JPEG planes, the hot path) gets a
    /// loop of its own so the compiler can keep everything in registers.
    @inline(__always)
    private static func horizontalPass(from a: UnsafeMutablePointer<Float>, to o: UnsafeMutablePointer<UInt8>,
                                       weights: UnsafePointer<Float>, starts: UnsafePointer<Int>,
                                       taps: Int, width: Int, channels c: Int) {
        if c == 1 {
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
