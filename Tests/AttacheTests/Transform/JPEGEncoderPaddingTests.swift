import Testing
@testable import AttacheCore

/// TurboJPEG reads a 4:2:0 Y plane at even width and height; an odd-sized picture must be padded by us,
/// or the encoder reads past the plane and puts those bytes into the JPEG that is sent (found by
/// `Scripts/test.sh --sanitize address`: a heap-buffer-overflow in tjCompressFromYUVPlanes).
@Suite struct JPEGEncoderPaddingTests {
    @Test("odd-sized planes are encoded without reading past them", arguments: [(5, 5), (6, 5), (5, 6), (1, 1), (63, 47)])
    func oddSizes(_ size: (Int, Int)) throws {
        let (width, height) = size
        let planes = [
            Raster(width: width, height: height, channels: 1, filling: 200),
            Raster(width: (width + 1) / 2, height: (height + 1) / 2, channels: 1, filling: 128),
            Raster(width: (width + 1) / 2, height: (height + 1) / 2, channels: 1, filling: 128),
        ]
        let jpeg = try TurboJPEGEncoder().encode(planes: planes, width: width, height: height, quality: 90,
                                                 progressive: false)
        // Decoded as planes, the padding row and column are there too: they must repeat the picture's
        // edge, not hold whatever followed the plane in memory.
        let decoder = try TurboJPEGDecoder()
        let header = try decoder.header(jpeg)
        let decoded = try decoder.decodePlanes(jpeg, header: header, scaledWidth: width, scaledHeight: height, flags: 0)
        let luma = decoded[0]
        #expect(luma.width == width + width % 2 && luma.height == height + height % 2)
        let far = luma.pixels.map { abs(Int($0) - 200) }.max() ?? 0
        #expect(far <= 3, "a Y sample is \(far) away from the flat 200 the picture and its padding hold")
    }

    @Test func paddingRepeatsTheLastColumnAndRow() {
        let raster = Raster(width: 2, height: 2, channels: 1, pixels: [1, 2, 3, 4])
        let padded = raster.padded(width: 3, height: 3)
        #expect(padded.pixels == [1, 2, 2, 3, 4, 4, 3, 4, 4])
        #expect(raster.padded(width: 2, height: 1).pixels == raster.pixels)
    }
}
