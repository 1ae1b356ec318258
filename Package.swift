// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

// Scripts/test.sh builds without an index store (`--disable-index-store`): indexing every module while
// building is about a fifth of a cold build, and the only reader of that index in a test run is
// SwiftPM's test discovery on Linux, which reads the units of the test targets alone. The script sets
// ATTACHE_TEST_INDEX_STORE to SwiftPM's index path, and the test targets (never built for a package
// that depends on this one) write their units there. Unset, as in any other build, nothing changes.
let testTargetSettings: [SwiftSetting] = swiftSettings
    + (Context.environment["ATTACHE_TEST_INDEX_STORE"].map { [.unsafeFlags(["-index-store-path", $0])] } ?? [])

// The documentation check (Scripts/docs.sh) reads the public symbol graphs of the three library modules.
// When Scripts/test.sh sets ATTACHE_SYMBOL_GRAPH_DIR, those modules write them while they compile (a
// small part of the job that writes their interface anyway), and docs.sh needs no second SwiftPM
// command to extract them (about 30 s of a run: plugins, planning, and graphs of every dependency).
// Unset, as in any other build, nothing changes, and docs.sh extracts the graphs itself.
let librarySettings: [SwiftSetting] = swiftSettings
    + (Context.environment["ATTACHE_SYMBOL_GRAPH_DIR"].map {
        [.unsafeFlags(["-emit-symbol-graph", "-emit-symbol-graph-dir", $0, "-symbol-graph-minimum-access-level", "public"])]
    } ?? [])

// The package dependencies each product brings in, by trait. SwiftPM resolves the dependencies of every
// target of a package it depends on, used or not (not those of its test targets); only a dependency
// whose every use is off under the enabled traits is left out of the graph, never fetched nor built.
// All traits are on by default, so a plain `swift build` here, or a package that names no traits, gets
// everything. A package that wants the `Attache` library alone asks for none (`traits: []`) and resolves
// swift-log, swift-metrics and swift-distributed-tracing only: no GRDB, no PostgresNIO, no SwiftNIO
// (docs/ARCHITECTURE.md, "Products and what they bring in"; Samples/Examples does so).
let batch: Set<String> = ["Batch"]
let queue: Set<String> = ["Queue"]
let server: Set<String> = ["Server"]
let tools: Set<String> = ["Tools"]

