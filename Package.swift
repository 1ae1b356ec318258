// swift-tools-version:6.0
import PackageDescription

// `Scripts/test.sh --sanitize address|thread` sets ATTACHE_SANITIZE: the sanitizer runtimes need the dynamic
// loader and cannot be linked into a fully static executable, so that build links `attache` dynamically.
let sanitizing = Context.environment["ATTACHE_SANITIZE"] != nil

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Attache",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Attache", targets: ["Attache", "AttacheBatch"]),
        .library(name: "AttacheCore", targets: ["AttacheCore"]),
        .library(name: "AttacheServer", targets: ["AttacheServer"]),
        // The shared PostgreSQL work queue (scale-out): its own product, so that a backend embedding the
        // pipeline does not link PostgresNIO unless it runs queue workers.
        .library(name: "AttacheQueue", targets: ["AttacheQueue"]),
        .executable(name: "attache", targets: ["attache"]),
        .executable(name: "attache-transfer", targets: ["attache-transfer"]),
        .executable(name: "attache-pipeline", targets: ["attache-pipeline"]),
        .executable(name: "attache-server", targets: ["attache-server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0"),
        .package(url: "https://github.com/vapor/multipart-kit.git", from: "4.5.0"),
        // HTTPResponsePart, for the reference server's `104 Upload Resumption Supported` interim head
        // (already in the graph through Hummingbird).
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.0.0"),
        // The config file's parser (TOML 1.0, toml++ underneath); attache-pipeline only.
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
        // `swift package generate-documentation` (Scripts/docs.sh): the DocC catalog in Sources/Attache.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
        // The scale-out queue's database client (AttacheQueue); attache-pipeline only, never `attache` or
        // `attache-transfer`.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.21.0"),
    ],
    targets: [
        // C libraries: a module map and a shim header each, nothing else.
        // libcurl is loaded with dlopen on first use (Sources/CCurl/CurlLoader.c), not linked: commands
        // that never upload then skip mapping it and its ~30 dependencies at every start. The headers
        // still come from libcurl4-openssl-dev; at run time only libcurl.so.4 is needed.
        .target(name: "CCurl", publicHeadersPath: "."),
        // The codecs (TurboJPEG, libwebp, libpng) are linked from their static archives by AttacheCore
        // below, hence no pkg-config and no `link` in their module maps: every executable then starts
        // without loading three shared libraries (docs/BENCHMARKS.md, requests).
        .systemLibrary(
            name: "CTurboJPEG",
            providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(
            name: "CWebP",
            providers: [.apt(["libwebp-dev"])]),
        // Linked statically by the Attache target below, so no `link` line and no pkg-config
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
        // libheif (HEIC/HEIF/AVIF photos), loaded with dlopen on first use like libcurl: it maps libde265,
        // libx265, libaom and dav1d, which no upload should pay for at start-up. Headers from libheif-dev.
        .target(name: "CHEIF"),
        // The `attache` front's dispatch table, and its hand-over to a sibling executable before the Swift
        // runtime starts (a constructor); linked by `attache` only.
        .target(name: "CFront"),
        // Our own vectorised base64 encoder (AVX2 with a runtime check; Swift's scalar code otherwise).
        .target(name: "CBase64"),
        // The content guard's fingerprint with AES rounds (AES-NI with a runtime check; Swift's
        // multiply lanes otherwise): a second read of a large file costs little more than the read.
        .target(name: "CFingerprint"),
        // libjpeg's own API (TurboJPEG 2.x does not expose it) to decode a JPEG's raw Y/Cb/Cr rows a few at
        // a time, so the Transform stage never holds the whole decoded planes. libjpeg's error handler
        // must not return, hence C with setjmp around each call. Linked from the static archive like
        // libcrypto: no extra shared library to load at every start of every command.
        .target(name: "CJPEGStream", linkerSettings: [.linkedLibrary(":libjpeg.a")]),
        // libpng's row API, for the same reason: a PNG is decoded a row at a time into the resampler
        // (the simplified API CPNG wraps only decodes whole pictures), and libpng's errors longjmp.
        // libdeflate (from its static archive, like libjpeg) inflates a photo's image data in one call
        // at twice zlib's speed when it fits the whole-image limit; libpng's rows do the rest.
        .target(
            name: "CPNGStream",
            linkerSettings: [.linkedLibrary(":libpng16.a"), .linkedLibrary(":libdeflate.a"), .linkedLibrary("z")]),

        // Detection, image recompression, sealing, base64 and the shared error/source types: everything
        // here uses the C library, the codecs and OpenSSL only, never Foundation, so the `attache` front
        // executable that runs `detect`, `recompress`, `encrypt` and `decrypt` starts in a fraction of
        // the time and memory the full tool needs.
        .target(
            name: "AttacheCore",
            dependencies: [
                "COpenSSL", "CBase64", "CFingerprint", "CLibc", "CTurboJPEG", "CWebP", "CPNG", "CJPEGStream", "CPNGStream", "CZlib",
                "CProcess",
            ],
            swiftSettings: swiftSettings,
            // `-lcrypto`: the fully static `attache` gets libcrypto's static archive (libssl-dev ships
            // it), where the shared library cost ~1 ms of relocations and symbol lookups at every start
            // and ~2 MB of RSS. The other executables load libcurl, which loads the shared libcrypto
            // and initialises it; a second, static copy initialised on its own cost `attache upload`
            // ~1.5 MB of resident pages (docs/BENCHMARKS.md, nginx-upload), so they use the shared one.
            // The codecs come from their static archives in every executable (position-independent in
            // Debian's packages, so PIE builds link them too).
            linkerSettings: [
                .linkedLibrary("crypto"), .linkedLibrary(":libwebp.a"), .linkedLibrary(":libturbojpeg.a"),
                // zlib after libpng's archive, which needs it.
                .linkedLibrary(":libpng16.a"), .linkedLibrary("z"),
            ]),
        // The pipeline, the transport, uploads and downloads. FoundationEssentials only, never Foundation
        // (whose CoreFoundation and ICU cost ~10 MB of resident pages in every process that links them):
        // `attache-transfer`, which runs uploads and downloads, stays small (docs/BENCHMARKS.md).
        .target(
            name: "Attache",
            dependencies: [
                "AttacheCore", "CCurl", "COpenSSL", "CHEIF",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        // `attache batch`'s engine: the SQLite journal (GRDB, which needs Foundation) and the batch runner.
        // Part of the `Attache` library product; `import AttacheBatch` to use it.
        .target(
            name: "AttacheBatch",
            dependencies: [
                "Attache", "AttacheCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings),
        // The scale-out work queue: many workers on many machines take files from one PostgreSQL table
        // (`FOR UPDATE SKIP LOCKED`, leases, fencing tokens). Foundation is allowed here (PostgresNIO
        // needs it anyway); reuses the batch's file walker and identity.
        .target(
            name: "AttacheQueue",
            dependencies: [
                "Attache", "AttacheCore", "AttacheBatch",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings),
        // `detect`, `recompress`, `encrypt` and `decrypt` with ArgumentParser, shared by both executables.
        .target(
            name: "AttacheCommands",
            dependencies: [
                "AttacheCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings),
        // The `attache` executable users run: detect, recompress, encrypt and decrypt in a fully static
        // binary without Foundation (< 1 ms and a few MB to start); every other command line is handed to
        // `attache-pipeline` with execv (Sources/attache/AttacheFront.swift). Static linking is what makes
        // it start fast: no dynamic loader work for libstdc++ and the C libraries.
        .executableTarget(
            name: "attache",
            dependencies: [
                "AttacheCommands", "AttacheCore", "CFront", "CLibc",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings,
            linkerSettings: sanitizing
                ? [.linkedLibrary("z"), .linkedLibrary("m")]
                : [
                    .unsafeFlags(["-static-executable"]),
                    // ArgumentParser's FoundationEssentials needs these two archives, which SwiftPM leaves out of a
                    // static executable's link line; so are zlib (libpng's, and CZlib's for detection) and
                    // libm, which must follow libpng's archive. A target's own libraries come first on the
                    // link line and SwiftPM keeps only the first of each, so libpng's archive (AttacheCore's)
                    // is named here again, before zlib.
                    .linkedLibrary("_FoundationCollections"), .linkedLibrary("_FoundationCShims"),
                    .linkedLibrary(":libpng16.a"), .linkedLibrary("z"), .linkedLibrary("m"),
                ]),
        // The options and commands of the network half (upload, download), shared by `attache-transfer`
        // and `attache-pipeline`. FoundationEssentials only.
        .target(
            name: "AttacheTransferCommands",
            dependencies: [
                "Attache", "AttacheCommands", "AttacheCore", "CLibc",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        // The config file of endpoints (TOML through TOMLKit, which imports Foundation): linked by
        // `attache-pipeline` only; `attache-transfer` hands command lines naming an endpoint to it.
        .target(
            name: "AttacheEndpointConfig",
            dependencies: [
                "Attache", "AttacheTransferCommands",
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            swiftSettings: swiftSettings),
        // `upload` and `download`, which the `attache` front hands over to: no Foundation, no SQLite, so a
        // transfer's process is libcurl's libraries plus a few MB (docs/BENCHMARKS.md, nginx-upload).
        // Installed next to `attache`.
        .executableTarget(
            name: "attache-transfer",
            dependencies: [
                "Attache", "AttacheCore", "AttacheTransferCommands", "AttacheCommands", "CLibc",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            exclude: ["StaticLibstdcxx"],
            swiftSettings: swiftSettings,
            // Release: libstdc++ from its static archive, through the linker script in StaticLibstdcxx
            // (the static Swift stdlib names -lstdc++ itself; a search path of ours ahead of the
            // toolchain's is the one way to redirect it): ~1.5–2 ms less start-up per run
            // (docs/BENCHMARKS.md, requests).
            linkerSettings: [
                .unsafeFlags(
                    ["-Xclang-linker", "-no-pie", "-Xlinker", "--no-export-dynamic",
                     "-Xclang-linker", "-L\(Context.packageDirectory)/Sources/attache-transfer/StaticLibstdcxx"],
                    .when(configuration: .release))
            ]),
        // The whole tool (batch, and everything the two above run), installed next to `attache`.
        .executableTarget(
            name: "attache-pipeline",
            dependencies: [
                "Attache", "AttacheBatch", "AttacheQueue", "AttacheCommands", "AttacheTransferCommands",
                "AttacheEndpointConfig", "CLibc",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings,
            // Start-up time (docs/BENCHMARKS.md): a position-dependent executable needs none of the
            // ~84,000 relative relocations a PIE of this size gets at every start (each one dirties
            // a page of the static Swift runtime and Foundation), and not exporting its symbols (which
            // the static Swift stdlib's link arguments turn on) keeps them out of every symbol lookup.
            // The cost is that the executable's own image is not address-randomised; the shared
            // libraries, heap and stacks still are. Release only: debug builds stay PIE for debuggers
            // and sanitizers.
            linkerSettings: [
                .unsafeFlags(
                    ["-Xclang-linker", "-no-pie", "-Xlinker", "--no-export-dynamic"],
                    .when(configuration: .release))
            ]),
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
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "MultipartKit", package: "multipart-kit"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // Do not call FoundationEssentials' generic `Data.init<S: Sequence>` in this module: Swift
            // 6.3.1's optimizer crashes deserializing it in release builds ("reference to top-level
            // declaration 'memset' broken by a context change").
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "attache-server",
            dependencies: [
                "AttacheServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings),

        // What the test targets share: scratch folders, ports, child processes (the reference server,
        // receivers, PostgreSQL), the scripted transport and hashing. A plain target, not a test target,
        // so that the three test targets can import it; `package` access keeps it out of every product.
        .target(
            name: "AttacheTestSupport",
            dependencies: [
                "Attache", "AttacheCore", "AttacheServer",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/AttacheTestSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]),

        .testTarget(
            name: "AttacheTests",
            dependencies: [
                "AttacheTestSupport",
                "Attache", "AttacheBatch", "AttacheCore", "AttacheFuzzTargets",
                .product(name: "MultipartKit", package: "multipart-kit"),
            ],
            swiftSettings: swiftSettings),
        // The command-line tool's own logic (the config file of endpoints), tested without a process.
        .testTarget(
            name: "AttachePipelineTests",
            dependencies: ["AttacheEndpointConfig", "AttacheTransferCommands", "Attache"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "AttacheServerTests",
            dependencies: [
                "AttacheTestSupport",
                "AttacheServer",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "MultipartKit", package: "multipart-kit"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "AttacheTestSupport",
                "Attache", "AttacheBatch", "AttacheQueue", "AttacheServer", "AttacheCommands",
                .product(name: "MultipartKit", package: "multipart-kit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            // Programs the tests start from the source tree: other receivers (Werkzeug, Python's email, PHP)
            // and a proxy that loses answers.
            exclude: ["Receivers", "Tools"],
            swiftSettings: swiftSettings),
    ]
)
