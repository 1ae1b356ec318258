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
