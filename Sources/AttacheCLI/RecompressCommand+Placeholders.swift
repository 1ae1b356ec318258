import AttacheCore
import Glibc

extension RecompressCommand {
    /// What the placeholders cost next to the recompress of a photo, measured in this process: the thread
    /// CPU time of `repeats` runs of each variant, interleaved so that drift hits all alike, medians printed.
    ///
    /// - `recompress`: the photo alone, as `attache recompress` does it;
    /// - `+ thumbnails`: with the 320 and 40 px previews an upload makes;
    /// - `+ placeholders`: the same with BlurHash, ThumbHash and the stripped thumbnail;
    /// - `placeholder step`: the placeholders made from the 40 px preview alone (its decode is measured
    ///   without placeholders and taken off), the cost the previews' downscale does not already pay.
    func measurePlaceholderCost(repeats: Int) throws {
        let data = try EncryptCommand.readWholeFile(input)
        var plain = ImageRecompressor.Options.standard
        plain.placeholders = nil
        let with = ImageRecompressor(options: .standard)
        let without = ImageRecompressor(options: plain)
        let sides = [320, 40]
        var recompress: [Double] = [], thumbnails: [Double] = [], placeholders: [Double] = [], step: [Double] = []
        let tiny = try without.recompress(data, thumbnailSides: [40]).thumbnails[0].bytes
        for _ in 0..<max(repeats, 1) {
            recompress.append(try Self.threadCPU { _ = try without.recompress(data) })
            thumbnails.append(try Self.threadCPU { _ = try without.recompress(data, thumbnailSides: sides) })
            placeholders.append(try Self.threadCPU { _ = try with.recompress(data, thumbnailSides: sides) })
            let decodeOnly = try Self.threadCPU { for _ in 0..<20 { _ = try without.previews(ofImage: tiny, sides: [40]) } }
            let decodeAndMake = try Self.threadCPU { for _ in 0..<20 { _ = try with.previews(ofImage: tiny, sides: [40]) } }
            step.append((decodeAndMake - decodeOnly) / 20)
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        func signed(_ value: Double) -> String {
            value < 0 ? "-" + EncryptCommand.twoDecimals(-value) : EncryptCommand.twoDecimals(value)
        }
        func ms(_ seconds: Double) -> String { signed(seconds * 1000) + " ms" }
        func percent(_ part: Double, of whole: Double) -> String { signed(part / whole * 100) + " %" }
        let base = median(recompress)
        writeOutputLine("recompress: \(ms(base)) CPU (median of \(recompress.count))")
        writeOutputLine("+ thumbnails: \(ms(median(thumbnails)))")
        writeOutputLine("+ thumbnails + placeholders: \(ms(median(placeholders)))")
        writeOutputLine("placeholders, A/B: \(ms(median(placeholders) - median(thumbnails))) = \(percent(median(placeholders) - median(thumbnails), of: base)) of the recompress")
        writeOutputLine("placeholder step alone: \(ms(median(step))) = \(percent(median(step), of: base)) of the recompress")
    }

    /// The calling thread's CPU seconds spent in `body`.
    static func threadCPU(_ body: () throws -> Void) throws -> Double {
        func now() -> Double {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }
        let start = now()
        try body()
        return now() - start
    }
}
