import Foundation
import Testing
@testable import Attache
@testable import AttacheCore

/// Quality floors for the photo path against a reference made here, independently of the code under
/// test: a plain Lanczos-3 resize (Double arithmetic, no DCT scaling) of the fully decoded source.
///
/// The picture is fine-grained noise on gradients, the case where a DCT-scaled decode that is too
/// small shows: libjpeg's 1/2 reduction is a 2×2 box average, which folds the noise back into the
/// picture as false texture. Measured here: decoding at 3/4 (the default) gives 43.3 dB of luma PSNR
/// and 0.969 SSIM (8×8 windows); decoding at 1/2 (`decodeOversampling = 1`) gives 42.5 dB and 0.962.
/// SSIM separates the two; PSNR only guards against gross breakage.
@Suite struct DownscaleQualityTests {
    /// 1600×1200 → 500×375: a 3/4-scale decode (1200 px) is ≥ 2× the target, a 1/2-scale one is not.
    static let sourceWidth = 1600, sourceHeight = 1200, maxSide = 500
    static let ssimFloor = 0.965

    @Test func defaultDownscaleMatchesAFullDecodeLanczosReference() throws {
        let (jpeg, reference) = try Self.sourceAndReference()
        var options = ImageRecompressor.Options()
        options.maxSide = Self.maxSide
        options.quality = 95
        let outcome = try ImageRecompressor(options: options).recompress(jpeg, thumbnailSides: [])
        let out = try TestImages.decodeJPEG(try #require(outcome.bytes))
        try #require(out.width == reference.width && out.height == reference.height)

        let luma = Self.luma(out)
        let psnr = Self.psnr(luma, reference.luma)
        let ssim = Self.ssim(luma, reference.luma, width: out.width, height: out.height)
        #expect(psnr >= 42, "luma PSNR \(psnr) dB against a full-decode Lanczos-3 reference")
        #expect(ssim >= Self.ssimFloor, "luma SSIM \(ssim) against a full-decode Lanczos-3 reference")
    }

    @Test func cheaperDecodeScaleIsMeasurablyWorse() throws {
        // Guards the test above: if the 1/2-scale path scored as well, the floors would prove nothing.
        let (jpeg, reference) = try Self.sourceAndReference()
        var options = ImageRecompressor.Options()
        options.maxSide = Self.maxSide
        options.quality = 95
        options.decodeOversampling = 1
        let outcome = try ImageRecompressor(options: options).recompress(jpeg, thumbnailSides: [])
        let out = try TestImages.decodeJPEG(try #require(outcome.bytes))
        let ssim = Self.ssim(Self.luma(out), reference.luma, width: out.width, height: out.height)
        #expect(ssim < Self.ssimFloor, "the 1/2-scale decode reached SSIM \(ssim)")
    }

    // MARK: - Reference

    static func sourceAndReference() throws -> (jpeg: [UInt8], reference: (width: Int, height: Int, luma: [Double])) {
        var source = TestImages.photo(width: sourceWidth, height: sourceHeight)
        // Deterministic per-pixel noise (a 64-bit LCG), ±24 levels: energy up to the source's Nyquist limit.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for i in source.pixels.indices {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let noise = Int(state >> 58) - 32  // -32...31
            source.pixels[i] = UInt8(clamping: Int(source.pixels[i]) + noise * 3 / 4)
        }
        let jpeg = try TestImages.jpeg(source, quality: 95)
        let decoded = try TestImages.decodeJPEG(jpeg)
        let width = maxSide, height = sourceHeight * maxSide / sourceWidth
        let luma = lanczos3(luma(decoded), sourceWidth, sourceHeight, width, height)
        return (jpeg, (width, height, luma))
    }

    /// BT.601 luma, as JPEG's own colour transform uses.
    static func luma(_ raster: Raster) -> [Double] {
        (0..<(raster.width * raster.height)).map { i -> Double in
            let r = Double(raster.pixels[i * 3]), g = Double(raster.pixels[i * 3 + 1]), b = Double(raster.pixels[i * 3 + 2])
            return 0.299 * r + 0.587 * g + 0.114 * b
        }
    }

    /// Textbook separable Lanczos-3 with the kernel stretched by the scale factor, edges repeated.
    static func lanczos3(_ plane: [Double], _ w: Int, _ h: Int, _ outW: Int, _ outH: Int) -> [Double] {
        func kernel(_ x: Double) -> Double {
            if x == 0 { return 1 }
            if abs(x) >= 3 { return 0 }
            let px = Double.pi * x
            return 3 * sin(px) * sin(px / 3) / (px * px)
        }
        func axis(_ n: Int, _ m: Int) -> [[(Int, Double)]] {
            let scale = Double(n) / Double(m), stretch = max(scale, 1)
            return (0..<m).map { i in
                let centre = (Double(i) + 0.5) * scale - 0.5
                let taps = Int(floor(centre - 3 * stretch))...Int(ceil(centre + 3 * stretch))
                let raw = taps.map { j in (min(max(j, 0), n - 1), kernel((Double(j) - centre) / stretch)) }
                let total = raw.reduce(0) { $0 + $1.1 }
                return raw.map { ($0.0, $0.1 / total) }
            }
        }
        let columns = axis(w, outW), rows = axis(h, outH)
        var narrow = [Double](repeating: 0, count: outW * h)
        for y in 0..<h {
            for x in 0..<outW { narrow[y * outW + x] = columns[x].reduce(0) { $0 + $1.1 * plane[y * w + $1.0] } }
        }
        var out = [Double](repeating: 0, count: outW * outH)
        for y in 0..<outH {
            for x in 0..<outW { out[y * outW + x] = rows[y].reduce(0) { $0 + $1.1 * narrow[$1.0 * outW + x] } }
        }
        return out
    }

    static func psnr(_ a: [Double], _ b: [Double]) -> Double {
        let mse = zip(a, b).reduce(0) { $0 + ($1.0 - min(max($1.1, 0), 255)) * ($1.0 - min(max($1.1, 0), 255)) }
            / Double(a.count)
        return 10 * log10(255 * 255 / mse)
    }

    /// Mean SSIM over 8×8 windows (Wang et al. 2004 constants), enough to rank two resizes.
    static func ssim(_ a: [Double], _ b: [Double], width: Int, height: Int) -> Double {
        let c1: Double = 6.5025, c2: Double = 58.5225  // (0.01 · 255)², (0.03 · 255)²
        var total = 0.0, count = 0
        for top in stride(from: 0, through: height - 8, by: 4) {
            for left in stride(from: 0, through: width - 8, by: 4) {
                var sa = 0.0, sb = 0.0, saa = 0.0, sbb = 0.0, sab = 0.0
                for y in top..<(top + 8) {
                    for x in left..<(left + 8) {
                        let p = a[y * width + x], q = min(max(b[y * width + x], 0), 255)
                        sa += p; sb += q; saa += p * p; sbb += q * q; sab += p * q
                    }
                }
                let n = 64.0
                let ma = sa / n, mb = sb / n
                let va = saa / n - ma * ma, vb = sbb / n - mb * mb, cov = sab / n - ma * mb
                total += (2 * ma * mb + c1) * (2 * cov + c2) / ((ma * ma + mb * mb + c1) * (va + vb + c2))
                count += 1
            }
        }
        return total / Double(count)
    }
}