// Linux only: no `platforms:` line. The code calls Linux directly (glibc, epoll, /proc, statfs and
// ctime for the content guard, fork + setrlimit for the media helpers); README "Platforms" says why.
let package = Package(
    name: "Attache",
    // Each product with a dependency of its own is a product of its own, so that a backend embedding
    // the pipeline links no database and no full Foundation unless it uses what needs them.
    products: [
        // The pipeline, the client and the transport. AttacheCore has no product of its own (no
        // dependency of its own): `import Attache` re-exports it.
        .library(name: "Attache", targets: ["Attache"]),
        // The journaled batch: GRDB, SQLite and Foundation (trait Batch).
        .library(name: "AttacheBatch", targets: ["AttacheBatch"]),
        // The shared PostgreSQL work queue (scale-out): PostgresNIO and SwiftNIO (trait Queue).
        .library(name: "AttacheQueue", targets: ["AttacheQueue"]),
        // The reference server: Hummingbird and SwiftNIO (trait Server).
        .library(name: "AttacheServer", targets: ["AttacheServer"]),
        // Telemetry export for an embedding backend, as the executable makes it (`TelemetryExport`):
        // Prometheus, swift-otel's metrics, Attache's OTLP tracer, SwiftNIO (trait Tools).
        .library(name: "AttacheMetricsExport", targets: ["AttacheMetricsExport"]),
        // The two programs need every trait (Tools turns on the other three).
        .executable(name: "attache", targets: ["attache"]),
        .executable(name: "attache-server", targets: ["attache-server"]),
    ],
    traits: [
        .trait(name: "Batch", description: "The AttacheBatch library: the journaled batch (GRDB, SQLite)."),
        .trait(name: "Queue", description: "The AttacheQueue library: the shared PostgreSQL work queue (PostgresNIO)."),
        .trait(name: "Server", description: "The AttacheServer library: the reference server (Hummingbird)."),
        .trait(
            name: "Tools",
            description: "The attache and attache-server programs (ArgumentParser, TOMLKit, Prometheus and OTLP export).",
            enabledTraits: ["Batch", "Queue", "Server"]),
        .default(enabledTraits: ["Batch", "Queue", "Server", "Tools"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        // Without its default ConfigurationSupport trait: nothing here reads swift-configuration, whose
        // modules would otherwise be compiled by every build.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0", traits: ["FullFoundation"]),
        // HTTPResponsePart, for the reference server's `104 Upload Resumption Supported` interim head
        // (already in the graph through Hummingbird).
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.0.0"),
        // The config file's parser (TOML 1.0, toml++ underneath); the command-line tool only.
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
        // The scale-out queue's database client (AttacheQueue).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.21.0"),
        // Metrics and spans through the standard APIs (both already in the graph through Hummingbird):
        // the library forces no backend; the executables choose one.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.2.0"),
        // Prometheus text exposition for `--metrics-listen` (AttacheMetricsExport: the executables, and the product).
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.0.0"),
        // The `/metrics` listener (already in the graph through Hummingbird and PostgresNIO).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.65.0"),
        // `--otlp-endpoint`: spans and metrics exported over OTLP/HTTP (protobuf); the executables only
        // (AttacheMetricsExport, for metrics). The HTTP trait alone: the gRPC exporter would pull in grpc-swift.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // Runs the OTLP exporters beside the command and shuts them down (flushing) at its end.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.4.1"),
    ],
    targets: [
        // C libraries: a module map and a shim header each, nothing else. Every C library is linked as
        // the shared library Debian ships (its -dev package brings the .so link and the runtime package).
        // libcurl is the exception, opened with dlopen on first use (Sources/CCurl/CurlLoader.c): linked,
        // it and its ~30 dependencies (GnuTLS, Kerberos, LDAP, nghttp2, ...) are mapped and relocated at
        // every start, for commands that never upload too. Measured with the debug build on a busy
        // two-core machine, 200 runs of each alternating, medians of the process's CPU time, libcurl
        // mapped at start as linking would (LD_PRELOAD=libcurl.so.4) or not: `attache --version` 37.0
        // against 28.9 ms, `attache detect` on a small file 42.5 against 34.4 ms. 8 ms, well over 2 ms,
        // so it stays opened on demand. The headers come from libcurl4-openssl-dev; at run time only
        // libcurl.so.4 is needed.
        .target(name: "CCurl", publicHeadersPath: "."),
        // The codecs: TurboJPEG, libwebp and libpng (their module maps name the libraries).
        .systemLibrary(
            name: "CTurboJPEG",
            providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(
            name: "CWebP",
            providers: [.apt(["libwebp-dev"])]),
        // libcrypto is linked by the AttacheCore target below, so no `link` line and no pkg-config
        // (whose flags would add libssl too, which nothing calls).
        .systemLibrary(
            name: "COpenSSL",
            providers: [.apt(["libssl-dev"])]),
        // libc's <malloc.h> (mallopt), which Swift's Glibc module leaves out.
        .systemLibrary(name: "CLibc"),
        .systemLibrary(
            name: "CPNG",
            providers: [.apt(["libpng-dev"])]),
        // zlib's inflate, for the gzip heads detection reads (TGS stickers); libpng links zlib anyway.
        .systemLibrary(
            name: "CZlib",
            providers: [.apt(["zlib1g-dev"])]),
        // fork + setrlimit + exec for the media helpers (ffmpeg, ffprobe): the steps between fork and
        // exec that posix_spawn cannot do and Swift cannot do safely.
        .target(name: "CProcess"),
        // libheif (HEIC/HEIF/AVIF photos), opened with dlopen on first use like libcurl: linked, it maps
        // libde265, libx265, libaom and dav1d at every start, 6 ms of CPU (measured as for libcurl:
        // `attache --version` 35.3 against 28.9 ms, `attache detect` 40.0 against 34.4 ms). And a machine
        // without libheif still runs everything but the HEIF decode (by default such a photo is then sent
        // as it is, and the receipt says why). Headers from libheif-dev.
        .target(name: "CHEIF"),
        // Our own vectorised base64 encoder (AVX2 with a runtime check; Swift's scalar code otherwise).
        .target(name: "CBase64"),
        // The content guard's fingerprint with AES rounds (AES-NI with a runtime check; Swift's
        // multiply lanes otherwise): a second read of a large file costs little more than the read.
        .target(name: "CFingerprint"),
        // libjpeg's own API (TurboJPEG 2.x does not expose it) to decode a JPEG's raw Y/Cb/Cr rows a few at
        // a time, so the Transform stage never holds the whole decoded planes. libjpeg's error handler
        // must not return, hence C with setjmp around each call.
        .target(name: "CJPEGStream", linkerSettings: [.linkedLibrary("jpeg")]),
        // libpng's row API, for the same reason: a PNG is decoded a row at a time into the resampler
        // (the simplified API CPNG wraps only decodes whole pictures), and libpng's errors longjmp.
        // A plain 8-bit PNG skips libpng's rows: zlib inflates a band of rows at a time and libdeflate's
        // CRC-32 (carry-less multiply) checks the chunks; libpng's rows do the rest.
        .target(
            name: "CPNGStream",
            linkerSettings: [.linkedLibrary("png16"), .linkedLibrary("deflate"), .linkedLibrary("z")]),

        // Detection, image recompression, sealing, base64 and the shared error/source types: everything
        // here uses the C library, the codecs and OpenSSL only, never Foundation.
        .target(
            name: "AttacheCore",
            dependencies: [
                "COpenSSL", "CBase64", "CFingerprint", "CLibc", "CTurboJPEG", "CWebP", "CPNG", "CJPEGStream", "CPNGStream", "CZlib",
                "CProcess",
            ],
            swiftSettings: librarySettings,
            // libcrypto is the shared library libcurl links too (one copy, initialised once). The codecs'
            // module maps name their libraries as well, but a whole-module build split over threads (as
            // Scripts/test.sh builds) does not carry those autolink entries to the linker: named here.
            linkerSettings: [
                .linkedLibrary("crypto"), .linkedLibrary("webp"), .linkedLibrary("turbojpeg"), .linkedLibrary("png16"),
            ]),
        // The pipeline, the transport, uploads and downloads.
        .target(
            name: "Attache",
            dependencies: [
                "AttacheCore", "CCurl", "COpenSSL", "CHEIF", "CLibc",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: librarySettings),
        // `attache batch`'s engine: the SQLite journal (GRDB, which needs Foundation) and the batch runner.
        // A product of its own; `import AttacheBatch` to use it.
        .target(
            name: "AttacheBatch",
            dependencies: [
                "Attache", "AttacheCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift", condition: .when(traits: batch)),
            ],
            swiftSettings: librarySettings),
        // The scale-out work queue: many workers on many machines take files from one PostgreSQL table
        // (`FOR UPDATE SKIP LOCKED`, leases, fencing tokens). Foundation is allowed here (PostgresNIO
        // needs it anyway); walks folders with AttacheCore's file walker, as the batch does.
        .target(
            name: "AttacheQueue",
            dependencies: [
                "Attache", "AttacheCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: queue)),
            ],
            swiftSettings: swiftSettings),
        // The `attache` command-line tool: one root command (RootCommand) and every subcommand, with
        // their options, the config file of endpoints and the exit statuses.
        .target(
            name: "AttacheCLI",
            dependencies: [
                "Attache", "AttacheBatch", "AttacheQueue", "AttacheCore", "AttacheMetricsExport",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: tools)),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "TOMLKit", package: "TOMLKit", condition: .when(traits: tools)),
            ],
            swiftSettings: swiftSettings),
        // `--metrics-listen` and `--otlp-endpoint`: a Prometheus registry served on `/metrics`, swift-otel's
        // metrics and Attache's own OTLP tracer, bootstrapped into swift-metrics and swift-distributed-tracing.
        // Linked by the two executables (through AttacheCLI and attache-server) and by a backend that asks
        // for the AttacheMetricsExport product (`TelemetryExport`); `import Attache` never links it.
        .target(
            name: "AttacheMetricsExport",
            dependencies: [
                "Attache", "AttacheCore", "CZlib",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: tools)),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: tools)),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: tools)),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: tools)),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: tools)),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: tools)),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: tools)),
            ],
            swiftSettings: swiftSettings),
        // The `attache` executable: a `main` that calls AttacheCLI.
        .executableTarget(
            name: "attache",
            dependencies: ["AttacheCLI", "CLibc"],
            swiftSettings: swiftSettings),
        // The fuzz targets: one function per parser that reads hostile input (detection, unsealing, the
        // server's answers, image decoders). Shared by the fuzzer and by the test that replays the corpora
        // under Tests/FuzzCorpus.
        .target(
            name: "AttacheFuzzTargets",
            dependencies: ["Attache", "AttacheCore"],
            swiftSettings: swiftSettings),
        // libFuzzer's driver over those targets (Scripts/fuzz.sh); a plain build replays inputs given as files.
        .executableTarget(
            name: "attache-fuzz",
            dependencies: ["AttacheFuzzTargets", "Attache"],
            swiftSettings: swiftSettings),
        .target(
            name: "AttacheServer",
            dependencies: [
                "Attache", "COpenSSL",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: server)),
                .product(name: "HummingbirdTLS", package: "hummingbird", condition: .when(traits: server)),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras", condition: .when(traits: server)),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            // Do not call FoundationEssentials' generic `Data.init<S: Sequence>` in this module: Swift
            // 6.3.1's optimizer crashes deserializing it in release builds ("reference to top-level
            // declaration 'memset' broken by a context change").
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "attache-server",
            dependencies: [
                "AttacheServer", "Attache", "AttacheMetricsExport",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: tools)),
            ],
            swiftSettings: swiftSettings),

        // What the test targets share: scratch folders, ports, child processes (the reference server,
        // receivers, PostgreSQL), the scripted transport and hashing. A plain target, not a test target,
        // so that the three test targets can import it; `package` access keeps it out of every product.
        .target(
            name: "AttacheTestSupport",
            dependencies: [
                "Attache", "AttacheCLI", "AttacheCore", "AttacheServer",
                // The product's spawner and close-on-exec pipes, for the tests' one child runner (ChildProcess.swift).
                "CProcess",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/AttacheTestSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]),

        .testTarget(
            name: "AttacheTests",
            dependencies: [
                "AttacheTestSupport",
                "Attache", "AttacheBatch", "AttacheCore", "AttacheFuzzTargets",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: testTargetSettings),
        // The command-line tool's own logic (options, the config file of endpoints), tested in-process.
        .testTarget(
            name: "AttacheCLITests",
            dependencies: [
                "AttacheCLI", "AttacheMetricsExport", "Attache", "AttacheCore", "AttacheTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: testTargetSettings),
        .testTarget(
            name: "AttacheServerTests",
            dependencies: [
                "AttacheTestSupport",
                "AttacheServer",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ],
            swiftSettings: testTargetSettings),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "AttacheTestSupport",
                "Attache", "AttacheBatch", "AttacheQueue", "AttacheServer", "AttacheCLI",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            // Programs the tests start from the source tree: other receivers (Werkzeug, Python's email, PHP)
            // and a proxy that loses answers.
            exclude: ["Receivers", "Tools"],
            swiftSettings: testTargetSettings),
    ]
)
