import AttacheFuzzTargets
import Foundation
import AttacheTestSupport
import Testing

/// The fuzzers' seed corpora (Tests/FuzzCorpus/<target>/) stay valid: every file runs through every
/// target without a crash or a broken invariant, so a change that breaks a parser on a known input
/// fails here in CI, not first in a fuzzing run.
@Suite("fuzz corpora")
struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("FuzzCorpus")

    static func files(of target: FuzzTarget) throws -> [URL] {
        let folder = corpus.appendingPathComponent(target.rawValue)
        return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    @Test("every target has a seed corpus", arguments: FuzzTarget.allCases)
    func seedsExist(_ target: FuzzTarget) throws {
        #expect(try Self.files(of: target).count >= 10)
    }

    @Test("every corpus file runs through every target", arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) throws {
        var count = 0
        for source in FuzzTarget.allCases {
            for file in try Self.files(of: source) {
                target.run([UInt8](try Data(contentsOf: file)))
                count += 1
            }
        }
        #expect(count > 100)
    }
}

extension FuzzCorpusTests {
    /// Seeds that no longer open (a format or key change) would leave the fuzzer stuck at the header.
    @Test("the unseal seeds open with the target's keys")
    func unsealSeedsOpen() throws {
        for file in try Self.files(of: .unseal) {
            let opened = UnsealTarget.open([UInt8](try Data(contentsOf: file)))
            #expect(opened != nil, "\(file.lastPathComponent) does not open")
        }
    }
}

extension FuzzCorpusTests {
    /// Seeds that no longer decode would leave the fuzzer in libheif's header checks, short of the grid
    /// walk and the tile decoder.
    /// (heif-enc made the 33 × 17 sources 32 × 16.)
    @Test("the heif seeds decode at their size, all but the truncated one and those found by fuzzing")
    func heifSeedsDecode() throws {
        let sizes = [
            "alpha.avif": (40, 40), "alpha.heic": (40, 40), "grid-mirrored.heic": (96, 128), "grid-odd.heic": (100, 70),
            "grid.heic": (128, 96), "lossless-444.heic": (32, 16), "odd-size.heic": (32, 16), "photo.avif": (64, 48),
            "photo.heic": (64, 48), "rotated-90.heic": (48, 64), "ten-bit.heic": (48, 32), "thumbnail.heic": (64, 48),
            "two-images.heic": (64, 48),
        ]
        for file in try Self.files(of: .heif) {
            let size = HEIFTarget.decodedSize([UInt8](try Data(contentsOf: file)))
            if ["truncated.heic", "overlay-bomb.heic", "grid-of-itself.heic", "grid-of-itself-hidden.heic",
                "grid-of-itself-counted.heic"].contains(file.lastPathComponent) {
                #expect(size == nil)
                continue
            }
            let expected = try #require(sizes[file.lastPathComponent], "\(file.lastPathComponent) has no expected size")
            #expect(size?.width == expected.0 && size?.height == expected.1,
                    "\(file.lastPathComponent): \(String(describing: size))")
        }
    }
}
