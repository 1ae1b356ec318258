// swift-tools-version:6.0
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Attache",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Attache", targets: ["Attache"]),
        .library(name: "AttacheServer", targets: ["AttacheServer"]),
        .executable(name: "attache", targets: ["attache"]),
        .executable(name: "attache-server", targets: ["attache-server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0"),
        .package(url: "https://github.com/vapor/multipart-kit.git", from: "4.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.0.0"),
    ],
    targets: [
        // C libraries: a module map and a shim header each, nothing else.
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CTurboJPEG", pkgConfig: "libturbojpeg",
            providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(
            name: "CWebP", pkgConfig: "libwebp",
            providers: [.apt(["libwebp-dev"])]),
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CPNG", pkgConfig: "libpng",
            providers: [.apt(["libpng-dev"])]),
        // Our own vectorised base64 encoder (AVX2 with a runtime check; Swift's scalar code otherwise).
        .target(name: "CBase64"),

        .target(
            name: "Attache",
            dependencies: [
                "CCurl", "CTurboJPEG", "CWebP", "COpenSSL", "CPNG", "CBase64",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "attache",
            dependencies: [
                "Attache",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        // The detector's libFuzzer target (Scripts/fuzz.sh); a plain build replays inputs given as files.
        .executableTarget(
            name: "attache-fuzz",
            dependencies: ["Attache"],
            swiftSettings: swiftSettings),
        .target(
            name: "AttacheServer",
            dependencies: [
                "Attache", "COpenSSL",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "MultipartKit", package: "multipart-kit"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // Swift 6.3.1's optimizer crashes on this module in release builds (deserializing
            // FoundationEssentials' Data.init<S: Sequence> it inlines: "reference to top-level
            // declaration 'memset' broken by a context change"). The server's own code is not hot
            // (parsing happens in MultipartKit and NIO, which stay optimized), so it is built without
            // optimization. Remove when the toolchain is fixed.
            swiftSettings: swiftSettings + [.unsafeFlags(["-Onone"], .when(configuration: .release))]),
        .executableTarget(
            name: "attache-server",
            dependencies: [
                "AttacheServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings),

        // The README's library example, compiled with every build so that it stays true.
        .executableTarget(
            name: "attache-example",
            dependencies: ["Attache"],
            path: "Samples/Examples/SendAttachments",
            swiftSettings: swiftSettings),

        .testTarget(
            name: "AttacheTests",
            dependencies: [
                "Attache",
                .product(name: "MultipartKit", package: "multipart-kit"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "AttacheServerTests",
            dependencies: [
                "AttacheServer",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "MultipartKit", package: "multipart-kit"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Attache", "AttacheServer",
                .product(name: "MultipartKit", package: "multipart-kit"),
            ],
            swiftSettings: swiftSettings),
    ]
)
