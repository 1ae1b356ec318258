// swift-tools-version:6.1
// A package that uses the Attache library alone, the way the README's "Use it in your package" section
// says, built and run by the test suite (Tests/IntegrationTests/ExamplePackageTests.swift) so that the
// README stays true. The test also checks what it brings in: no GRDB, PostgresNIO or SwiftNIO among its
// dependencies, and neither GRDB nor full Foundation (libFoundation.so) in its program.
import PackageDescription

let package = Package(
    name: "AttacheExamples",
    dependencies: [
        // In your package: the path of your clone of Attache (or its git URL). `name:` makes the
        // package's name "Attache" whatever the folder is called. `traits: []`: none of the traits that
        // bring in the other products' dependencies (GRDB, PostgresNIO, Hummingbird, the command-line
        // tools'), so that they are neither fetched nor built; the `Attache` product needs none.
        .package(name: "Attache", path: "../..", traits: []),
    ],
    targets: [
        // Files from a path, from memory and from an AsyncSequence; download and decrypt from a receipt.
        .executableTarget(
            name: "send-attachments",
            dependencies: [.product(name: "Attache", package: "Attache")]),
    ]
)
