import Glibc

/// BlurHash (Wolt's compact placeholder): a few DCT components of the image in linear light, quantised
/// and written in base 83. Mastodon, Signal and Element send it with a message so that a client can draw
/// a blurred preview before the attachment arrives.
///
/// The string is: one digit for the component counts, one for the largest AC value, four for the DC
/// colour (sRGB), then two per AC component (each channel quantised to 19 levels after a square root).
/// With the default 4×3 components it is 28 characters long.
package enum BlurHash {
    static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~".utf8)

    /// sRGB byte → linear light, for every byte value.
    static let linearTable: [Double] = (0..<256).map { value in
        let v = Double(value) / 255
        return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
    }

    /// The hash of an RGB image (3 bytes per pixel, rows packed) with `componentsX` × `componentsY`
    /// components, each 1…9.
    ///
    /// The basis functions and the order of the sums are those of the published algorithm, so that
    /// another implementation fed the same pixels gets the same string, save a last-digit rounding
    /// difference where a value falls on a quantisation step.
    package static func encode(rgb pixels: [UInt8], width: Int, height: Int, componentsX: Int, componentsY: Int) -> String {
        precondition((1...9).contains(componentsX) && (1...9).contains(componentsY), "BlurHash takes 1 to 9 components")
        precondition(width > 0 && height > 0 && pixels.count == width * height * 3, "BlurHash needs packed RGB")
        let w = Double(width), h = Double(height)
        var linear = [Double](repeating: 0, count: pixels.count)
        for index in 0..<pixels.count { linear[index] = linearTable[Int(pixels[index])] }

        var factors: [(Double, Double, Double)] = []
        factors.reserveCapacity(componentsX * componentsY)
        var cosX = [Double](repeating: 0, count: width)
        var cosY = [Double](repeating: 0, count: height)
        for j in 0..<componentsY {
            for y in 0..<height { cosY[y] = cos(Double.pi * Double(j) * Double(y) / h) }
            for i in 0..<componentsX {
                for x in 0..<width { cosX[x] = cos(Double.pi * Double(i) * Double(x) / w) }
                let normalisation: Double = i == 0 && j == 0 ? 1 : 2
                var r = 0.0, g = 0.0, b = 0.0
                for y in 0..<height {
                    let row = y * width * 3
                    for x in 0..<width {
                        let basis = normalisation * cosX[x] * cosY[y]
                        let p = row + x * 3
                        r += basis * linear[p]
                        g += basis * linear[p + 1]
                        b += basis * linear[p + 2]
                    }
                }
                let scale = w * h
                factors.append((r / scale, g / scale, b / scale))
            }
        }

        var text: [UInt8] = []
        text.reserveCapacity(4 + 2 * factors.count)
        append(&text, (componentsX - 1) + (componentsY - 1) * 9, length: 1)
        let ac = factors.dropFirst()
        var maximum = 1.0
        if ac.isEmpty {
            append(&text, 0, length: 1)
        } else {
            let actual = ac.reduce(0.0) { max($0, abs($1.0), abs($1.1), abs($1.2)) }
            let quantised = Int(max(0, min(82, floor(actual * 166 - 0.5))))
            maximum = Double(quantised + 1) / 166
            append(&text, quantised, length: 1)
        }
        let dc = factors[0]
        append(&text, (toSRGB(dc.0) << 16) + (toSRGB(dc.1) << 8) + toSRGB(dc.2), length: 4)
        for factor in ac {
            func level(_ value: Double) -> Int {
                Int(max(0, min(18, floor(signedPow(value / maximum, 0.5) * 9 + 9.5))))
            }
            append(&text, level(factor.0) * 19 * 19 + level(factor.1) * 19 + level(factor.2), length: 2)
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Linear light → sRGB byte.
    static func toSRGB(_ value: Double) -> Int {
        let v = max(0, min(1, value))
        return v <= 0.0031308 ? Int(v * 12.92 * 255 + 0.5) : Int((1.055 * pow(v, 1 / 2.4) - 0.055) * 255 + 0.5)
    }

    static func signedPow(_ value: Double, _ exponent: Double) -> Double {
        let magnitude = pow(abs(value), exponent)
        return value < 0 ? -magnitude : magnitude
    }

    /// `value` as `length` base-83 digits, most significant first.
    static func append(_ text: inout [UInt8], _ value: Int, length: Int) {
        var divisor = 1
        for _ in 1..<max(length, 1) { divisor *= 83 }
        for _ in 0..<length {
            text.append(alphabet[(value / divisor) % 83])
            divisor /= 83
        }
    }
}
