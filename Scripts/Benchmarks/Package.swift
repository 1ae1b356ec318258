// swift-tools-version:6.1
// The library-side drivers of the benchmarks (Scripts/bench.sh), in a package of their own so that they
// are not part of the product: `swift build` of the root package builds only what users run. They
// depend on the root package by path, so a benchmark measures the library of the same checkout.
//
//   swift build -c release --static-swift-stdlib --package-path Scripts/Benchmarks
import PackageDescription

let package = Package(
    name: "AttacheBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Attache", path: "../.."),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
    ],
    targets: [
        // Scripts/bench/requests.sh's library side: many small requests through one RequestClient (and
        // Scripts/bench/observability.sh's, with ATTACHE_BENCH_EXPORT set).
        .executableTarget(
            name: "attache-request-bench",
            dependencies: [
                .product(name: "Attache", package: "Attache"),
                .product(name: "Logging", package: "swift-log"),
                // Scripts/bench/observability.sh: the export bootstrapped as the executable does it.
                .product(name: "AttacheMetricsExport", package: "Attache"),
            ],
            path: "Sources/RequestBench",
            swiftSettings: [.swiftLanguageMode(.v6)]),
        // Scripts/bench/send-many.sh's library side: a burst of small attachments through one pipeline.
        .executableTarget(
            name: "attache-send-many-bench",
            dependencies: [.product(name: "Attache", package: "Attache")],
            path: "Sources/SendManyBench",
            swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
