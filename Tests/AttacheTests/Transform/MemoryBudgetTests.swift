import AttacheTestSupport
import Testing
@testable import AttacheCore

/// The memory budget: a transform whose estimate (from the header) is over it is refused before anything
/// is decoded, naming the file, the estimate and the budget; one under it goes through.
@Suite struct MemoryBudgetTests {
    /// A progressive 4:2:0 JPEG of 1200 × 900: libjpeg keeps its coefficients, 2 bytes per sample
    /// (1200 × 912 × 1.5 × 2 ≈ 3.3 MB), on top of the file and the output.
    static func progressiveJPEG() throws -> [UInt8] {
        try TestImages.jpeg(TestImages.photo(width: 1200, height: 900), progressive: true)
    }

    @Test("the estimate counts a progressive JPEG's coefficients, and a PNG read from disk holds none of its file")
    func theEstimateFollowsTheDecoder() throws {
        let baseline = try ImageRenderer.inspect(TestImages.jpeg(TestImages.photo(width: 1200, height: 900)),
                                                 pixelLimit: 100_000_000, scanLimit: 64)
        let progressive = try ImageRenderer.inspect(Self.progressiveJPEG(), pixelLimit: 100_000_000, scanLimit: 64)
        #expect(progressive.multiScan && !baseline.multiScan)
        let coefficients = 1200 * 912 * 2 * 3 / 2
        let difference = ImageRenderer.memoryEstimate(progressive, width: 640, height: 480, planar: true, oversampling: 2)
            - ImageRenderer.memoryEstimate(baseline, width: 640, height: 480, planar: true, oversampling: 2)
        // The two files differ in size a little too.
        #expect(abs(difference - coefficients - (progressive.byteCount - baseline.byteCount)) < 64 << 10)
    }

    @Test("a JPEG over the budget is refused before decoding, with the estimate and the budget; under it passes")
    func overTheBudgetIsRefused() throws {
        let jpeg = try Self.progressiveJPEG()
        var options = ImageRecompressor.Options()
        options.maxSide = 640
        let image = try ImageRenderer.inspect(jpeg, pixelLimit: options.pixelLimit, scanLimit: 64)
        let estimate = ImageRenderer.memoryEstimate(image, width: 640, height: 480, planar: true,
                                                    oversampling: options.decodeOversampling)
        options.memoryBudget = estimate - 1
        let error = try #require(throws: AttacheError.self) { _ = try ImageRecompressor(options: options).recompress(jpeg) }
        #expect(error.code == .limitExceeded)
        #expect(error.stage == .transform)
        #expect(error.message.contains("1200×900 progressive JPEG"))
        #expect(error.message.contains("(\(estimate) bytes)"))
        #expect(error.message.contains("over the memory budget of \((estimate - 1 + (1 << 20) - 1) >> 20) MiB (\(estimate - 1) bytes)"))

        options.memoryBudget = estimate
        let outcome = try ImageRecompressor(options: options).recompress(jpeg)
        #expect(outcome.result.outputWidth == 640)
    }

    @Test("through the Transformer: the error names the file, and by default the file goes as it is with the reason",
          arguments: [TransformErrorPolicy.fail, .sendOriginal])
    func theTransformerRefusesAndNamesTheFile(policy: TransformErrorPolicy) throws {
        let folder = try ScratchFolder(prefix: "attache-budget")
        defer { folder.remove() }
        let path = try folder.write("big.jpg", try Self.progressiveJPEG())
        let png = try folder.write("big.png", StreamedDecodeTests.pngOfKind("rgb8", width: 1200, height: 900))
        var configuration = Transformer.Configuration()
        configuration.makeThumbnails = false
        configuration.onTransformError = policy
        configuration.image.maxSide = 640
        configuration.image.memoryBudget = 2 << 20
        for (file, type) in [(path, "image/jpeg"), (png, "image/png")] {
            if policy == .fail {
                let error = try #require(throws: AttacheError.self) {
                    _ = try Transformer.transformBlocking(path: file, mimeType: type, kind: .image,
                                                          workDirectory: folder.path, configuration: configuration)
                }
                #expect(error.code == .limitExceeded)
                #expect(error.file == file)
                #expect(error.message.contains("memory budget of 2 MiB"))
            } else {
                let output = try Transformer.transformBlocking(path: file, mimeType: type, kind: .image,
                                                               workDirectory: folder.path, configuration: configuration)
                #expect(output.path == file)
                #expect(output.skipReason?.contains("memory budget") == true)
            }
        }
        // Under the default budget both go through, the PNG read from disk a piece at a time.
        configuration.image.memoryBudget = ImageRecompressor.Options().memoryBudget
        for (file, type) in [(path, "image/jpeg"), (png, "image/png")] {
            let output = try Transformer.transformBlocking(path: file, mimeType: type, kind: .image,
                                                           workDirectory: folder.path, configuration: configuration)
            #expect(output.path != file)
            #expect(output.width == 640)
        }
    }
}
