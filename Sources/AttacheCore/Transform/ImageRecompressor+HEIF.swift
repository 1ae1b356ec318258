extension ImageRecompressor {
    /// Recompresses a HEIC/HEIF/AVIF photo held in memory with `decoder`, as ``recompress(_:thumbnailSides:)``
    /// does other photos: its rows go from the decoder straight into the resampler, so neither an RGB copy
    /// of the picture nor a BMP of it is ever made (see ``HEIFDecoding``), and the orientation the decoder
    /// leaves to it is applied to the downscaled picture.
    ///
    /// - Throws: ``AttacheError`` in stage `.transform` as ``HEIFDecoding/decodeRows(_:pixelLimit:prepare:row:)``
    ///   does, and `.corruptInput` when the picture ends early.
    package func recompressHEIF(_ data: [UInt8], decoder: any HEIFDecoding,
                                thumbnailSides: [Int] = []) throws -> Outcome {
        var rows: PackedRowResampler?
        var source = HEIFLayout(width: 0, height: 0, orientation: 1)
        try decoder.decodeRows(data, pixelLimit: options.pixelLimit, prepare: { layout in
            source = layout
            let (width, height) = LanczosResampler.fittedSize(width: layout.displayedWidth, height: layout.displayedHeight,
                                                              maxSide: options.maxSide)
            let swaps = layout.orientation >= 5
            rows = PackedRowResampler(sourceWidth: layout.width, sourceHeight: layout.height, channels: 3,
                                      width: swaps ? height : width, height: swaps ? width : height)
        }, row: { row in
            rows?.push(row)
        })
        guard let rows, rows.isComplete else {
            throw AttacheError(.corruptInput, stage: .transform, "the HEIF image ended early")
        }
        let rendered = RenderedImage.packed(rows.finish(keepAlpha: false, orientation: source.orientation))
        let bytes = try encode(rendered, format: options.format, quality: options.quality, progressive: options.progressive)
        let result = RecompressionResult(inputWidth: source.displayedWidth, inputHeight: source.displayedHeight,
                                         outputWidth: rendered.width, outputHeight: rendered.height,
                                         inputByteCount: Int64(data.count), outputByteCount: Int64(bytes.count),
                                         passedThrough: false, mimeType: options.format.mimeType)
        return Outcome(bytes: bytes, result: result, previews: try previews(of: rendered, sides: thumbnailSides))
    }
}
