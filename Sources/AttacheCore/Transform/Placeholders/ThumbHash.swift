import Glibc

/// ThumbHash (Evan Wallace's placeholder): the image's average colour, aspect ratio, alpha and a few DCT
/// components of its luminance, two colour-difference channels and alpha, in about 25 bytes.
///
/// Layout (little-endian bit fields): 24 bits of L DC, P DC, Q DC, L scale and a has-alpha flag; 16 bits
/// of the shorter side's L component count, P and Q scales and a landscape flag; with alpha, one byte
/// of A DC and A scale; then one 4-bit value per AC component (L, P, Q, then A), low nibble first.
package enum ThumbHash {
    /// The largest side the algorithm is defined for.
    package static let maximumSide = 100

    /// The hash of straight (not premultiplied) RGBA pixels, rows packed; `width` and `height` at most
    /// 100. Rounding is half away from zero, as the published algorithm's `Math.round` for the
    /// non-negative values it rounds.
    package static func encode(rgba: [UInt8], width w: Int, height h: Int) -> [UInt8] {
        precondition(w > 0 && h > 0 && w <= maximumSide && h <= maximumSide, "ThumbHash takes up to 100×100")
        precondition(rgba.count == w * h * 4, "ThumbHash needs packed RGBA")
        let count = w * h
        var averageR = 0.0, averageG = 0.0, averageB = 0.0, averageA = 0.0
        for i in 0..<count {
            let j = i * 4
            let alpha = Double(rgba[j + 3]) / 255
            averageR += alpha / 255 * Double(rgba[j])
            averageG += alpha / 255 * Double(rgba[j + 1])
            averageB += alpha / 255 * Double(rgba[j + 2])
            averageA += alpha
        }
        if averageA > 0 {
            averageR /= averageA
            averageG /= averageA
            averageB /= averageA
        }
        let hasAlpha = averageA < Double(count)
        let limit = hasAlpha ? 5.0 : 7.0
        let longer = Double(max(w, h))
        let lx = max(1, roundHalfUp(limit * Double(w) / longer))
        let ly = max(1, roundHalfUp(limit * Double(h) / longer))

        // Composited over the average colour, then split into luminance, yellow–blue, red–green, alpha.
        var l = [Double](repeating: 0, count: count), p = l, q = l, a = l
        for i in 0..<count {
            let j = i * 4
            let alpha = Double(rgba[j + 3]) / 255
            let r = averageR * (1 - alpha) + alpha / 255 * Double(rgba[j])
            let g = averageG * (1 - alpha) + alpha / 255 * Double(rgba[j + 1])
            let b = averageB * (1 - alpha) + alpha / 255 * Double(rgba[j + 2])
            l[i] = (r + g + b) / 3
            p[i] = (r + g) / 2 - b
            q[i] = r - g
            a[i] = alpha
        }

        func encodeChannel(_ channel: [Double], _ nx: Int, _ ny: Int) -> (dc: Double, ac: [Double], scale: Double) {
            var dc = 0.0, ac: [Double] = [], scale = 0.0
            var fx = [Double](repeating: 0, count: w)
            for cy in 0..<ny {
                var cx = 0
                while cx * ny < nx * (ny - cy) {
                    var f = 0.0
                    for x in 0..<w { fx[x] = cos(Double.pi / Double(w) * Double(cx) * (Double(x) + 0.5)) }
                    for y in 0..<h {
                        let fy = cos(Double.pi / Double(h) * Double(cy) * (Double(y) + 0.5))
                        for x in 0..<w { f += channel[x + y * w] * fx[x] * fy }
                    }
                    f /= Double(count)
                    if cx > 0 || cy > 0 {
                        ac.append(f)
                        scale = max(scale, abs(f))
                    } else {
                        dc = f
                    }
                    cx += 1
                }
            }
            if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
            return (dc, ac, scale)
        }

        let lChannel = encodeChannel(l, max(3, lx), max(3, ly))
        let pChannel = encodeChannel(p, 3, 3)
        let qChannel = encodeChannel(q, 3, 3)
        let aChannel = hasAlpha ? encodeChannel(a, 5, 5) : (dc: 1, ac: [], scale: 1)

        let isLandscape = w > h
        let header24 = roundHalfUp(63 * lChannel.dc) | roundHalfUp(31.5 + 31.5 * pChannel.dc) << 6
            | roundHalfUp(31.5 + 31.5 * qChannel.dc) << 12 | roundHalfUp(31 * lChannel.scale) << 18 | (hasAlpha ? 1 << 23 : 0)
        let header16 = (isLandscape ? ly : lx) | roundHalfUp(63 * pChannel.scale) << 3 | roundHalfUp(63 * qChannel.scale) << 9
            | (isLandscape ? 1 << 15 : 0)
        var hash: [UInt8] = [
            UInt8(header24 & 255), UInt8(header24 >> 8 & 255), UInt8(header24 >> 16 & 255),
            UInt8(header16 & 255), UInt8(header16 >> 8 & 255),
        ]
        if hasAlpha { hash.append(UInt8(roundHalfUp(15 * aChannel.dc) | roundHalfUp(15 * aChannel.scale) << 4)) }
        var odd = false
        for factor in lChannel.ac + pChannel.ac + qChannel.ac + aChannel.ac {
            let nibble = UInt8(roundHalfUp(15 * factor) & 15)
            if odd { hash[hash.count - 1] |= nibble << 4 } else { hash.append(nibble) }
            odd.toggle()
        }
        return hash
    }

    /// Rounds a non-negative value half up, as JavaScript's `Math.round` does.
    static func roundHalfUp(_ value: Double) -> Int { Int(floor(value + 0.5)) }
}
