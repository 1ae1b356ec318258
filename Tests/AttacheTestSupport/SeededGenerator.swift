import Foundation

/// A small deterministic generator (SplitMix64) so that a failing run's kill moments can be replayed.
package struct SeededGenerator: RandomNumberGenerator {
    package let seed: UInt64
    private var state: UInt64
    package init(seed: UInt64) {
        self.seed = seed
        state = seed
    }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension SeededGenerator {
    /// A generator for the test `name`: seeded by `ATTACHE_TEST_SEED` when it is set (to replay a run),
    /// by a random seed otherwise. The seed is printed with the test's name, so that a failure can be
    /// replayed with the same inputs.
    package static func forTest(_ name: String) -> SeededGenerator {
        let given = ProcessInfo.processInfo.environment["ATTACHE_TEST_SEED"].flatMap { UInt64($0) }
        let seed = given ?? UInt64.random(in: 1...UInt64.max)
        print("\(name) seed: \(seed) (ATTACHE_TEST_SEED=\(seed) replays it)")
        return SeededGenerator(seed: seed)
    }
}
