@testable import Attache
@testable import AttacheCore
import AttacheTestSupport
import Testing

/// The AVX2 loops of the resampler have portable Swift twins for CPUs without AVX2. This machine has
/// AVX2, so the twins run only when asked for: these tests ask, and compare.
@Suite("Portable resampler path")
struct PortablePathTests {
    static func noise(width: Int, height: Int, channels: Int, seed: UInt64) -> Raster {
        var state = seed
        var pixels = [UInt8](repeating: 0, count: width * height * channels)
        for index in pixels.indices {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            // Smooth gradients plus noise, so both flat areas and edges are exercised.
            let gradient = (index / channels % width) * 255 / max(width - 1, 1)
            pixels[index] = UInt8(truncatingIfNeeded: (gradient + Int(state >> 59)) & 0xFF)
        }
        return Raster(width: width, height: height, channels: channels, pixels: pixels)
    }

    @Test(arguments: [(1, 997, 613, 320, 197), (3, 640, 480, 211, 158), (4, 300, 200, 300, 77), (1, 64, 64, 128, 128)])
    func vectorAndPortableLoopsAgree(_ size: (Int, Int, Int, Int, Int)) throws {
        try #require(RowResampler.vectorKernels, "this CPU has no AVX2: only the portable path exists here")
        let (channels, sourceWidth, sourceHeight, width, height) = size
        let source = Self.noise(width: sourceWidth, height: sourceHeight, channels: channels, seed: UInt64(sourceWidth))
        let vector = LanczosResampler.resample(source, width: width, height: height, vectorKernels: true)
        let portable = LanczosResampler.resample(source, width: width, height: height, vectorKernels: false)
        #expect(vector.width == portable.width && vector.height == portable.height)
        // The same filter; only the order of the Float additions differs, so at most one step of rounding.
        let worst = zip(vector.pixels, portable.pixels).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(worst <= 1)
    }
}
