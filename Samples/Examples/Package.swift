// swift-tools-version:6.1
// A package that uses Attache the way the README's "Use it in your package" section says, built and
// run by the test suite (Tests/IntegrationTests/ExamplePackageTests.swift) so that the README stays true.
import PackageDescription

let package = Package(
    name: "AttacheExamples",
    platforms: [.macOS(.v15)],
    dependencies: [
        // In your package: the path of your clone of Attache (or its git URL). `name:` makes the
        // package's name "Attache" whatever the folder is called.
        .package(name: "Attache", path: "../.."),
        // Without Hummingbird's default ConfigurationSupport trait, as Attache's own server takes it:
        // nothing here reads swift-configuration, and with the same traits on both sides Hummingbird is
        // compiled once for this package and Attache (a package's traits are the union of what its
        // dependents ask for; a different set compiles it again with other flags).
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0", traits: ["FullFoundation"]),
    ],
    targets: [
        // Files from a path, from memory and from an AsyncSequence; the journaled batch; download and
        // decrypt from a receipt.
        .executableTarget(
            name: "send-attachments",
            dependencies: [.product(name: "Attache", package: "Attache")]),
        // A Hummingbird gateway that streams a client's upload through the pipeline, with the client's
        // token forwarded per send.
        .executableTarget(
            name: "gateway",
            dependencies: [
                .product(name: "Attache", package: "Attache"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]),
    ]
)
