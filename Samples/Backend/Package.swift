// swift-tools-version:6.1
// A backend that uses more than the Attache library: the journaled batch (AttacheBatch, with GRDB and
// SQLite) and a Hummingbird gateway (SwiftNIO). Built and run by the test suite
// (Tests/IntegrationTests/ExamplePackageTests.swift) so that the README stays true. Samples/Examples
// shows the `Attache` library alone.
import PackageDescription

let package = Package(
    name: "AttacheBackend",
    platforms: [.macOS(.v15)],
    dependencies: [
        // In your package: the path of your clone of Attache (or its git URL), with the traits of the
        // products you use, here `traits: ["Batch"]` for AttacheBatch (Package.swift of Attache lists
        // them). This one takes Attache's default traits (all of them), the set Attache's own build has:
        // the test suite builds it in Attache's build folder, where any other set of traits would compile
        // Attache's modules again with other flags.
        .package(name: "Attache", path: "../.."),
        // Without Hummingbird's default ConfigurationSupport trait, as Attache's own server takes it:
        // nothing here reads swift-configuration, and with the same traits on both sides Hummingbird is
        // compiled once for this package and Attache (a package's traits are the union of what its
        // dependents ask for; a different set compiles it again with other flags).
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0", traits: ["FullFoundation"]),
    ],
    targets: [
        // Many files as one journaled batch: bounded concurrency, a SQLite journal, each file once.
        .executableTarget(
            name: "send-batch",
            dependencies: [
                .product(name: "Attache", package: "Attache"),
                .product(name: "AttacheBatch", package: "Attache"),
            ]),
        // A Hummingbird gateway that streams a client's upload through the pipeline, with the client's
        // token forwarded per send, and its telemetry exported as the attache executable exports it.
        .executableTarget(
            name: "gateway",
            dependencies: [
                .product(name: "Attache", package: "Attache"),
                .product(name: "AttacheMetricsExport", package: "Attache"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]),
    ]
)
